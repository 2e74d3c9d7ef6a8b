"""The regime study's plans: per scale, its sizes, regimes and budgets (:data:`STUDY_SCALES`), and each trained
regime's :class:`~numerics.experiments.study.plan.Plan` at one size (:meth:`StudyScale.family`).

The reproduction's scales (:mod:`numerics.experiments.reproduce.scales`) run the study at the budget of the same
name, so a reproduction and ``idepth study run regimes --scale NAME`` share every run and bound.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from theory.validation import check_choice, check_positive_int

from .. import recipes
from .plan import Plan

__all__ = ["REGIMES", "TRAINED_REGIMES", "STUDY_FAMILIES", "REGIME_DESCRIPTIONS", "StudyScale", "STUDY_SCALES"]

#: the regimes of the study (module table)
REGIMES = ("lazy", "lazy_long", "converged", "frozen_heads", "separate_models")
#: regimes that are training runs through the sweep layer
TRAINED_REGIMES = ("lazy", "lazy_long", "converged")

REGIME_DESCRIPTIONS = {
    "lazy": (
        "lazy training: gain g = W_o W_v W_y fixed at 1 (W_o, W_v, W_y frozen), Adam 1e-4 constant, "
        "{lazy_steps} steps, batch {batch_size}, W_q = W_k = √0.6 (I + 0.5 G/√N)"
    ),
    "lazy_long": "the lazy regime trained for {lazy_long_steps} steps",
    "converged": (
        "trained to convergence: every parameter, Adam 1e-3 with {converged_warmup} warm-up steps and cosine decay to 0, "
        "{converged_stop}, batch {batch_size}, {converged_init_text}"
    ),
    "frozen_heads": (
        "frozen random heads (the lazy initialisation; depth L uses the first L of the deepest model's heads), only "
        "the gain trained — solved exactly by least squares on {fit_size} fresh contexts (the loss is quadratic in g); "
        "the optimal gain grows with L, so A_L and C_L (measured at that gain) depend on L"
    ),
    "separate_models": (
        "averages of L fully separate models: independently trained (converged) L = 1 models, each with its own W_x, "
        "averaged on a common evaluation set ({separate_models} models, disjoint groups)"
    ),
}
#: the regime study's one-run plans (:meth:`StudyScale.family`): its trained regimes and the independent L = 1
#: models it averages
STUDY_FAMILIES = ("lazy", "lazy_long", "converged", "separate_models")


def _depth_grid(depths) -> tuple:
    return tuple(sorted({check_positive_int("depth", L) for L in depths}))


@dataclass(frozen=True)
class StudyScale:
    """Sizes and budgets of one study run.

    Parameters
    ----------
    name : str
    sizes : tuple of (d, P, N)
        Input dimension, context length, hidden width.
    spectra, extra_spectra : tuple of (a, b)
        Spectrum exponents (eq. 2) of every regime, and further ones for the cheap regimes only
        (lazy, frozen heads).
    depths, seeds : tuple of int
        Depth grid of the lazy and frozen-heads regimes; training seeds (>= 3 for a real study).
    regimes : tuple of str
        Subset of :data:`REGIMES`.
    k : int
        Top-k of the task (eq. 6).
    converged_depths, separate_depths : tuple of int, optional
        Depths of the converged regime (default ``depths``) and of the separate-models average
        (default: those ``<= separate_models / len(seeds)``).
    separate_models : int
        Independent ``L = 1`` (converged) models trained for the separate-models average.
    batch_size, eval_size, eval_every : int
        Training batch, held-out evaluation-set size, evaluation period.
    lazy_steps, lazy_long_steps, converged_steps, converged_warmup : int
        Step budgets of the lazy regimes; step cap and warm-up of the converged regime (cosine
        decay to 0 at the cap).
    converged_window : int or None
        Early stop when the held-out loss has not improved by 0.1 % for this many steps (None:
        the whole cosine schedule).
    converged_init : {'default', 'lazy'}
        Initialisation of the converged regime: the model's default or :data:`LAZY_INIT`.
    fit_size, bound_contexts : int
        Contexts on which the frozen-heads gain is fitted; Monte-Carlo contexts of each bound.
    dtype : {'float32', 'float64'}

    References
    ----------
    Paper eqs. (12), (16), (61)-(63).

    Examples
    --------
    >>> STUDY_SCALES["quick"].k
    2
    >>> STUDY_SCALES["medium"].sizes[:2]
    ((16, 64, 16), (16, 64, 32))
    """

    name: str
    sizes: tuple
    spectra: tuple
    depths: tuple
    seeds: tuple
    regimes: tuple = REGIMES
    k: int = 2
    extra_spectra: tuple = ()
    converged_depths: tuple | None = None
    separate_depths: tuple | None = None
    separate_models: int = 24
    batch_size: int = 64
    eval_size: int = 1024
    eval_every: int = 100
    lazy_steps: int = 1000
    lazy_long_steps: int = 4000
    converged_steps: int = 3000
    converged_warmup: int = 100
    converged_window: int | None = None
    converged_init: str = "default"
    fit_size: int = 2048
    bound_contexts: int = 8192
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("sizes", "spectra", "depths", "seeds", "regimes"):
            value = tuple(getattr(self, name))
            if not value:
                raise ValueError(f"StudyScale.{name} must not be empty")
            object.__setattr__(self, name, value)
        sizes = []
        for size in self.sizes:
            if len(size) != 3:
                raise ValueError(f"StudyScale.sizes entries must be (d, P, N); got {size!r}")
            d, P, N = (check_positive_int(n, v) for n, v in zip(("d", "P", "N"), size))
            if N < d:
                raise ValueError(f"StudyScale.sizes: N must be >= d; got (d={d}, P={P}, N={N})")
            if self.k > P:
                raise ValueError(f"StudyScale.sizes: k={self.k} must be <= P; got P={P}")
            sizes.append((d, P, N))
        object.__setattr__(self, "sizes", tuple(sizes))
        object.__setattr__(self, "spectra", tuple((float(a), float(b)) for a, b in self.spectra))
        extra = tuple((float(a), float(b)) for a, b in self.extra_spectra if (float(a), float(b)) not in self.spectra)
        object.__setattr__(self, "extra_spectra", extra)
        for regime in self.regimes:
            check_choice("regime", regime, REGIMES)
        check_choice("converged_init", self.converged_init, ("default", "lazy"))
        depths = _depth_grid(self.depths)
        object.__setattr__(self, "depths", depths)
        conv = depths if self.converged_depths is None else _depth_grid(self.converged_depths)
        object.__setattr__(self, "converged_depths", conv)
        sep = self.separate_depths
        if sep is None:
            sep = tuple(L for L in depths if L * len(self.seeds) <= self.separate_models)
        object.__setattr__(self, "separate_depths", _depth_grid(sep))
        if "separate_models" in self.regimes and max(self.separate_depths) > self.separate_models:
            raise ValueError(
                f"StudyScale.separate_depths up to {max(self.separate_depths)} need at least that many separate models; "
                f"got separate_models={self.separate_models}"
            )

    @classmethod
    def of(cls, scale) -> "StudyScale":
        """The study budget of ``scale``: a :class:`StudyScale` itself, a reproduction scale's, or a scale's name's.

        Examples
        --------
        >>> StudyScale.of("smoke") is STUDY_SCALES["smoke"]
        True
        """
        if isinstance(scale, StudyScale):
            return scale
        if isinstance(getattr(scale, "study", None), StudyScale):  # a reproduction's Scale
            return scale.study
        return STUDY_SCALES[check_choice("scale", scale, STUDY_SCALES)]

    def depths_of(self, regime: str) -> tuple:
        """The depth grid of ``regime``."""
        if regime == "converged":
            return self.converged_depths
        if regime == "separate_models":
            return self.separate_depths
        return self.depths

    def spectra_of(self, regime: str) -> tuple:
        """The spectra of ``regime`` (the cheap regimes also get :attr:`extra_spectra`)."""
        return self.spectra + (self.extra_spectra if regime in ("lazy", "frozen_heads") else ())

    @property
    def all_spectra(self) -> tuple:
        """Every spectrum of the study (:attr:`spectra`, then :attr:`extra_spectra`), once each."""
        return tuple(dict.fromkeys((*self.spectra, *self.extra_spectra)))

    def family(self, regime: str, size: tuple) -> Plan:
        """The training runs of a trained regime (or of the separate models) at one size ``(d, P, N)``.

        Its spectra, depths and seeds are the regime's (:meth:`spectra_of`, :meth:`depths_of`; the
        separate models are ``L = 1`` models of the converged recipe, seeds ``0 .. separate_models − 1``);
        its recipe is :data:`~numerics.experiments.recipes.LAZY` with this scale's lazy budget, or
        :data:`~numerics.experiments.recipes.EQUAL_BUDGET` with its converged cap, warm-up, window and
        initialisation. Raises ``ValueError`` for a regime that trains no runs.

        Examples
        --------
        >>> fam = STUDY_SCALES["smoke"].family("separate_models", (4, 16, 4))
        >>> fam.depths, len(fam.seeds), fam.learning_rate
        ((1,), 6, 0.001)
        """
        regime = check_choice("regime", regime, STUDY_FAMILIES)
        d, P, N = size
        separate = regime == "separate_models"
        budget = dict(batch_size=self.batch_size, eval_size=self.eval_size, eval_every=self.eval_every,
                      dtype=self.dtype)
        if regime in ("lazy", "lazy_long"):
            recipe = recipes.LAZY
            budget.update(max_steps=self.lazy_steps if regime == "lazy" else self.lazy_long_steps,
                          regime=self.describe(regime))
        else:
            recipe = recipes.EQUAL_BUDGET
            budget.update(max_steps=self.converged_steps, warmup_steps=self.converged_warmup,
                          window=self.converged_window, regime=self.describe("converged"))
            if self.converged_init != "lazy":
                budget["init"] = ()  # the model's default initialisation
        return Plan.one_run(regime, recipe, k=self.k, d=d, N=N, P=P, spectra=self.spectra_of(regime),
                            depths=(1,) if separate else self.depths_of(regime),
                            seeds=tuple(range(self.separate_models)) if separate else self.seeds, **budget)

    def describe(self, regime: str) -> str:
        """Plain-words description of ``regime`` at this scale."""
        values = dataclasses.asdict(self)
        values["converged_stop"] = (
            f"stopped when the held-out loss has not improved by 0.1 % for {self.converged_window} steps (cap "
            f"{self.converged_steps} steps)" if self.converged_window is not None
            else f"the whole schedule of {self.converged_steps} steps"
        )
        values["converged_init_text"] = (
            "the lazy initialisation" if self.converged_init == "lazy" else "the model's default initialisation"
        )
        return REGIME_DESCRIPTIONS[regime].format(**values)

    def to_dict(self) -> dict:
        """JSON-able dict."""
        pairs = ("sizes", "spectra", "extra_spectra")
        return {key: (list(map(list, v)) if key in pairs else (list(v) if isinstance(v, tuple) else v))
                for key, v in dataclasses.asdict(self).items()}


_STUDY_SMOKE = StudyScale(
    name="smoke", sizes=((4, 16, 4),), spectra=((0.0, 0.0),), depths=(1, 2, 4), seeds=(0, 1, 2),
    separate_models=6, batch_size=8, eval_size=64, eval_every=10, lazy_steps=20, lazy_long_steps=40,
    converged_steps=20, converged_warmup=0, fit_size=128, bound_contexts=256,
    regimes=("lazy", "converged", "frozen_heads", "separate_models"),
)
_STUDY_QUICK = StudyScale(
    name="quick", sizes=((16, 64, 32),), spectra=((0.0, 0.0),), extra_spectra=((0.0, 0.5), (0.5, 0.0)),
    depths=(1, 2, 4, 8, 16, 32), seeds=(0, 1, 2), regimes=("lazy", "converged", "frozen_heads", "separate_models"),
    separate_models=12, separate_depths=(1, 2, 3, 4), batch_size=32, converged_steps=2000, converged_init="lazy",
    bound_contexts=8192,
)
_STUDY_FULL = StudyScale(
    name="full",
    sizes=tuple((d, r * d, n * d) for d in (16, 32, 64) for r in (4, 16) for n in (1, 2)),
    spectra=((0.0, 0.0), (0.5, 0.0), (0.0, 0.5)), depths=(1, 2, 4, 8, 16, 32, 64), seeds=(0, 1, 2),
    regimes=REGIMES, separate_models=48, separate_depths=(1, 2, 4, 8, 16), batch_size=128, eval_size=2048,
    converged_steps=8000, converged_window=1000, bound_contexts=16384,
)
#: the paper scale's regime study: the full study's design at the inferred d = 16 only (P = 64, 256; N = 16, 32),
#: where most of its cost is at d = 64; the medium scale keeps all sizes
_STUDY_PAPER = dataclasses.replace(_STUDY_FULL, sizes=tuple(size for size in _STUDY_FULL.sizes if size[0] == 16))
#: the regime study's budget at each scale of the reproduction (:mod:`numerics.experiments.reproduce.scales`), by
#: its name, with that scale's bound contexts so the study and the reproduction share each bound
STUDY_SCALES: Mapping[str, StudyScale] = MappingProxyType({
    "smoke": _STUDY_SMOKE, "quick": _STUDY_QUICK, "medium": dataclasses.replace(_STUDY_FULL, name="medium"),
    "paper": dataclasses.replace(_STUDY_PAPER, name="paper", bound_contexts=32768)})
