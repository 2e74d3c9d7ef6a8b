"""The converged study: the controlled softmax model trained to convergence at the inferred sizes.

Does the paper's nonlinear model show ``R_L ≈ L0 + c/L`` *at convergence*, at the sizes its
plateaus imply (``idepth study sizes``; :data:`theory.paper.INFERRED_SOFTMAX_SIZES`)? Every choice the paper leaves open
is a field of :class:`ConvergedPlan`. The rules:

* each run converges on its own: ``|R(3S/4) − R(S)| < SE(R(S))`` (:func:`is_converged`), else
  it is trained again from scratch with the cap doubled, up to ``max_doublings`` times; the
  CSV records the last attempt, never a run dropped for being inconvenient;
* all runs of one spectrum share one held-out set (:func:`eval_seed_of`), so ``R_1 − R_L`` of
  a seed is a paired difference over the same contexts;
* next to what softmax heads can express: ``B_1``, ``B_L``, ``B_∞``
  (:mod:`theory.softmax_bounds`).

Every run goes through the one sweep runner and the resumable store
(``idepth study converged --store DIR`` continues where it stopped). Modules, one job each:
``plan``, ``run`` (training, the store read back into the table, the bounds), ``table`` (the
only CSV reader and writer), ``statistics``, ``page`` (the page and figures, from the CSV
alone with ``--report-only``) and ``command`` (run, then page).
"""

from __future__ import annotations

from theory.fitting import gap_fit

from ...criteria import is_converged, last_quarter_change, training_failures
from .page import converged_markdown, draw_decomposition_figure, draw_study_figure
from .plan import EXTRA_SPECTRA, ConvergedPlan, RunSpec, eval_seed_of
from .command import run_converged
from .run import collect_results, run_converged_study, study_bounds, study_rows, train_converged
from .statistics import group_stats, paired_depth_gains
from .table import CSV_COLUMNS, StudyRow, provenance, read_study_csv, write_study_csv

__all__ = [
    "CSV_COLUMNS",
    "group_stats",
    "gap_fit",
    "training_failures",
    "draw_decomposition_figure",
    "EXTRA_SPECTRA",
    "ConvergedPlan",
    "RunSpec",
    "StudyRow",
    "converged_markdown",
    "eval_seed_of",
    "is_converged",
    "last_quarter_change",
    "paired_depth_gains",
    "read_study_csv",
    "run_converged",
    "run_converged_study",
    "study_rows",
    "train_converged",
    "write_study_csv",
]
