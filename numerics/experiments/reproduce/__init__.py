"""``idepth reproduce``: the paper's figures and tables, and a report comparing paper and package.

:func:`reproduce` plans the runs (``plan``), trains them into one resumable store,
then fits, plots (``figures``), tabulates (``tables``), runs the regime study and
the consistency check (:mod:`numerics.experiments.study`) and writes the report.

Output layout::

    OUT/REPORT.md                  the report (written atomically, last)
    OUT/figures/<id>.png, .pdf     fig1, fig3a, ..., fig14
    OUT/tables/<id>.md, .json      table1 .. table5
    OUT/store/results.sqlite       every training run (numerics.experiments.store)
    OUT/cache/*.json               oracle bounds and linear floors (Monte Carlo, cached)
    OUT/study/                     the regime study (numerics.experiments.study)
"""

from __future__ import annotations

from numerics.experiments import lazy_exports

#: where each public name lives; a submodule is imported only when one of its names is used, so that a renderer
#: (``reproduce.report``, ``reproduce.docs_pages``, ``reproduce.figures``) loads neither the driver nor the sweep
_HOMES = {
    "ARTEFACTS": ".artefacts", "parse_only": ".artefacts", "Schedule": ".plan", "make_plan": ".plan",
    "SCALES": ".scales", "Scale": ".scales", "get_scale": ".scales",
    "ReproductionResult": ".run", "reproduce": ".run", "command_line": ".run",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)

#: every public name, each from its home (:data:`_HOMES`)
__all__ = list(_HOMES)
