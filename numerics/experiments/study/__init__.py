"""Where does inverse-depth scaling appear, and is the paper's plateau attainable?

The paper reports ``R_L = L0 + c L^(−alpha)``, ``alpha ≈ 1``, for the nonlinear model
(eq. 16, Tables 1, 4, 5) and reads it through ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63),
which gives ``1/L`` only when the layers' errors are exchangeable with a depth-independent
``A − C``. This study (not in the paper) measures where that happens, regime by regime
(:data:`REGIME_DESCRIPTIONS`), next to the oracle bounds of :mod:`numerics.experiments.bounds`.

Modules: ``regimes`` (configs, controls, :func:`run_regime_study`, :func:`name_regime`; each depth
curve's fit and verdict is a :class:`~numerics.experiments.curves.CurveSummary`), ``report`` (figures, Markdown), ``consistency`` (the paper's plateaus against the
bounds), ``sections`` (the regime study, then that check: ``idepth study regime``), ``defaults`` (the measured defaults of :func:`theory.predict_loss`), ``sizes`` (the
sizes the plateaus imply) and ``certified/`` (the best loss each depth reaches there, with its certificates).
"""

from __future__ import annotations

from ..recipes import GAIN_PARAMETERS, LAZY_INIT
from ..scales import REGIME_DESCRIPTIONS, REGIMES, TRAINED_REGIMES, StudyScale
from .consistency import ConsistencyReport, ConsistencyRow, paper_consistency
from .defaults import fit_inverse_depth, make_softmax_defaults
from .sizes import SizeInference, infer_sizes, write_size_inference
from .regimes import (RegimeStudy, frozen_heads_control, name_regime, regime_config, run_regime_study,
                      separate_models_average, write_regime_study)
from .sections import run_study_sections, write_study_sections

__all__ = [
    "REGIMES",
    "TRAINED_REGIMES",
    "REGIME_DESCRIPTIONS",
    "LAZY_INIT",
    "GAIN_PARAMETERS",
    "StudyScale",
    "RegimeStudy",
    "ConsistencyRow",
    "ConsistencyReport",
    "regime_config",
    "frozen_heads_control",
    "separate_models_average",
    "name_regime",
    "run_regime_study",
    "paper_consistency",
    "run_study_sections",
    "write_study_sections",
    "write_regime_study",
    "make_softmax_defaults",
    "fit_inverse_depth",
    "SizeInference",
    "infer_sizes",
    "write_size_inference",
]
