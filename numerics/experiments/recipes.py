"""The named training recipes, each written once as :class:`~numerics.train.TrainConfig` overrides.

A recipe is how a run is trained (optimiser, schedule, initialisation, frozen parameters and,
where the recipe fixes them, its budget); a plan chooses only sizes and grids. The reproduction's
families (:mod:`numerics.experiments.scales`), the regime study
(:func:`numerics.experiments.study.regime_config`) and the converged study
(:class:`numerics.experiments.study.converged.ConvergedPlan`) all read them from here, so a run
that two of them name is one config with one content hash, trained once.

``init`` is a mapping of ``init_params`` options; ``frozen`` a tuple of parameter names.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

__all__ = [
    "CONVERGED_STUDY",
    "EASY",
    "EQUAL_BUDGET",
    "GAIN_PARAMETERS",
    "LAZY",
    "LAZY_INIT",
    "LINEAR_GAMMA_STAR",
    "RECIPES",
]

#: initialisation shared by every regime: W_q = W_k = √0.6 (I + 0.5 G/√N), W_v = I, g = 1
LAZY_INIT: Mapping = MappingProxyType({"qk_scale": 0.6, "qk_noise": 0.5})
#: parameters kept at their initial value in the lazy regimes (the gain g = W_o W_v W_y stays 1)
GAIN_PARAMETERS = ("W_o", "W_v", "W_y")

#: the regime in which the prototypes found inverse-depth scaling: a frozen gain, small constant steps
LAZY: Mapping = MappingProxyType(dict(learning_rate=1e-4, schedule="constant", warmup_steps=0, init=LAZY_INIT,
                                      frozen=GAIN_PARAMETERS))
#: equal budget: every parameter trained, Adam 1e-3 with warm-up and cosine decay over one budget for every depth,
#: the lazy runs' initialisation (the regime study's ``converged`` regime with ``converged_init='lazy'``)
EQUAL_BUDGET: Mapping = MappingProxyType(dict(learning_rate=1e-3, schedule="warmup_cosine", init=LAZY_INIT))
#: the converged study's first attempt (its later attempts double ``max_steps``): every parameter, the model's
#: default initialisation, Adam 1e-3, batch 256, 200 warm-up steps and cosine decay over 6000 steps, 16 evaluations
#: on 4096 held-out contexts
CONVERGED_STUDY: Mapping = MappingProxyType(dict(learning_rate=1e-3, schedule="warmup_cosine", warmup_steps=200,
                                                 batch_size=256, max_steps=6000, eval_every=375, eval_size=4096))
#: linear attention: Adam 1e-2 (the model default) with warm-up and cosine decay; the families also start at
#: γ* = L/λ_1 (eq. 33), a start that depends on the depth (``Family.gamma_star_init``)
LINEAR_GAMMA_STAR: Mapping = MappingProxyType(dict(learning_rate=1e-2, schedule="warmup_cosine"))
#: easy task, softmax: start with near-uniform attention (W_q, W_k ≈ √0.05 I) so that what training does is seen
EASY: Mapping = MappingProxyType(dict(learning_rate=0.03, schedule="warmup_constant", warmup_steps=20,
                                      init=MappingProxyType({"qk_scale": 0.05})))

#: every named recipe
RECIPES: Mapping[str, Mapping] = MappingProxyType({
    "lazy": LAZY, "equal_budget": EQUAL_BUDGET, "converged_study": CONVERGED_STUDY,
    "linear_gamma_star": LINEAR_GAMMA_STAR, "easy": EASY,
})
