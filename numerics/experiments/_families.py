"""A family of training runs (:data:`FAMILIES`): one model, task, size and recipe over spectra × depths × seeds.

Each :class:`~numerics.experiments.scales.Scale` fixes every family; :meth:`Family.config` builds a run's config.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from theory.validation import check_choice

from .recipes import START_KINDS

#: every family of runs a reproduction may need: its model, task and top-k (the same at every scale), and what it is for
FAMILIES = MappingProxyType({
    "linear_easy": ("linear", "easy", 2, "linear attention, easy task (Figs. 3a-c, Table 2)"),
    "linear_difficult": ("linear", "difficult", 2,
        "linear attention, difficult task, k = 2 (Figs. 5a-b, Tables 1 and 3)"),
    "linear_difficult_k16": ("linear", "difficult", 16, "linear attention, difficult task, k = 16 (Fig. 5b, Table 3)"),
    "nonlinear_easy": ("nonlinear", "easy", 2, "softmax attention, easy task (Figs. 4a-c)"),
    "nonlinear_lazy": ("nonlinear", "difficult", 2,
        "softmax attention, difficult task, k = 2, lazy training (Figs. 1, 6, 7, 13; Tables 1, 4, 5)"),
    "nonlinear_converged": ("nonlinear", "difficult", 2,
        "softmax attention, difficult task, k = 2, trained to convergence (Fig. 6a, verdict)"),
    "nonlinear_k16": ("nonlinear", "difficult", 16,
        "softmax attention, difficult task, k = 16, lazy training (Fig. 14, Table 4)"),
    "single_stream": ("single_stream", "difficult", 2, "single-stream model, difficult task, k = 2 (Fig. 9)"),
    "untied_values": ("untied_values", "difficult", 2, "untied values, difficult task, k = 2 (Fig. 10)"),
    "context_updates": ("context_updates", "difficult", 2,
        "context updates M(m), difficult task, k = 2 (Figs. 11, 12)"),
    "context_updates_k16": ("context_updates", "difficult", 16,
        "context updates M(m), difficult task, k = 16 (Figs. 11, 12)"),
})

#: the regime study's families of training runs (:meth:`~numerics.experiments.scales.StudyScale.family`): its trained
#: regimes and the independent L = 1 models it averages
STUDY_FAMILIES = ("lazy", "lazy_long", "converged", "separate_models")


@dataclass(frozen=True)
class Family:
    """One family of training runs: a model, task, size and recipe over spectra × depths × seeds.

    Parameters
    ----------
    name : str
        One of :data:`FAMILIES` (a reproduction's) or :data:`STUDY_FAMILIES` (the regime study's).
    model, task, k, d, N, P
        As in :class:`numerics.train.TrainConfig`: top-k of eq. (6), input dimension, hidden
        width, context length.
    spectra : tuple of (a, b)
        Spectrum exponents of eq. (2).
    depths, seeds : tuple of int
    batch_size, max_steps, learning_rate, schedule, warmup_steps, init, frozen, eval_size, eval_every, dtype
        The recipe, as the :class:`numerics.train.TrainConfig` fields of those names
        (``learning_rate=None``: the model's default; ``init`` as ``(option, value)`` pairs).
    tol, window : float, int or None
        Convergence tolerance and window (None: longer than the budget, i.e. no early stop).
    regime : str
        One line naming the training regime, printed in the report.
    gamma_star_init : bool
        Linear attention only: start every depth at the constrained optimum of paper eq. (33),
        ``B_ℓ ≈ (L/λ_1) I`` (``qk_scale = N L/c_λ``); the default ``γ = 1`` lies far below ``γ*``
        for deep models.

    References
    ----------
    Paper eqs. (1)-(12) (data, models, loss); the recipe is this package's.

    Examples
    --------
    >>> fam = Family("linear_easy", "linear", "easy", 2, 4, 4, 8, ((2.0, 1.0),), (1, 2), (0,),
    ...              batch_size=8, max_steps=10)
    >>> len(fam.configs()), fam.config(2.0, 1.0, 2, 0).depth
    (2, 2)
    """

    name: str
    model: str
    task: str
    k: int
    d: int
    N: int
    P: int
    spectra: tuple
    depths: tuple
    seeds: tuple
    batch_size: int = 64
    max_steps: int = 1000
    learning_rate: float | None = None
    schedule: str = "warmup_cosine"
    warmup_steps: int = 100
    init: tuple = ()
    frozen: tuple = ()
    eval_size: int = 1024
    eval_every: int = 100
    tol: float = 1e-3
    window: int | None = None
    regime: str = ""
    gamma_star_init: bool = False
    dtype: str = "float32"

    def __post_init__(self) -> None:
        check_choice("family name", self.name, (*FAMILIES, *STUDY_FAMILIES))
        for name in ("spectra", "depths", "seeds", "init", "frozen"):
            object.__setattr__(self, name, tuple(tuple(v) if isinstance(v, list) else v for v in getattr(self, name)))
        object.__setattr__(self, "spectra", tuple((float(a), float(b)) for a, b in self.spectra))
        if not self.spectra or not self.depths or not self.seeds:
            raise ValueError(f"family {self.name!r} needs at least one spectrum, depth and seed")
        if self.gamma_star_init and self.model not in START_KINDS["gamma_star"]:
            raise ValueError(f"gamma_star_init: the 'gamma_star' start applies only to model "
                             f"{', '.join(START_KINDS['gamma_star'])}; family {self.name!r} has model {self.model!r}")

    def config(self, a: float, b: float, depth: int, seed: int):
        """The :class:`numerics.train.TrainConfig` of one run of this family.

        Examples
        --------
        >>> from numerics.experiments.scales import SCALES
        >>> fam = SCALES["smoke"].families["linear_easy"]
        >>> cfg = fam.config(*fam.spectra[0], fam.depths[0], fam.seeds[0])
        >>> cfg.model, cfg.task
        ('linear', 'easy')
        """
        from numerics.config import TrainConfig

        init = dict(self.init)
        if self.gamma_star_init:
            init["qk_scale"] = float(self.N * int(depth))  # B_ℓ ≈ (qk_scale/N) I = (L/λ_1) I, λ_1 = c_λ = 1 (eq. 33)
        fields = dict(
            model=self.model, task=self.task, k=self.k, a=float(a), b=float(b), d=self.d, N=self.N, P=self.P,
            depth=int(depth), seed=int(seed), batch_size=self.batch_size, max_steps=self.max_steps,
            learning_rate=self.learning_rate, schedule=self.schedule, warmup_steps=self.warmup_steps,
            init=init, eval_size=self.eval_size, eval_every=self.eval_every, tol=self.tol,
            window=self.window if self.window is not None else self.max_steps + self.eval_every, dtype=self.dtype,
        )
        if self.frozen:
            fields["frozen"] = tuple(self.frozen)
        return TrainConfig(**fields)

    def configs(self) -> tuple:
        """Every run of the family: spectra × depths × seeds, in that nesting order."""
        return tuple(
            self.config(a, b, depth, seed) for (a, b) in self.spectra for depth in self.depths for seed in self.seeds
        )

    @property
    def n_runs(self) -> int:
        """Number of runs (spectra × depths × seeds)."""
        return len(self.spectra) * len(self.depths) * len(self.seeds)

    def describe(self) -> str:
        """One line: model, task, sizes, grid and recipe (for the plan and the report).

        Examples
        --------
        >>> from numerics.experiments.scales import SCALES
        >>> "d = 4" in SCALES["smoke"].families["linear_easy"].describe()
        True
        """
        lr = "model default" if self.learning_rate is None else f"{self.learning_rate:g}"
        frozen = ", frozen " + "/".join(self.frozen) if self.frozen else ""
        init = ", init " + ", ".join(f"{k}={v}" for k, v in self.init) if self.init else ""
        if self.gamma_star_init:
            init += ", start at γ* = L/λ_1 (eq. 33)"
        return (
            f"{self.model}, {self.task} task" + (f", k = {self.k}" if self.task == "difficult" else "")
            + f"; d = {self.d}, N = {self.N}, P = {self.P}; L ∈ {{{', '.join(map(str, self.depths))}}}; "
            f"{len(self.seeds)} seed(s); {len(self.spectra)} spectra; Adam {lr}, {self.schedule}, "
            f"{self.max_steps} steps × batch {self.batch_size}{init}{frozen}"
        )
