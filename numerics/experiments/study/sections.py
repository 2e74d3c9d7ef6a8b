"""``idepth study regime`` and the reproduction's study: the regime study, then the paper's plateaus against its bounds.

Two jobs: run the two sections in order on one store and one cache (:func:`run_study_sections`, which
writes no page), and write their pages (:func:`write_study_sections`, which trains nothing); the sections
themselves are :mod:`~numerics.experiments.study.regimes` and :mod:`~numerics.experiments.study.consistency`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..execution import Execution, as_execution
from .consistency import ConsistencyReport, paper_consistency
from .regimes import RegimeStudy, _scale, run_regime_study, write_regime_study

__all__ = ["run_study_sections", "write_study_sections"]


def run_study_sections(
    scale,
    out_dir,
    *,
    execution: Execution | None = None,
    consistency_sizes: dict | None = None,
) -> tuple[RegimeStudy, ConsistencyReport]:
    """The regime study and the consistency check of one study budget, sharing one store and one cache.

    What ``idepth reproduce`` and ``idepth study regime`` call before :func:`write_study_sections`:
    every bound uses the budget's ``bound_contexts`` and one cache (default ``out_dir/cache``), so a
    bound in both sections has one value. ``consistency_sizes`` holds ``d`` and ``P_values`` of
    :func:`paper_consistency`.

    Notes
    -----
    No example: it trains the study's runs (minutes); see ``idepth study regime --scale smoke``.
    """
    s = _scale(scale)
    execution = as_execution(execution)
    execution = dataclasses.replace(execution, cache_dir=execution.cache_dir or Path(out_dir) / "cache")
    result = run_regime_study(s, out_dir, execution=execution)
    # its bounds (the d = 128 ones cost most) are computed by the pool, like the study's
    report = paper_consistency(study=result, n_contexts=s.bound_contexts,
                               execution=dataclasses.replace(execution, workers=execution.pool_size()),
                               **(consistency_sizes or {}))
    return result, report


def write_study_sections(result: RegimeStudy, report: ConsistencyReport, *,
                         figures: bool = True) -> RegimeStudy:
    """Write both sections' pages into the study's directory: ``study.md`` (with its figures and
    ``study.json``) and ``consistency.md``. Returns the study with its page (:func:`write_regime_study`).

    Notes
    -----
    No example: it needs a study's results (minutes); see ``idepth study regime --scale smoke``.
    """
    return write_regime_study(result, figures=figures, beside={"consistency.md": report.markdown})
