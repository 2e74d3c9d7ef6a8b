"""The one plan of a study: settings × depths × seeds × a recipe, and how each run or cell is evaluated.

A :class:`Plan` is either a *one-run* plan (:meth:`Plan.one_run`: one training run per spectrum, depth and seed
with its recipe and budget; the reproduction's families, :mod:`numerics.experiments.reproduce.scales`, and the
regime study's trained regimes, :mod:`numerics.experiments.study.regime_plans`) or a plan of *cells*, the
certified study's: per (:class:`~numerics.experiments.recipes.Setting`, depth, seed) a :class:`Cell` of
:class:`Candidate` runs from several starts, trained in lockstep (:mod:`numerics.experiments.study.run`).

Depth L of the controlled softmax model (a mixture of heads, paper eqs. 59-60) expresses every
depth-L/2 solution and every average of L cosine heads (the bound ``B_L``), so the best loss ``R*_L``
is sought from ``cold``, ``oracle`` (B_L's heads) and ``nested`` (the depth-L/2 winner, duplicated)
starts and proved by certificates, not read off one recipe. A cell's candidates train in lockstep;
the winner is chosen on the *selection* set and reported on an independent *report* set (no winner's
curse), both shared by a spectrum and P, so depths are paired.

The study (:data:`REVISED_PLAN`, the revised study: 168 cells in ``docs/results/certified-revised/cells``)
evaluates at population scale (2^16 contexts each), adds the theory's ``U_L`` heads (``expressible``, untrained
and trained) and diverse random-form heads (``diverse``) as starts, doubles the cap of several trained candidates
in every cell (the convergence check of every depth), runs longer caps at a few cells, and keeps each winner's
weights. The first study's 424 cells (``docs/results/certified/cells``) stay readable as data: their config dicts
simply lack the evaluation fields (:data:`CELL_FORMAT`), which then default to ``eval_size``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from numerics.config import TrainConfig
from theory.paper import INFERRED_SOFTMAX_SIZES, TABLE1_SPECTRA, table_spectra
from theory.validation import check_positive, check_positive_int

from ..recipes import CONVERGED_STUDY, Recipe, Setting, get_recipe

__all__ = ["CELL_FORMAT", "RECIPE", "REVISED_PLAN", "SIZE_GRID_D", "SIZE_GRID_P", "STARTS", "Candidate", "Cell",
           "Plan", "eval_seed", "shipped_U"]

#: the kinds of start a candidate may have: random initialisation, the heads of ``B_L``, the depth-L/2
#: winner duplicated, the heads of ``U_L`` (:func:`theory.expressible.shipped_expressible`), and L random
#: forms drawn from ``U_L``'s diffuse classes (with ``U_L``'s gain)
STARTS = ("cold", "oracle", "nested", "expressible", "diverse")
#: the format of a cell's dict, a hash input of every cell since the revised study (the first study's cells were
#: hashed without it and without ``select_size``, ``report_size`` and ``report_block``: read as data, they are not
#: rebuilt hash for hash)
CELL_FORMAT = 2
#: fields that travel with a cell to its worker but are not hashed (the hash already fixes what they hold)
_TRAVELLING = ("parent_params", "resume_dir")
#: the TrainConfig fields a cell and its candidate decide; every other field a recipe sets (schedule, Adam's
#: constants, ``init``, ``frozen``, ...) comes from the recipe
_CELL_DECIDES = frozenset({"model", "task", "k", "a", "b", "d", "N", "P", "depth", "seed", "batch_size", "max_steps",
                           "learning_rate", "warmup_steps", "eval_size", "eval_every", "eval_seed", "tol", "window",
                           "dtype", "start", "stream"})
#: the recipe every candidate of the shipped study trains with, by name: ``converged_study``
#: (:data:`~numerics.experiments.recipes.CONVERGED_STUDY`: Adam, batch, warm-up then cosine decay, held-out set,
#: evaluations per run); the plan varies its rates, caps and starts. Every row of the study's table carries it.
#: A plan with another recipe (``Plan.for_recipe``) hashes it into its cells; this one is left out of
#: the hash, so the shipped cells keep theirs
RECIPE = CONVERGED_STUDY.name
_RECIPE = CONVERGED_STUDY
#: the plateau checks' grid (:func:`~numerics.experiments.study.plateaus.infer_sizes`, ``idepth study sizes``): input
#: dimensions, and context lengths
SIZE_GRID_D = (8, 12, 16, 24, 32, 64)
SIZE_GRID_P = (32, 48, 64, 96, 128, 256, 1024)
#: the fields a one-run plan's :attr:`Plan.budget` holds (beside the plan's batch, warm-up, held-out size and dtype)
_RUN_FIELDS = ("max_steps", "learning_rate", "schedule", "init", "frozen", "eval_every", "tol", "window")
#: a one-run plan's run fields where neither its recipe nor its budget sets them
_RUN_DEFAULTS = MappingProxyType(dict(batch_size=64, max_steps=1000, learning_rate=None, schedule="warmup_cosine",
                                      warmup_steps=100, init=(), frozen=(), eval_size=1024, eval_every=100, tol=1e-3,
                                      window=None, dtype="float32"))
#: the fields only a one-run plan sets, at their defaults (left out of :meth:`Plan.to_dict` there)
_ONE_RUN = MappingProxyType(dict(name="", model="nonlinear", task="difficult", budget={}, regime=""))
_EVALS_PER_RUN = _RECIPE["max_steps"] // _RECIPE["eval_every"]


def eval_seed(role: str, a: float, b: float, k: int, P: int) -> int:
    """The seed of a held-out set: one per role (``'selection'``, ``'report'``), spectrum, ``k`` and ``P``.

    Examples
    --------
    >>> eval_seed("selection", 0, 0, 2, 64) != eval_seed("report", 0, 0, 2, 64)
    True
    """
    if role not in ("selection", "report"):
        raise ValueError(f"role must be 'selection' or 'report'; got {role!r}")
    text = f"certified-study {role} a={float(a)!r} b={float(b)!r} k={int(k)} P={int(P)}"
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


@dataclass(frozen=True)
class Candidate:
    """One candidate of a cell: its start, peak learning rate and step cap (0: the start itself).

    Examples
    --------
    >>> Candidate("oracle", 0.0, 0).label, Candidate("cold", 1e-3, 6000).label
    ('oracle (untrained)', 'cold lr=0.001 S=6000')
    """

    start: str
    learning_rate: float
    steps: int
    doubled: bool = False

    def __post_init__(self) -> None:
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}; got {self.start!r}")
        if self.steps == 0:
            if self.learning_rate != 0 or self.start == "cold":
                raise ValueError("an untrained candidate has learning_rate 0 and a warm start (oracle or nested); "
                                 f"got {self.start!r} at learning_rate={self.learning_rate!r}")
        else:
            check_positive_int("steps", self.steps)
            check_positive("learning_rate", self.learning_rate)

    @property
    def trained(self) -> bool:
        return self.steps > 0

    @property
    def label(self) -> str:
        if not self.trained:
            return f"{self.start} (untrained)"
        return f"{self.start} lr={self.learning_rate:g} S={self.steps}" + (" doubled" if self.doubled else "")


@dataclass(frozen=True)
class Cell:
    """One cell (the unit of the resumable store): a spectrum, P, depth and seed, and its candidates.

    ``parent``: the hash of the depth-L/2 cell whose winner the ``nested`` start duplicates; its weights
    travel with the config (``parent_params``, not hashed: the parent's hash fixes them). ``resume_dir``
    (not hashed either): where the cell's finished candidates are kept while it trains
    (:mod:`~numerics.experiments.study.certified.finished`), so an interrupted cell retrains only the others.

    Examples
    --------
    >>> cell = Plan(d=4, N=8, P=16, spectra=((0.0, 0.0),), long_spectra=(), top16_spectra=()).cell(0, 0, 16, 1, 0)
    >>> cell.depth, [c.start for c in cell.candidates][:3], len(cell.content_hash())
    (1, ['cold', 'cold', 'oracle'], 64)
    """

    a: float
    b: float
    k: int
    d: int
    N: int
    P: int
    depth: int
    seed: int
    candidates: tuple
    bound_depths: tuple
    batch_size: int = _RECIPE["batch_size"]
    warmup_steps: int = _RECIPE["warmup_steps"]
    evals_per_run: int = _EVALS_PER_RUN
    eval_size: int = _RECIPE["eval_size"]
    bound_contexts: int = 8192
    nested_noise: float = 1e-3
    dtype: str = "float32"
    stream: int = 2
    model: str = "nonlinear"
    parent: str | None = None
    select_size: int = 0
    report_size: int = 0
    report_block: int = 1
    recipe: dict | None = None
    parent_params: dict | None = field(default=None, compare=False, repr=False)
    resume_dir: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("select_size", "report_size"):  # 0 (or absent, a first-study cell): eval_size
            if getattr(self, name) == 0:
                object.__setattr__(self, name, self.eval_size)
        check_positive_int("report_block", self.report_block)
        if self.report_size % self.report_block:
            raise ValueError(f"report_block must divide report_size = {self.report_size}; got {self.report_block}")
        cands = tuple(c if isinstance(c, Candidate) else Candidate(**c) for c in self.candidates)
        object.__setattr__(self, "candidates", cands)
        object.__setattr__(self, "bound_depths", tuple(int(L) for L in self.bound_depths))
        if any(c.start == "nested" for c in cands) and self.parent is None:
            raise ValueError("a cell with nested candidates needs its parent (the depth-L/2 cell's hash)")
        if isinstance(self.recipe, Recipe):
            object.__setattr__(self, "recipe", None if self.recipe == _RECIPE else self.recipe.to_dict())
        self.recipe_value.check(self.model, self.d, self.N, {c.start for c in cands})

    @property
    def recipe_value(self) -> Recipe:
        """The recipe the candidates train with (``recipe`` None: the shipped study's)."""
        return _RECIPE if self.recipe is None else Recipe.from_dict(self.recipe)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _TRAVELLING}
        out["version"] = CELL_FORMAT
        if self.recipe is None:  # the shipped study's recipe: its cells were hashed without the field
            out.pop("recipe")
        out["candidates"] = [dataclasses.asdict(c) for c in self.candidates]
        out["bound_depths"] = list(self.bound_depths)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "Cell":
        """The cell of a config dict (a first-study dict, without ``version`` and the evaluation fields, too)."""
        version = data.get("version", 1)
        if version not in (1, CELL_FORMAT):
            raise ValueError(f"version must be 1 or {CELL_FORMAT} (the cell formats); got {version!r}")
        return cls(**{k: v for k, v in data.items() if k != "version"})

    def content_hash(self) -> str:
        from theory import __version__

        payload = json.dumps({"cell": self.to_dict(), "package_version": __version__}, sort_keys=True,
                             separators=(",", ":"), allow_nan=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def eval_seed(self, role: str) -> int:
        return eval_seed(role, self.a, self.b, self.k, self.P)

    def train_config(self, candidate: Candidate, start: dict | None) -> TrainConfig:
        """The ``TrainConfig`` of a trained candidate (evaluated on the selection set)."""
        steps = candidate.steps
        from_recipe = {k: v for k, v in self.recipe_value.train_fields().items() if k not in _CELL_DECIDES}
        return TrainConfig(
            model=self.model, task="difficult", k=self.k, a=self.a, b=self.b, d=self.d, N=self.N, P=self.P,
            depth=self.depth, seed=self.seed, batch_size=self.batch_size, max_steps=steps,
            learning_rate=candidate.learning_rate, warmup_steps=self.warmup_steps,
            eval_size=self.eval_size, eval_every=max(1, steps // self.evals_per_run),
            eval_seed=self.eval_seed("selection"), tol=0.0, window=steps + 1, dtype=self.dtype, start=start,
            stream=self.stream, **from_recipe,
        )


@dataclass(frozen=True)
class Plan:
    """Every choice of the certified study (the paper states none of them).

    Attributes
    ----------
    d, N, P, k : int
        Sizes: d = 16, P = 64 where the paper's plateaus put them (``idepth study sizes``); N = 2d > d
        so the oracle heads exist with LayerNorm.
    spectra, depths, seeds : tuple
        Table 1's seven (a, b); powers of two from 1 (each depth nests the one before); the seeds of
        these main settings: five, where ``benchmarks/certified_coverage.py`` finds the α interval's
        power at least 0.85 at six of the seven spectra (three seeds: as low as 0.06) in studies simulated
        from the law ``c (1 − L^-α)`` (it says nothing where the law does not describe the gains).
    side_seeds : tuple
        The seeds of the other settings (second P, top-16), which check that a verdict does not hang
        on P or k rather than give one of their own.
    cold_rates, cold_steps, warm_rates, warm_steps
        Learning rates and step caps of the cold start (the (0, 0) L = 1 model reaches its bound in
        about 6000 steps at 1e-3) and of the warm ones, which only refine an expressible solution (at
        1e-3 one started at the heads drifts up); the step-doubling certificate checks the caps.
    nested_noise : float
        Relative size of the perturbation that breaks the symmetry of duplicated layers.
    doubling_spectra, long_P, long_spectra, top16_spectra
        Where every trained candidate is also trained at twice its cap; a second context length at
        some spectra (the verdict should not hang on one inferred P); Table 4's top-16 rows at ``P``.
    batch_size, warmup_steps, evals_per_run, eval_size, bound_contexts, dtype, stream
        Adam on fresh batches of the sampler's stream 2, warm-up then cosine decay to 0; held-out sets
        of ``eval_size`` contexts; ``B_L``'s allocation fitted on ``bound_contexts`` contexts.
    select_size, report_size, report_block
        Contexts of the selection and report sets (0: ``eval_size``) and how many report contexts each
        stored column averages (1: per context). Blocks are the same contexts in every cell of a spectrum
        and P, so a bootstrap over blocks keeps the pairing of depths and seeds.
    expressible_rates, diverse_rates, diverse_steps
        Learning rates of the trained ``U_L`` start (at ``warm_steps``) and of the diverse start (at
        ``diverse_steps``); empty: no such candidate. Only where ``U_L`` is shipped (d, P, k).
    doubled_kinds
        ``(start, learning_rate)`` pairs whose trained candidates every cell also trains at twice the cap.
    long_caps, long_steps, long_kinds
        Cells ``(a, b, depth)`` that also train ``long_kinds`` at each cap of ``long_steps``.
    min_eval_size : int
        The least selection and report set the plan accepts (:data:`REVISED_PLAN`: 2^16, population scale).
    recipe : Recipe or str
        How every run trains (:mod:`numerics.experiments.recipes`); its start kinds are the plan's.
    name, model, task, budget, regime
        A one-run plan's (:meth:`one_run`): its name (a reproduction's family, a study's regime), model and task,
        the run fields over its recipe (:data:`_RUN_FIELDS`) and its training in one line (the report prints it).

    Examples
    --------
    >>> plan = Plan(spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,), long_spectra=(), top16_spectra=())
    >>> [c.label for c in plan.candidates(2)][2:]
    ['oracle (untrained)', 'oracle lr=0.0003 S=3000', 'nested (untrained)', 'nested lr=0.0003 S=3000']
    """

    d: int = INFERRED_SOFTMAX_SIZES["d"]
    N: int = INFERRED_SOFTMAX_SIZES["N"]
    P: int = INFERRED_SOFTMAX_SIZES["P"]
    k: int = 2
    spectra: tuple = TABLE1_SPECTRA
    depths: tuple = (1, 2, 4, 8, 16, 32, 64, 128)
    seeds: tuple = (0, 1, 2, 3, 4)
    side_seeds: tuple = (0, 1, 2)
    cold_rates: tuple = (3e-4, _RECIPE["learning_rate"])
    cold_steps: int = _RECIPE["max_steps"]
    warm_rates: tuple = (3e-4,)
    warm_steps: int = 3000
    nested_noise: float = 1e-3
    doubling_spectra: tuple = ((0.0, 0.0),)
    long_P: int = 128
    long_spectra: tuple = ((0.0, 0.0), (0.0, 0.5))
    top16_spectra: tuple = table_spectra("table4", k=16)
    batch_size: int = _RECIPE["batch_size"]
    warmup_steps: int = _RECIPE["warmup_steps"]
    evals_per_run: int = _EVALS_PER_RUN
    eval_size: int = _RECIPE["eval_size"]
    bound_contexts: int = 8192
    dtype: str = "float32"
    stream: int = 2
    select_size: int = 0
    report_size: int = 0
    report_block: int = 1
    expressible_rates: tuple = ()
    diverse_rates: tuple = ()
    diverse_steps: int = _RECIPE["max_steps"]
    doubled_kinds: tuple = ()
    long_caps: tuple = ()
    long_steps: tuple = ()
    long_kinds: tuple = ()
    min_eval_size: int = 0
    recipe: Recipe = _RECIPE
    name: str = ""
    model: str = "nonlinear"
    task: str = "difficult"
    budget: Mapping | None = None  # None: {} (a plain default keeps the signature parseable for the docs)
    regime: str = ""

    def __new__(cls, *args, **fields):
        # an unknown field is a ValueError naming it (the dataclass's own __init__ would raise a TypeError)
        unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"Plan has no field {', '.join(map(repr, unknown))}")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        object.__setattr__(self, "recipe", get_recipe(self.recipe))
        if any(len(tuple(pair)) != 2 for pair in self.spectra):
            raise ValueError(f"spectra must be (a, b) pairs (eq. 2); got {self.spectra!r}")
        object.__setattr__(self, "spectra", tuple((float(a), float(b)) for a, b in self.spectra))
        unknown = [kind for kind in self.recipe.starts if kind not in (*STARTS, "gamma_star")]
        if unknown:
            raise ValueError(f"recipe: a plan has no {', '.join(map(repr, unknown))} start (recipe "
                             f"{self.recipe.name!r}; it runs {', '.join(STARTS)} and gamma_star)")
        for key in self.budget or {}:
            if key not in _RUN_FIELDS:
                raise ValueError(f"budget: {key!r} is not a run field ({', '.join(_RUN_FIELDS)})")
        object.__setattr__(self, "budget", MappingProxyType(dict(self.budget or {})))
        for name in ("d", "N", "P", "k", "cold_steps", "warm_steps", "batch_size", "eval_size", "bound_contexts",
                     "diverse_steps", "report_block"):
            check_positive_int(name, getattr(self, name))
        for name in ("select_size", "report_size"):
            if getattr(self, name) == 0:
                object.__setattr__(self, name, self.eval_size)
            check_positive_int(name, getattr(self, name))
            if getattr(self, name) < self.min_eval_size:
                raise ValueError(f"{name} = {getattr(self, name)} is smaller than the plan's minimum evaluation set "
                                 f"(min_eval_size = {self.min_eval_size})")
        if self.report_size % self.report_block:
            raise ValueError(f"report_block must divide report_size = {self.report_size}; got {self.report_block}")
        for start, lr in tuple(self.doubled_kinds) + tuple(self.long_kinds):
            if start not in STARTS:
                raise ValueError(f"doubled_kinds/long_kinds: start must be one of {', '.join(STARTS)}; got {start!r}")
            check_positive("learning_rate", lr)
        for steps in self.long_steps:
            check_positive_int("long_steps", steps)
        depths = tuple(int(L) for L in self.depths)
        if not depths or "nested" in self.recipe.starts and (
                depths[0] != 1 or any(b != 2 * a for a, b in zip(depths, depths[1:]))):
            raise ValueError(f"depths must be 1, 2, 4, ... (each the double of the one before); got {self.depths}")
        for rates in (self.cold_rates, self.warm_rates, self.expressible_rates, self.diverse_rates):
            for lr in rates:
                check_positive("learning_rate", lr)
        for name in ("spectra", "seeds", "side_seeds"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")
        for a, b, P, k in self.settings():
            Setting(self.model, a, b, k=k, d=self.d, N=self.N, P=P).check(self.recipe, self.starts())

    def __hash__(self) -> int:  # the budget is a read-only mapping: hashed by its items
        return hash(tuple(tuple(sorted(self.budget.items())) if f.name == "budget" else getattr(self, f.name)
                          for f in dataclasses.fields(self)))

    @classmethod
    def for_recipe(cls, recipe: Recipe | str, **fields) -> "Plan":
        """A plan whose candidates train with ``recipe``: its batch, warm-up, held-out size and evaluations, and its
        learning rate and step cap for the cold and warm starts (``fields`` override any of them).

        Examples
        --------
        >>> from numerics.experiments.recipes import Recipe
        >>> r = Recipe("short", {"learning_rate": 2e-3, "max_steps": 40, "schedule": "constant"}, starts=("cold",))
        >>> plan = Plan.for_recipe(r, d=4, N=8, P=16, spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,),
        ...                                 long_spectra=(), top16_spectra=())
        >>> [c.label for c in plan.candidates(2)], plan.cell(0, 0, 16, 2, 0, parent="p").recipe["name"]
        (['cold lr=0.002 S=40'], 'short')
        """
        recipe = get_recipe(recipe)
        derived = {}
        for name in ("batch_size", "warmup_steps", "eval_size"):
            if name in recipe:
                derived[name] = recipe[name]
        if "learning_rate" in recipe:
            derived.update(cold_rates=(recipe["learning_rate"],), warm_rates=(recipe["learning_rate"],))
        if recipe.max_steps is not None:
            derived.update(cold_steps=recipe.max_steps, warm_steps=recipe.max_steps, diverse_steps=recipe.max_steps)
            if "eval_every" in recipe:
                derived["evals_per_run"] = max(1, recipe.max_steps // recipe["eval_every"])
        return cls(**{**derived, **fields, "recipe": recipe})

    def starts(self, depth: int | None = None) -> tuple:
        """The start kinds of the plan's cells (at ``depth``: nested needs a depth-L/2 parent): the recipe's."""
        kinds = [kind for kind in (*STARTS, "gamma_star") if kind in self.recipe.starts]
        if depth == 1:
            kinds = [kind for kind in kinds if kind != "nested"]
        if not (self.expressible_rates or self.diverse_rates):
            kinds = [kind for kind in kinds if kind not in ("expressible", "diverse")]
        return tuple(kinds)

    def candidates(self, depth: int, *, doubled: bool = False, expressible: bool = False,
                   long: bool = False) -> list[Candidate]:
        """The candidates of a cell at ``depth``.

        ``doubled``: every trained candidate also at twice its cap (at :attr:`doubling_spectra`);
        ``expressible``: ``U_L`` is shipped for the cell's setting (its ``expressible`` and ``diverse``
        starts); ``long``: the cell is one of :attr:`long_caps`.
        """
        allowed = set(self.starts(depth))
        out = [Candidate("cold", lr, self.cold_steps) for lr in self.cold_rates] if "cold" in allowed else []
        warm = ["oracle"] + (["nested"] if depth > 1 else []) + (["expressible"] if expressible else [])
        for start in (kind for kind in warm if kind in allowed):
            out.append(Candidate(start, 0.0, 0))
            rates = self.expressible_rates if start == "expressible" else self.warm_rates
            out += [Candidate(start, lr, self.warm_steps) for lr in rates]
        if expressible and "diverse" in allowed:
            out += [Candidate("diverse", lr, self.diverse_steps) for lr in self.diverse_rates]
        if long:
            out += [Candidate(start, lr, steps) for start, lr in self.long_kinds for steps in self.long_steps
                    if (start != "expressible" or expressible) and start in allowed]
        if doubled:
            out += [dataclasses.replace(c, steps=2 * c.steps, doubled=True) for c in out if c.trained]
        elif self.doubled_kinds:
            kinds = {(start, float(lr)) for start, lr in self.doubled_kinds}
            out += [dataclasses.replace(c, steps=2 * c.steps, doubled=True) for c in out
                    if c.trained and (c.start, c.learning_rate) in kinds and c.steps not in self.long_steps]
        return out

    def only(self, spectra=None) -> "Plan":
        """This plan restricted to ``spectra`` (a sequence of (a, b), in that order; None: all of them).

        Raises
        ------
        ValueError
            A spectrum the plan does not hold (naming ``--spectra`` and the plan's spectra).

        Examples
        --------
        >>> REVISED_PLAN.only([(0, 0.5)]).spectra
        ((0.0, 0.5),)
        >>> REVISED_PLAN.only([(2, 0)])
        Traceback (most recent call last):
        ...
        ValueError: --spectra: 2,0 not in the plan's spectra (0,0; 0,0.25; 0,0.5; 0,1; 0.25,0; 0.5,0; 1,0)
        """
        if spectra is None:
            return self
        wanted = tuple((float(a), float(b)) for a, b in spectra)
        known = {(float(a), float(b)) for a, b in self.spectra}
        unknown = [f"{a:g},{b:g}" for a, b in wanted if (a, b) not in known]
        if unknown:
            raise ValueError(f"--spectra: {'; '.join(unknown)} not in the plan's spectra "
                             f"({'; '.join(f'{a:g},{b:g}' for a, b in self.spectra)})")
        return dataclasses.replace(self, spectra=wanted)

    def depth_prefix(self, depths) -> tuple:
        """``depths`` as a tuple, checked to be a prefix of the plan's depths (a run that stops after them).

        Examples
        --------
        >>> REVISED_PLAN.depth_prefix([1, 2, 4])
        (1, 2, 4)
        >>> REVISED_PLAN.depth_prefix([2, 4])
        Traceback (most recent call last):
        ...
        ValueError: --depths must be a prefix of 1,2,4,8,16,32,64,128; got 2,4
        """
        depths = tuple(int(L) for L in depths)
        if not depths or depths != tuple(self.depths[: len(depths)]):
            raise ValueError(f"--depths must be a prefix of {','.join(map(str, self.depths))}; "
                             f"got {','.join(map(str, depths))}")
        return depths

    def settings(self) -> list[tuple[float, float, int, int]]:
        """Every (a, b, P, k) of the study: the main P first, then the second P, then top-16."""
        main = [(float(a), float(b), self.P, self.k) for a, b in self.spectra]
        longer = [(float(a), float(b), self.long_P, self.k) for a, b in self.long_spectra]
        return main + longer + [(float(a), float(b), self.P, 16) for a, b in self.top16_spectra]

    def is_main(self, a: float, b: float, P: int, k: int) -> bool:
        """Whether (a, b, P, top-``k``) is a main setting: a Table 1 spectrum at the plan's P and k.

        Examples
        --------
        >>> Plan().is_main(0.0, 0.25, 64, 2), Plan().is_main(0.0, 0.25, 64, 16)
        (True, False)
        """
        spectrum = (float(a), float(b))
        return spectrum in {(float(x), float(y)) for x, y in self.spectra} and int(P) == self.P and int(k) == self.k

    def seeds_for(self, a: float, b: float, P: int, k: int) -> tuple:
        """The seeds of the setting (a, b, P, top-``k``): :attr:`seeds` for a main one, else :attr:`side_seeds`.

        Examples
        --------
        >>> plan = Plan()
        >>> len(plan.seeds_for(0.0, 0.0, 64, 2)), len(plan.seeds_for(0.0, 0.0, 128, 2))
        (5, 3)
        """
        return self.seeds if self.is_main(a, b, P, k) else self.side_seeds

    def cell(self, a: float, b: float, P: int, depth: int, seed: int, parent: str | None = None, k: int | None = None
             ) -> Cell:
        """The cell of (a, b, P, depth, seed) at top-``k`` (default the plan's); ``parent``: its parent's hash."""
        k = self.k if k is None else int(k)
        doubled = ((float(a), float(b)) in {(float(x), float(y)) for x, y in self.doubling_spectra} and P == self.P
                   and k == self.k)
        long = (float(a), float(b), int(depth)) in {(float(x), float(y), int(L)) for x, y, L in self.long_caps}
        expressible = bool(self.expressible_rates or self.diverse_rates) and shipped_U(
            a, b, self.d, P, k) is not None
        return Cell(
            a=float(a), b=float(b), k=k, d=self.d, N=self.N, P=int(P), depth=int(depth), seed=int(seed),
            candidates=tuple(self.candidates(depth, doubled=doubled, expressible=expressible, long=long)),
            bound_depths=self.depths, batch_size=self.batch_size, warmup_steps=self.warmup_steps,
            evals_per_run=self.evals_per_run, eval_size=self.eval_size, bound_contexts=self.bound_contexts,
            nested_noise=self.nested_noise, dtype=self.dtype, stream=self.stream,
            parent=parent if depth > 1 else None, select_size=self.select_size,
            report_size=self.report_size, report_block=self.report_block, recipe=self.recipe,
        )

    def to_dict(self) -> dict:
        """The plan's fields (the recipe's definition only where it is not the shipped study's; a one-run plan's
        fields only where set: the shipped table's provenance predates them)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if f.name != "recipe" and (f.name not in _ONE_RUN or getattr(self, f.name) != _ONE_RUN[f.name])}
        if "budget" in out:
            out["budget"] = dict(self.budget)
        if self.recipe != _RECIPE:
            out["recipe"] = self.recipe.to_dict()
        return out

    # a one-run plan (a reproduction's family, a regime of the regime study): one run per setting, depth and seed
    # with the recipe's fields and the plan's budget over them

    def config(self, a: float, b: float, depth: int, seed: int) -> TrainConfig:
        """The :class:`numerics.train.TrainConfig` of one run of a one-run plan (its :attr:`budget` set).

        A recipe with the ``gamma_star`` start (linear attention) starts every depth at the constrained optimum
        of paper eq. (33), ``B_ℓ ≈ (L/λ_1) I`` (``qk_scale = N L/c_λ``).

        Examples
        --------
        >>> from numerics.experiments.recipes import LAZY
        >>> plan = Plan.one_run("demo", LAZY, d=4, N=4, P=8, spectra=((0.0, 0.0),), depths=(1, 2), seeds=(0,),
        ...                     max_steps=10)
        >>> cfg = plan.config(0.0, 0.0, 2, 0)
        >>> cfg.depth, cfg.max_steps, cfg.learning_rate, len(plan.configs())
        (2, 10, 0.0001, 2)
        """
        init = dict(self.init)
        if "gamma_star" in self.recipe.starts:
            init["qk_scale"] = float(self.N * int(depth))  # B_ℓ ≈ (qk_scale/N) I = (L/λ_1) I, λ_1 = c_λ = 1 (eq. 33)
        window = self.budget.get("window")
        fields = dict(
            model=self.model, task=self.task, k=self.k, a=float(a), b=float(b), d=self.d, N=self.N, P=self.P,
            depth=int(depth), seed=int(seed), batch_size=self.batch_size, max_steps=self.max_steps,
            learning_rate=self.learning_rate, schedule=self.schedule, warmup_steps=self.warmup_steps,
            init=init, eval_size=self.eval_size, eval_every=self.eval_every, tol=self.budget["tol"],
            window=window if window is not None else self.max_steps + self.eval_every, dtype=self.dtype,
        )
        if self.frozen:
            fields["frozen"] = tuple(self.frozen)
        return TrainConfig(**fields)

    def configs(self) -> tuple:
        """Every run of a one-run plan: spectra × depths × seeds, in that nesting order."""
        return tuple(self.config(a, b, L, seed) for a, b in self.spectra for L in self.depths for seed in self.seeds)

    @property
    def n_runs(self) -> int:
        """Number of runs of a one-run plan (spectra × depths × seeds)."""
        return len(self.spectra) * len(self.depths) * len(self.seeds)

    learning_rate = property(lambda self: self.budget.get("learning_rate"), doc="A one-run plan's peak rate.")
    schedule = property(lambda self: self.budget.get("schedule"), doc="A one-run plan's schedule.")
    max_steps = property(lambda self: self.budget.get("max_steps"), doc="A one-run plan's step cap.")
    eval_every = property(lambda self: self.budget.get("eval_every"), doc="A one-run plan's evaluation period.")
    init = property(lambda self: self.budget.get("init", ()), doc="A one-run plan's ``init`` as sorted pairs.")
    frozen = property(lambda self: self.budget.get("frozen", ()), doc="A one-run plan's frozen parameters.")

    @classmethod
    def one_run(cls, name: str, recipe: Recipe | str, *, d: int, N: int, P: int, spectra, depths, seeds,
                model: str = "nonlinear", task: str = "difficult", k: int = 2, regime: str = "", **budget) -> "Plan":
        """A plan of one run per (spectrum, depth, seed): ``recipe``'s fields with ``budget`` over them.

        ``budget``: :data:`_RUN_FIELDS` and ``batch_size``, ``warmup_steps``, ``eval_size``, ``dtype``; a field
        neither sets keeps the run default (batch 64, 1000 steps, the model's rate, warm-up 100 then cosine
        decay, 1024 held-out contexts every 100 steps, tolerance 1e-3, no early stop). ``init``: ``{}`` or
        ``()`` is the model's default initialisation.

        Examples
        --------
        >>> from numerics.experiments.recipes import LAZY
        >>> plan = Plan.one_run("demo", LAZY, d=4, N=4, P=8, spectra=((0.0, 0.0),), depths=(1,), seeds=(0,))
        >>> plan.max_steps, plan.batch_size, plan.frozen, plan.init
        (1000, 64, ('W_o', 'W_v', 'W_y'), (('qk_noise', 0.5), ('qk_scale', 0.6)))
        """
        fields = {**_RUN_DEFAULTS, **get_recipe(recipe).train_fields(), **budget}
        fields["init"] = tuple(sorted(dict(fields["init"]).items()))
        fields["frozen"] = tuple(fields["frozen"])
        own = {key: fields.pop(key) for key in ("batch_size", "warmup_steps", "eval_size", "dtype")}
        return cls(name=name, recipe=recipe, model=model, task=task, k=k, d=d, N=N, P=P, spectra=spectra,
                   depths=tuple(depths), seeds=tuple(seeds), long_spectra=(), top16_spectra=(), budget=fields,
                   regime=regime, **own)

    def describe(self) -> str:
        """One line: model, task, sizes, grid and recipe of a one-run plan (for the schedule and the report).

        Examples
        --------
        >>> from numerics.experiments.recipes import LAZY
        >>> Plan.one_run("demo", LAZY, d=4, N=4, P=8, spectra=((0.0, 0.0),), depths=(1,), seeds=(0,)).describe()[:40]
        'nonlinear, difficult task, k = 2; d = 4,'
        """
        lr = "model default" if self.learning_rate is None else f"{self.learning_rate:g}"
        frozen = ", frozen " + "/".join(self.frozen) if self.frozen else ""
        init = ", init " + ", ".join(f"{k}={v}" for k, v in self.init) if self.init else ""
        if "gamma_star" in self.recipe.starts:
            init += ", start at γ* = L/λ_1 (eq. 33)"
        return (
            f"{self.model}, {self.task} task" + (f", k = {self.k}" if self.task == "difficult" else "")
            + f"; d = {self.d}, N = {self.N}, P = {self.P}; L ∈ {{{', '.join(map(str, self.depths))}}}; "
            f"{len(self.seeds)} seed(s); {len(self.spectra)} spectra; Adam {lr}, {self.schedule}, "
            f"{self.max_steps} steps × batch {self.batch_size}{init}{frozen}"
        )


def shipped_U(a: float, b: float, d: int, P: int, k: int, *, needed_by: str | None = None):
    """The shipped ``U_L`` of the setting (:func:`theory.expressible.shipped_expressible`); None where none is.

    With ``needed_by`` (what needs it), a setting without one is a ``ValueError`` naming the setting and that.

    Examples
    --------
    >>> shipped_U(0.0, 0.0, 16, 64, 2) is not None, shipped_U(0.0, 0.0, 16, 128, 2)
    (True, None)
    >>> shipped_U(0.0, 0.0, 16, 128, 2, needed_by="the diverse start")
    Traceback (most recent call last):
    ...
    ValueError: no shipped U_L at a=0 b=0 d=16 P=128 k=2: the diverse start needs one (`idepth expressible run`)
    """
    from theory import PowerLawSpectrum
    from theory.expressible import shipped_expressible

    found = shipped_expressible(PowerLawSpectrum(float(a), float(b), int(d)), int(P), int(k))
    if found is None and needed_by:
        raise ValueError(f"no shipped U_L at a={a:g} b={b:g} d={d} P={P} k={k}: {needed_by} needs one "
                         "(`idepth expressible run`)")
    return found


#: The certified study's plan, the revised study (issue: the verdicts that follow the evidence). Table 1's seven spectra at the main
#: sizes, three seeds, depth 1-128. Selection and report sets of 2^16 contexts each (the paired SE of the
#: L = 2 step about 0.003; report columns are means of 64 contexts, 1024 per cell). Beside the first study's
#: starts: U_L's heads untrained and trained at 3e-4, diverse random forms of U_L's classes trained at
#: 3e-4 for 6000 steps, and the cold (1e-3), nested and U_L candidates also at twice their caps in every
#: cell (each depth's convergence check). At (0, 0) and (0, 0.25), L = 4 and 16, the cold (1e-3) and U_L
#: starts also train for 24k and 48k steps: does any depth-4-32 model go below U_L?
REVISED_PLAN = Plan(
    seeds=(0, 1, 2), long_spectra=(), top16_spectra=(), doubling_spectra=(),
    select_size=1 << 16, report_size=1 << 16, report_block=64, min_eval_size=1 << 16,
    expressible_rates=(3e-4,), diverse_rates=(3e-4,),
    doubled_kinds=(("cold", _RECIPE["learning_rate"]), ("nested", 3e-4), ("expressible", 3e-4)),
    long_caps=((0.0, 0.0, 4), (0.0, 0.0, 16), (0.0, 0.25, 4), (0.0, 0.25, 16)),
    long_steps=(24000, 48000), long_kinds=(("cold", _RECIPE["learning_rate"]), ("expressible", 3e-4)),
)
