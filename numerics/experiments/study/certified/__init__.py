"""The certified study: the best loss each depth of the controlled softmax model reaches, with certificates.

Its plan, cells and candidates are :mod:`numerics.experiments.study.plan`'s. Split by job: the one runner and driver are
:mod:`numerics.experiments.study.run`'s (a cell in lockstep; depths in waves through the store), ``cells`` (finished cells as files), ``table`` (the CSV), ``statistics`` (certificates,
each setting's summary), ``verdict`` (the depths a verdict rests on: doubling checks, long-cap pairs, the crossover; fit-free contrasts, the gain law's
variants, the verdict rule), ``contrasts``
(training recipes beside the envelope), ``targets`` (what the study set out to reach, measured, and its
CPU time), ``revised`` (what the U_L starts add: the L = 2 step at population scale, the envelope against
U_L, the long caps, coverage and cost), ``facts`` (the computing pass: everything the page shows, measured once),
``page`` (the text, rendering only), ``figures`` and ``formatting`` (how both write numbers).
"""

from numerics.experiments import lazy_exports

#: where each public name lives; a submodule is imported only when one of its names is used, so that the page
#: and the figures (rendering only) load no training code (``tests/test_render_imports.py``)
_HOMES = dict.fromkeys(("SUMMARY_COLUMNS", "CellResult", "nested_params", "oracle_allocation", "run_cell",
                        "run_plan"), "..run")

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)


#: every public name, each from its home (:data:`_HOMES`)
__all__ = list(_HOMES)
