"""A setting: the model and the data law a study point trains on (model, spectrum, top-k, sizes).

A plan is settings × depths × seeds × recipes (:mod:`numerics.experiments.recipes`); a
:class:`Setting` is the first factor, validated once, and :meth:`Setting.check` says whether a recipe's
start kinds apply to it (the heads of ``B_L`` and ``U_L`` need a softmax model with N > d).
The model's pre-norm is the model's own fact (``nonlinear``: LayerNorm, ``nonlinear_rms``: RMSNorm),
so a setting names it through ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass

from theory.validation import check_positive_int

from .recipes import Recipe, get_recipe

__all__ = ["Setting"]


@dataclass(frozen=True)
class Setting:
    """Model, spectrum ``(a, b)`` (eq. 2), top-``k``, embedding ``d``, width ``N`` and context length ``P``.

    Examples
    --------
    >>> s = Setting("nonlinear", 0.0, 0.25, k=2, d=16, N=32, P=64)
    >>> s.train_fields()["P"], s.check("converged_study")
    (64, None)
    >>> Setting("nonlinear", 0, 0, k=2, d=16, N=8, P=64).check("converged_study")
    Traceback (most recent call last):
    ...
    ValueError: N must be > d = 16 for the oracle start of recipe 'converged_study' (its heads need it with LayerNorm); got N=8
    """

    model: str
    a: float
    b: float
    k: int = 2
    d: int = 16
    N: int = 32
    P: int = 64

    def __post_init__(self) -> None:
        from numerics.models import MODELS

        if self.model not in MODELS:
            raise ValueError(f"model must be one of {', '.join(MODELS)}; got {self.model!r}")
        for name in ("a", "b"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a real number >= 0 (the spectrum's exponent); got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("k", "d", "N", "P"):
            check_positive_int(name, getattr(self, name))
        if self.k > self.P:
            raise ValueError(f"k must be <= P = {self.P}; got k={self.k}")

    def check(self, recipe: Recipe | str, starts=None) -> None:
        """``ValueError`` unless ``recipe``'s start kinds (or ``starts`` of them) apply to this setting."""
        get_recipe(recipe).check(self.model, self.d, self.N, starts)

    def train_fields(self) -> dict:
        """The setting as ``TrainConfig`` keywords."""
        return dict(model=self.model, a=self.a, b=self.b, k=self.k, d=self.d, N=self.N, P=self.P)
