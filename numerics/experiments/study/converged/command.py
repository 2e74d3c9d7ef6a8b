"""``idepth study converged``: train the study and write its table
(:mod:`numerics.experiments.study.converged.run`), then its page (:mod:`numerics.experiments.study.converged.page`).

The two jobs do not cross: the run writes no page, the page trains nothing; this module calls one, then
the other, with the bounds (Monte Carlo, cached beside the table) between them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from ...execution import Execution, as_execution
from .page import write_converged_page
from .plan import ConvergedPlan
from .run import study_bounds, train_converged
from .table import CSV_NAME, read_provenance, read_study_csv

__all__ = ["run_converged"]


def run_converged(out_dir, *, plan: ConvergedPlan | None = None, execution: Execution | None = None,
                  report_only: bool = False, bound_contexts: int = 8192,
                  command: str = "idepth study converged",
                  only_spectra: Sequence[tuple] | None = None) -> tuple[list, str]:
    """The whole study: train (resumably) unless ``report_only``, then the bounds, then the page.

    ``out_dir`` receives ``converged-study.csv``, ``.provenance.json``, ``.bounds.json`` (read
    back by ``report_only``, which reads the CSV and trains nothing), ``.md`` and
    ``figures/``; the store and cache default to ``out_dir/store`` and ``out_dir/cache``.
    ``only_spectra``: :func:`~numerics.experiments.study.converged.run.train_converged`'s.
    Returns ``(rows, markdown)``.

    Notes
    -----
    No example: it trains (``tests/test_converged.py`` runs a tiny study and resumes it).
    """
    out = Path(out_dir)
    csv_path = out / CSV_NAME
    execution = as_execution(execution)
    execution = dataclasses.replace(execution, cache_dir=execution.cache_dir or out / "cache")
    if report_only:
        if not csv_path.is_file():
            raise FileNotFoundError(f"--report-only needs {csv_path}; run the study first")
        rows, prov = read_study_csv(csv_path), read_provenance(csv_path)
    else:
        rows, prov = train_converged(out, plan=plan, execution=execution, command=command, only_spectra=only_spectra)
    bounds = study_bounds(rows, n_contexts=bound_contexts, execution=execution,
                          stored=csv_path.with_suffix(".bounds.json"))
    return rows, write_converged_page(out, rows, bounds, prov)
