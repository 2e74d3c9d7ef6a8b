"""Where does inverse-depth scaling appear, and is the paper's plateau attainable? (the study the paper does not give)

The paper reports ``R_L = L0 + c L^(−alpha)`` with ``alpha ≈ 1`` for the nonlinear
model on the top-k task (paper eq. 16, Tables 1, 4, 5) and reads it through the
exact decomposition ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63). The decomposition
alone does not imply ``1/L``: it gives ``1/L`` when the layers' errors are
exchangeable with a depth-independent disagreement ``A − C``. This module measures
*where* that happens, with the package's own engine (:mod:`numerics.models`),
training (:mod:`numerics.train`) and sweep layer (:mod:`numerics.experiments.sweep`, every run
cached in a SQLite store):

========================  ====================================================================
regime                    what is trained
========================  ====================================================================
``lazy``                  gain ``g = W_o W_v W_y`` fixed at 1 (``W_o, W_v, W_y`` frozen), Adam
                          1e-4 constant, 1000 steps, ``W_q = W_k = √0.6 (I + 0.5 G/√N)``
``lazy_long``             the same for 4000 steps
``converged``             every parameter, Adam 1e-3, warm-up + cosine decay, stopped when the
                          held-out loss no longer improves (same initialisation)
``frozen_heads``          the random heads of the lazy initialisation, only the gain trained —
                          solved exactly (the loss is quadratic in ``g``: least squares on
                          fresh contexts, the optimum Adam on ``W_o`` alone converges to)
``separate_models``       the average of ``L`` independently trained (``converged``) ``L = 1``
                          models, each with its own ``W_x``, on a common evaluation set
========================  ====================================================================

For every size ``(d, P, N)``, spectrum and regime: ``R_L`` over depths and seeds,
the depth gain ``R_1/R_{L_max}``, the fitted ``alpha`` with its interval
(:func:`theory.fit_depth_law`), and whether ``C_L`` and ``A_L − C_L`` settle
(relative change < 10 % over the last doubling of depth). Each depth plot carries
the oracle bounds of :mod:`numerics.experiments.bounds` as horizontal lines: the best single
softmax head over exact cosine similarity and the best non-negative mixture of
such heads, and the best head over the model's own pre-norm similarity at its
width ``N``.

:func:`paper_consistency` confronts the paper's nonlinear plateaus (Table 1,
Table 4) with those bounds at ``d = 128``, ``P ∈ {1024, 2048}`` (the sizes at which
the package reproduces the paper's linear Table 3) and at the study's sizes.
:func:`make_softmax_defaults` turns the measured runs into the data file read by
:mod:`theory.softmax_defaults` (and so by :func:`theory.predict_loss`).

Entry points: :func:`run_regime_study` (``idepth study regime``),
:func:`paper_consistency`, :func:`make_softmax_defaults` (``idepth study defaults``),
:func:`regime_config` (the :class:`~numerics.train.TrainConfig` of a regime, for
callers that share the store). Modules: :mod:`~numerics.experiments.study.regimes` (configs,
controls, the study), :mod:`~numerics.experiments.study.verdicts` (fits and names),
:mod:`~numerics.experiments.study.report` (figures and Markdown),
:mod:`~numerics.experiments.study.consistency` (the paper's plateaus against the bounds),
:mod:`~numerics.experiments.study.defaults` (the measured defaults of :func:`theory.predict_loss`).
"""

from __future__ import annotations

from ..recipes import GAIN_PARAMETERS, LAZY_INIT
from ..scales import REGIME_DESCRIPTIONS, REGIMES, TRAINED_REGIMES, StudyScale
from .consistency import ConsistencyReport, ConsistencyRow, paper_consistency, run_study_sections
from .defaults import fit_inverse_depth, make_softmax_defaults
from .sizes import SizeInference, infer_sizes, run_size_inference
from .regimes import RegimeStudy, frozen_heads_control, regime_config, run_regime_study, separate_models_average
from .verdicts import RegimePoint, name_regime, summarise_point

__all__ = [
    "REGIMES",
    "TRAINED_REGIMES",
    "REGIME_DESCRIPTIONS",
    "LAZY_INIT",
    "GAIN_PARAMETERS",
    "StudyScale",
    "RegimePoint",
    "RegimeStudy",
    "ConsistencyRow",
    "ConsistencyReport",
    "regime_config",
    "frozen_heads_control",
    "separate_models_average",
    "summarise_point",
    "name_regime",
    "run_regime_study",
    "paper_consistency",
    "run_study_sections",
    "make_softmax_defaults",
    "fit_inverse_depth",
    "SizeInference",
    "infer_sizes",
    "run_size_inference",
]
