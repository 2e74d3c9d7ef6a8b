"""Where does inverse-depth scaling appear, and is the paper's plateau attainable?

The paper reports ``R_L = L0 + c L^(−alpha)``, ``alpha ≈ 1``, for the nonlinear model
(eq. 16, Tables 1, 4, 5) and reads it through ``R_L = C_L + (A_L − C_L)/L`` (eqs. 61-63),
which gives ``1/L`` only when the layers' errors are exchangeable with a depth-independent
``A − C``. This study (not in the paper) measures where that happens, regime by regime
(:data:`REGIME_DESCRIPTIONS`), next to the oracle bounds of :mod:`numerics.experiments.bounds`.

Modules: ``plan`` (the one :class:`~numerics.experiments.study.plan.Plan` of every study's runs),
``run`` (the one runner, :func:`run_cell`, and the one driver, :func:`run_plan`, of every plan of cells),
``regime_plans`` (the regime study's budget per scale and its regimes' plans), ``regimes`` (configs, controls,
:func:`run_regime_study`, which can also check the paper's plateaus, and :func:`name_regime`; each depth curve's fit and verdict is a
:class:`~numerics.experiments.study.curves.CurveSummary`), ``plateaus`` (the paper's plateaus against the bounds,
and the sizes they imply), ``page`` (the one section vocabulary and every study's page), ``figures`` (every study
figure), ``defaults`` (the measured defaults of :func:`theory.predict_loss`) and ``certified/`` (the best loss each
depth reaches there, with its certificates).
"""

from __future__ import annotations

from numerics.experiments import lazy_exports

#: where each public name lives; a submodule is imported only when one of its names is used, so that
#: ``study.answer`` or ``study.curves`` (read by ``idepth --help`` and the reproduction) load no training code
_HOMES = {
    "GAIN_PARAMETERS": "..recipes", "LAZY_INIT": "..recipes",
    "REGIME_DESCRIPTIONS": ".regime_plans", "REGIMES": ".regime_plans", "TRAINED_REGIMES": ".regime_plans",
    "StudyScale": ".regime_plans", "STUDY_SCALES": ".regime_plans", "Plan": ".plan", "REVISED_PLAN": ".plan",
    "ConsistencyReport": ".plateaus", "ConsistencyRow": ".plateaus", "paper_consistency": ".plateaus",
    "SizeInference": ".plateaus", "infer_sizes": ".plateaus", "write_size_inference": ".plateaus",
    "fit_inverse_depth": ".defaults", "make_softmax_defaults": ".defaults",
    "RegimeStudy": ".regimes", "frozen_heads_control": ".regimes", "name_regime": ".regimes",
    "regime_config": ".regimes", "run_regime_study": ".regimes", "separate_models_average": ".regimes",
    "write_regime_study": ".regimes", "run_cell": ".run", "run_plan": ".run",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)


#: every public name, each from its home (:data:`_HOMES`)
__all__ = list(_HOMES)
