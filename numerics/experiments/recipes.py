"""The named training recipes: each a :class:`Recipe`, written once as :class:`~numerics.train.TrainConfig` overrides.

A recipe is how a run is trained: the optimiser and schedule overrides (with the initialisation and the
frozen parameters), the start kinds it may use, and, where the recipe fixes them, its step cap and stopping
rule. A plan chooses only settings (:class:`Setting`, below), depths and seeds. The
reproduction's families (:mod:`numerics.experiments.reproduce.scales`), the regime study (whose runs are families too:
:meth:`~numerics.experiments.study.regime_plans.StudyScale.family`) and the certified study
(:class:`numerics.experiments.study.plan.Plan`, ``recipe=``) all read them from here, so a run
that both name is one config with one content hash, trained once.

A recipe is also a read-only mapping of its overrides (``LAZY["learning_rate"]``, ``TrainConfig(**recipe)``).
``init`` is a mapping of ``init_params`` options; ``frozen`` a tuple of parameter names. A recipe defined
outside the package joins :data:`RECIPES` with :func:`register` (``CONTRIBUTING.md`` shows one, end to end).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from theory.validation import check_positive_int

__all__ = [
    "Setting",
    "CONVERGED_STUDY",
    "EASY",
    "EQUAL_BUDGET",
    "GAIN_PARAMETERS",
    "LAZY",
    "LAZY_INIT",
    "LINEAR_GAMMA_STAR",
    "RECIPES",
    "START_KINDS",
    "Recipe",
    "get_recipe",
    "register",
    "unregister",
]

#: every start kind a recipe may name, with the models it applies to (None: every model). ``cold``: the
#: recipe's initialisation; ``oracle``: the cosine heads of ``B_L``; ``expressible``: the heads of ``U_L``;
#: ``diverse``: random forms of ``U_L``'s diffuse classes; ``nested``: the depth-L/2 winner with every layer
#: duplicated (these four write heads into the softmax models' W_q, W_k: ``numerics.models.heads``);
#: ``gamma_star``: linear attention at γ* = L/λ_1 (eq. 33)
START_KINDS: Mapping[str, tuple | None] = MappingProxyType({
    "cold": None,
    "oracle": ("nonlinear", "nonlinear_rms"),
    "nested": ("nonlinear", "nonlinear_rms"),
    "expressible": ("nonlinear", "nonlinear_rms"),
    "diverse": ("nonlinear", "nonlinear_rms"),
    "gamma_star": ("linear",),
})
#: the start kinds whose heads need N > d (with LayerNorm the pre-norm keeps d of the N directions)
HEAD_STARTS = ("oracle", "expressible", "diverse")


def _frozen_mapping(value):
    """``value`` with every dict read-only (a recipe's ``init`` cannot be changed through it)."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen_mapping(v) for k, v in value.items()})
    return value


def _plain(value):
    """``value`` with every mapping a plain dict (JSON, hashing)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass(frozen=True, eq=False)
class Recipe(Mapping):
    """A named way to train: ``TrainConfig`` overrides, the start kinds it may use, its step cap and stopping rule.

    Parameters
    ----------
    name : str
        The label every stored row carries (letters, digits and ``_``).
    overrides : mapping
        :class:`~numerics.train.TrainConfig` fields the recipe fixes (optimiser, schedule, ``init``,
        ``frozen``, and where it fixes them ``max_steps`` -- the step cap -- and ``tol``/``window`` -- the
        stopping rule). Fields it leaves out are the plan's or ``TrainConfig``'s defaults.
    starts : tuple of str
        The start kinds (:data:`START_KINDS`) a plan may give this recipe's runs.
    description : str
        One line: what the recipe is for.

    Examples
    --------
    >>> r = Recipe("slow", {"learning_rate": 1e-4, "schedule": "constant"})
    >>> r["learning_rate"], dict(r)["schedule"], r.starts, r.max_steps
    (0.0001, 'constant', ('cold',), None)
    >>> Recipe("bad", {"learning_rat": 1e-4})
    Traceback (most recent call last):
    ...
    ValueError: overrides: 'learning_rat' is not a TrainConfig field
    """

    name: str
    overrides: Mapping = field(default_factory=dict)
    starts: tuple = ("cold",)
    description: str = ""

    def __post_init__(self) -> None:
        from numerics.config import TrainConfig

        if not isinstance(self.name, str) or not self.name.replace("_", "a").isalnum() or not self.name[:1].isalpha():
            raise ValueError(f"name must be letters, digits and '_', starting with a letter; got {self.name!r}")
        if not isinstance(self.overrides, Mapping):
            raise TypeError(f"overrides must be a mapping of TrainConfig fields; got {type(self.overrides).__name__}")
        fields = {f.name for f in dataclasses.fields(TrainConfig)}
        for key in self.overrides:
            if key not in fields:
                raise ValueError(f"overrides: {key!r} is not a TrainConfig field")
        starts = (self.starts,) if isinstance(self.starts, str) else tuple(self.starts)
        if not starts:
            raise ValueError("starts must name at least one start kind")
        for kind in starts:
            if kind not in START_KINDS:
                raise ValueError(f"starts: {kind!r} is not a start kind ({', '.join(START_KINDS)})")
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "overrides", _frozen_mapping(dict(self.overrides)))

    def __getitem__(self, key: str):
        return self.overrides[key]

    def __iter__(self):
        return iter(self.overrides)

    def __len__(self) -> int:
        return len(self.overrides)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Recipe):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"Recipe({self.name!r}, {_plain(self.overrides)!r}, starts={self.starts!r})"

    @property
    def max_steps(self) -> int | None:
        """The recipe's step cap (None: the plan sets it)."""
        return self.overrides.get("max_steps")

    @property
    def stopping(self) -> str:
        """The stopping rule in words: the whole cap, or a plateau test (``tol``, ``window``), or the plan's."""
        if "tol" not in self.overrides:
            return "the plan's"
        if self.overrides["tol"] == 0:
            return "the whole step cap"
        return f"when the held-out loss falls by less than {self.overrides['tol']:g} over {self.overrides.get('window')} steps"

    def to_dict(self) -> dict:
        """The recipe as plain JSON-ready values (``from_dict`` reads it back)."""
        return {"name": self.name, "overrides": _plain(self.overrides), "starts": list(self.starts),
                "description": self.description}

    @classmethod
    def from_dict(cls, data: Mapping) -> "Recipe":
        overrides = dict(data["overrides"])
        if "frozen" in overrides:
            overrides["frozen"] = tuple(overrides["frozen"])
        return cls(data["name"], overrides, tuple(data.get("starts", ("cold",))), data.get("description", ""))

    def train_fields(self) -> dict:
        """The overrides as ``TrainConfig`` keywords (``init`` a fresh dict, ``frozen`` a tuple).

        Examples
        --------
        >>> LAZY.train_fields()["init"]
        {'qk_scale': 0.6, 'qk_noise': 0.5}
        """
        out = dict(self.overrides)
        if "init" in out:
            out["init"] = dict(out["init"])
        if "frozen" in out:
            out["frozen"] = tuple(out["frozen"])
        return out

    def check(self, model: str, d: int, N: int, starts=None) -> None:
        """``ValueError`` unless each start kind (default: all the recipe's) applies to ``model`` at (d, N).

        Examples
        --------
        >>> CONVERGED_STUDY.check("nonlinear", 16, 32)
        >>> CONVERGED_STUDY.check("nonlinear", 16, 16, starts=("oracle",))
        Traceback (most recent call last):
        ...
        ValueError: N must be > d = 16 for the oracle start of recipe 'converged_study' (its heads need it with LayerNorm); got N=16
        """
        for kind in self.starts if starts is None else starts:
            if kind not in self.starts:
                raise ValueError(f"starts: recipe {self.name!r} does not use the {kind!r} start "
                                 f"(it uses {', '.join(self.starts)})")
            models = START_KINDS[kind]
            if models is not None and model not in models:
                raise ValueError(f"starts: the {kind!r} start of recipe {self.name!r} does not apply to model "
                                 f"{model!r} (only {', '.join(models)})")
            if kind in HEAD_STARTS and N <= d:
                raise ValueError(f"N must be > d = {d} for the {kind} start of recipe {self.name!r} (its heads need "
                                 f"it with LayerNorm); got N={N}")


#: initialisation shared by every regime: W_q = W_k = √0.6 (I + 0.5 G/√N), W_v = I, g = 1
LAZY_INIT: Mapping = MappingProxyType({"qk_scale": 0.6, "qk_noise": 0.5})
#: parameters kept at their initial value in the lazy regimes (the gain g = W_o W_v W_y stays 1)
GAIN_PARAMETERS = ("W_o", "W_v", "W_y")

#: the regime in which the prototypes found inverse-depth scaling: a frozen gain, small constant steps
LAZY = Recipe("lazy", dict(learning_rate=1e-4, schedule="constant", warmup_steps=0, init=LAZY_INIT,
                           frozen=GAIN_PARAMETERS), description="frozen gain, small constant steps")
#: equal budget: every parameter trained, Adam 1e-3 with warm-up and cosine decay over one budget for every depth,
#: the lazy runs' initialisation (the regime study's ``converged`` regime with ``converged_init='lazy'``)
EQUAL_BUDGET = Recipe("equal_budget", dict(learning_rate=1e-3, schedule="warmup_cosine", init=LAZY_INIT),
                      description="every parameter, one budget for every depth")
#: the recipe of the retired converged study (its name stays: it is hashed into the certified cells): every
#: parameter, the model's default initialisation, Adam 1e-3, batch 256, 200 warm-up steps and cosine decay over 6000 steps, 16 evaluations
#: on 4096 held-out contexts. The certified study trains every candidate with it (its rates, caps and starts are the
#: plan's: cold, the heads of B_L and U_L, diverse forms, nested copies)
CONVERGED_STUDY = Recipe("converged_study", dict(learning_rate=1e-3, schedule="warmup_cosine", warmup_steps=200,
                                                 batch_size=256, max_steps=6000, eval_every=375, eval_size=4096),
                         starts=("cold", "oracle", "nested", "expressible", "diverse"),
                         description="every parameter to convergence (Adam, warm-up, cosine decay)")
#: linear attention: Adam 1e-2 (the model default) with warm-up and cosine decay; the families also start at
#: γ* = L/λ_1 (eq. 33), a start that depends on the depth (:meth:`~numerics.experiments.study.plan.Plan.config`)
LINEAR_GAMMA_STAR = Recipe("linear_gamma_star", dict(learning_rate=1e-2, schedule="warmup_cosine"),
                           starts=("cold", "gamma_star"), description="linear attention from γ* = L/λ_1")
#: easy task, softmax: start with near-uniform attention (W_q, W_k ≈ √0.05 I) so that what training does is seen
EASY = Recipe("easy", dict(learning_rate=0.03, schedule="warmup_constant", warmup_steps=20, init={"qk_scale": 0.05}),
              description="easy task, from near-uniform attention")

_REGISTRY: dict[str, Recipe] = {r.name: r for r in (LAZY, EQUAL_BUDGET, CONVERGED_STUDY, LINEAR_GAMMA_STAR, EASY)}
#: every named recipe, by name (read-only; :func:`register` adds one)
RECIPES: Mapping[str, Recipe] = MappingProxyType(_REGISTRY)


def register(recipe: Recipe) -> Recipe:
    """Add ``recipe`` to :data:`RECIPES` (so tables whose rows carry its name are accepted); returns it.

    Registering the same definition twice is harmless; another definition under a known name is a
    ``ValueError`` naming it.

    Examples
    --------
    >>> r = register(Recipe("doc_example", {"learning_rate": 1e-3}))
    >>> RECIPES["doc_example"] is r
    True
    >>> unregister("doc_example")
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe; got {type(recipe).__name__}")
    known = _REGISTRY.get(recipe.name)
    if known is not None and known != recipe:
        raise ValueError(f"recipe: the name {recipe.name!r} is taken by another definition ({known!r})")
    _REGISTRY[recipe.name] = recipe
    return recipe


def unregister(name: str) -> None:
    """Remove a recipe added by :func:`register` (the package's own stay; an unknown name is ignored).

    Examples
    --------
    >>> unregister("never_registered")
    >>> "lazy" in RECIPES
    True
    """
    if name in _BUILTIN:
        raise ValueError(f"name: {name!r} is one of the package's recipes and stays registered")
    _REGISTRY.pop(name, None)


def get_recipe(recipe: "Recipe | str") -> Recipe:
    """The :class:`Recipe` ``recipe`` names (a ``Recipe`` is returned as is); ``ValueError`` naming it if unknown.

    Examples
    --------
    >>> get_recipe("lazy").name
    'lazy'
    """
    if isinstance(recipe, Recipe):
        return recipe
    if recipe not in _REGISTRY:
        raise ValueError(f"recipe must be one of {', '.join(_REGISTRY)} (or a Recipe); got {recipe!r}")
    return _REGISTRY[recipe]


_BUILTIN = frozenset(_REGISTRY)


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
