"""The converged study: the controlled softmax model trained to convergence at the inferred sizes.

The question: does the paper's nonlinear model show ``R_L ≈ L0 + c/L`` *at convergence*, at
the sizes its plateaus imply (``idepth study sizes``: d = 16 strongly, P in 32-96; the study
uses :data:`STUDY_SIZES`)? Every choice the paper leaves open is a field of
:class:`ConvergedPlan` (documented there). The rules:

* **Each run converges on its own.** A run of cap ``S`` steps (warm-up then cosine decay,
  no early stop) counts as *converged* when its held-out loss changed by less than its own
  standard error over the last quarter of training: ``|R(3S/4) − R(S)| < SE(R(S))``
  (:func:`numerics.experiments.criteria.is_converged`). A run that is not converged is
  trained again from scratch with the cap doubled (a new run in the store), up to
  ``max_doublings`` times; the CSV records the steps and the flag of the last attempt, never
  a run dropped for being inconvenient.
* **Common held-out contexts.** All runs of one spectrum (every depth, seed, width and
  norm) are evaluated on one held-out set (``eval_seed`` from the spectrum,
  :func:`eval_seed_of`), so ``R_1 − R_L`` of one seed is a paired difference over the same
  contexts; its SE comes from the per-context differences (and, over seeds, from the
  seed-to-seed spread, whichever is larger).
* **Next to what softmax heads can express.** ``B_1``, ``B_L`` and ``B_∞`` over the model's
  own pre-norm similarity at its width (:mod:`theory.softmax_bounds`, independent draws,
  cached by :mod:`numerics.experiments.bounds`).

Every run goes through the one sweep runner and the resumable store, so an interrupted
study (Ctrl-C, SIGKILL, a session that ends) continues where it stopped:
``idepth study converged --store DIR``.

The modules, one job each: :mod:`~numerics.experiments.study.converged.plan` (what is trained), :mod:`~numerics.experiments.study.converged.run` (training, reading
the store back, the bounds, the whole command), :mod:`~numerics.experiments.study.converged.table` (the typed row and the only
CSV reader and writer), :mod:`~numerics.experiments.study.converged.statistics` (means, paired gains, the findings of each depth
curve) and :mod:`~numerics.experiments.study.converged.page` (the Markdown page and the figures, from the CSV alone with
``--report-only``).
"""

from __future__ import annotations

from theory.fitting import gap_fit

from ...criteria import is_converged, last_quarter_change, training_failures
from .page import converged_markdown, draw_decomposition_figure, draw_study_figure
from .plan import EXTRA_SPECTRA, STUDY_SIZES, TABLE1_SPECTRA, TABLE4_SPECTRA, ConvergedPlan, RunSpec, eval_seed_of
from .run import collect_results, run_converged, run_converged_study, study_bounds, study_rows
from .statistics import group_stats, paired_depth_gains
from .table import CSV_COLUMNS, StudyRow, provenance, read_study_csv, write_study_csv

__all__ = [
    "CSV_COLUMNS",
    "STUDY_SIZES",
    "TABLE1_SPECTRA",
    "TABLE4_SPECTRA",
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
    "run_converged_study",
    "study_rows",
    "write_study_csv",
]
