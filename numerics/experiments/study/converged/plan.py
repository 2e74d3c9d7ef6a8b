"""The converged study's plan: which runs it trains (:class:`RunSpec`), at which sizes, with
which recipe (:class:`ConvergedPlan`: every choice the paper leaves open is a field)."""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

from numerics.train import TrainConfig
from theory.paper import INFERRED_SOFTMAX_SIZES, TABLE1_SPECTRA, TABLE4_SPECTRA
from theory.validation import check_positive_int

from ...recipes import CONVERGED_STUDY

__all__ = ["EXTRA_SPECTRA", "ConvergedPlan", "RunSpec", "eval_seed_of"]

#: (a, b, k) the study also ran that are in none of the paper's nonlinear tables (kept: they are data)
EXTRA_SPECTRA = ((1.0, 0.5, 2), (0.5, 1.0, 2))


@dataclass(frozen=True)
class RunSpec:
    """One run of the study without its step cap: model, spectrum, width, depth, seed.

    Examples
    --------
    >>> RunSpec("nonlinear", 0.0, 0.0, 32, 4, 1).depth
    4
    """

    model: str
    a: float
    b: float
    N: int
    depth: int
    seed: int
    k: int = 2


@dataclass(frozen=True)
class ConvergedPlan:
    """What the converged study trains (every choice the paper leaves open is a field).

    Attributes
    ----------
    d, P, k : int
        :data:`theory.paper.INFERRED_SOFTMAX_SIZES` (d = 16 is where the χ² of ``idepth study sizes``
        is smallest by far; P = 64 is inside the region the data allow, 32-96); top-k 2 as Table 1.
    spectra, table4_spectra : tuple
        ``(a, b)`` at top-``k`` (Table 1's seven) and ``(a, b, k)`` (:data:`TABLE4_SPECTRA`,
        then :data:`EXTRA_SPECTRA`), every depth, ``N = width_factor · d``.
    deep_depths : tuple of int
        Extra depths at the contrast spectrum.
    contrast_spectrum : (a, b) or None
        Where the contrasts run, all depths: ``N = d`` (LayerNorm removes one input direction
        there) and the RMSNorm model ``nonlinear_rms``.
    confirm_depths : tuple of int
        Depths at the contrast spectrum also trained with twice the cap they converged at: the
        paired ``doubling_gain`` says whether the rule's "converged" holds up.
    batch_size, learning_rate, warmup_steps : int, float, int
        Adam with fresh batches every step, warm-up then cosine decay to 0 over the cap.
    base_steps, max_doublings : int
        First step cap (the (0, 0) L = 1 model reaches its single-head bound only after about
        6000 steps) and how many times an unconverged run is retrained with the cap doubled.
    eval_size, evals_per_run : int
        Held-out contexts (common to a spectrum); evaluations per run.

    Examples
    --------
    >>> plan = ConvergedPlan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), contrast_spectrum=None, deep_depths=(),
    ...                      table4_spectra=())
    >>> [(s.model, s.N, s.depth) for s in plan.runs()]
    [('nonlinear', 32, 1), ('nonlinear', 32, 2)]
    """

    d: int = INFERRED_SOFTMAX_SIZES["d"]
    P: int = INFERRED_SOFTMAX_SIZES["P"]
    k: int = 2
    spectra: tuple = TABLE1_SPECTRA
    table4_spectra: tuple = TABLE4_SPECTRA + EXTRA_SPECTRA
    depths: tuple = (1, 2, 4, 8, 16, 32, 64, 128)
    deep_depths: tuple = (256,)
    seeds: tuple = (0, 1, 2)
    width_factor: int = INFERRED_SOFTMAX_SIZES["N"] // INFERRED_SOFTMAX_SIZES["d"]
    contrast_spectrum: tuple | None = (0.0, 0.0)
    confirm_depths: tuple = (1, 16, 128)
    batch_size: int = CONVERGED_STUDY["batch_size"]
    learning_rate: float = CONVERGED_STUDY["learning_rate"]
    warmup_steps: int = CONVERGED_STUDY["warmup_steps"]
    base_steps: int = CONVERGED_STUDY["max_steps"]
    max_doublings: int = 3
    eval_size: int = CONVERGED_STUDY["eval_size"]
    evals_per_run: int = CONVERGED_STUDY["max_steps"] // CONVERGED_STUDY["eval_every"]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        for name in ("d", "P", "k", "width_factor", "batch_size", "base_steps", "eval_size", "evals_per_run"):
            check_positive_int(name, getattr(self, name))
        for k in (self.k, *(spec[2] for spec in self.table4_spectra)):
            check_positive_int("k", k)
            if k > self.P:
                raise ValueError(f"k must be <= P; got k={k}, P={self.P}")
        if self.evals_per_run < 4:
            raise ValueError(f"evals_per_run must be >= 4 (the last quarter needs an evaluation); "
                             f"got {self.evals_per_run}")
        if self.max_doublings < 0:
            raise ValueError(f"max_doublings must be >= 0; got {self.max_doublings}")
        if self.base_steps % self.evals_per_run:
            raise ValueError(f"base_steps ({self.base_steps}) must be a multiple of "
                             f"evals_per_run ({self.evals_per_run})")
        if self.base_steps <= self.warmup_steps:
            raise ValueError(f"base_steps ({self.base_steps}) must exceed warmup_steps ({self.warmup_steps})")
        for depth in (*self.depths, *self.deep_depths):
            check_positive_int("depth", depth)
        if not self.spectra or not self.depths or not self.seeds:
            raise ValueError("spectra, depths and seeds must not be empty")

    @property
    def N(self) -> int:
        """The main runs' width ``width_factor · d``."""
        return self.width_factor * self.d

    def runs(self) -> list[RunSpec]:
        """Every run of the plan (main grid, then the deep depths and the contrasts)."""
        specs = [RunSpec("nonlinear", float(a), float(b), self.N, L, s, self.k) for a, b in self.spectra
                 for L in self.depths for s in self.seeds]
        if self.contrast_spectrum is not None:
            a, b = map(float, self.contrast_spectrum)
            specs += [RunSpec("nonlinear", a, b, self.N, L, s) for L in self.deep_depths for s in self.seeds]
            if self.width_factor != 1:
                specs += [RunSpec("nonlinear", a, b, self.d, L, s) for L in self.depths for s in self.seeds]
            specs += [RunSpec("nonlinear_rms", a, b, self.N, L, s) for L in self.depths for s in self.seeds]
        specs += [RunSpec("nonlinear", float(a), float(b), self.N, L, s, int(k)) for a, b, k in self.table4_spectra
                  for L in self.depths for s in self.seeds]
        return list(dict.fromkeys(specs))

    def confirm_specs(self) -> list[RunSpec]:
        """The runs of the doubling check (:attr:`confirm_depths`, every seed)."""
        if self.contrast_spectrum is None:
            return []
        a, b = map(float, self.contrast_spectrum)
        return [RunSpec("nonlinear", a, b, self.N, L, s) for L in self.confirm_depths if L in self.depths
                for s in self.seeds]

    def config(self, spec: RunSpec, steps: int) -> TrainConfig:
        """The :class:`~numerics.train.TrainConfig` of ``spec`` with a cap of ``steps`` (no early stop)."""
        return TrainConfig(
            model=spec.model, task="difficult", k=spec.k, a=spec.a, b=spec.b, d=self.d, N=spec.N, P=self.P,
            depth=spec.depth, seed=spec.seed, batch_size=self.batch_size, max_steps=steps,
            learning_rate=self.learning_rate, schedule=CONVERGED_STUDY["schedule"], warmup_steps=self.warmup_steps,
            eval_size=self.eval_size, eval_every=steps // self.evals_per_run,
            eval_seed=eval_seed_of(spec.a, spec.b, spec.k), tol=0.0, window=steps + 1, dtype=self.dtype,
        )

    def caps(self) -> list[int]:
        """The step caps of the attempts: ``base_steps · 2^i``, ``i = 0 … max_doublings``."""
        return [self.base_steps * 2**i for i in range(self.max_doublings + 1)]

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def eval_seed_of(a: float, b: float, k: int) -> int:
    """The held-out set's seed of ``(a, b, k)``, shared by every depth, seed, width and norm.

    Examples
    --------
    >>> eval_seed_of(0, 0, 2) == eval_seed_of(0.0, 0.0, 2), eval_seed_of(0, 0, 2) != eval_seed_of(0.5, 0, 2)
    (True, True)
    """
    return _text_seed(f"converged-study held-out a={float(a)!r} b={float(b)!r} k={int(k)}")


def _text_seed(text: str) -> int:
    """A 32-bit seed derived from ``text`` (stable across sessions and machines)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
