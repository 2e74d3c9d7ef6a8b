"""The population plan: each depth's heads trained jointly at population scale, and what it costs here.

Settling the trained side of the depth law needs every cell trained far beyond the revised study: batch 4096
fresh contexts, Adam decayed to 0, a ladder of step caps (20k / 40k / 80k), four starts, three seeds, selection
and report sets of 2^18 contexts. :data:`POPULATION_PLAN` is that design as a
:class:`~numerics.experiments.study.plan.Plan` (its engine JAX: the one a user with a GPU reaches for); it runs
through the certified study's runner and store, so it resumes like any plan. :func:`estimate` says what it costs
on the device found before anything trains: ``idepth study run population`` prints it and, on a CPU, refuses
without ``--force``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from theory.paper import TABLE1_SPECTRA

from ..recipes import CONVERGED_STUDY, Recipe
from ..shipped import checkout_root
from .plan import Plan

__all__ = ["POPULATION_PLAN", "POPULATION_RECIPE", "Estimate", "engine_of", "estimate", "step_seconds", "with_engine"]

#: the certified study's recipe (Adam, warm-up, cosine decay to 0) on the JAX engine: a recipe's overrides are
#: ``TrainConfig`` fields, so the engine travels with it into every candidate's config and the cells' hashes
POPULATION_RECIPE = Recipe("population", {**CONVERGED_STUDY.overrides, "engine": "jax"}, starts=CONVERGED_STUDY.starts,
                           description="the certified study's recipe on the JAX engine")

_DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128)
_STARTS = (("cold", CONVERGED_STUDY["learning_rate"]), ("oracle", 3e-4), ("nested", 3e-4), ("expressible", 3e-4))

#: The population plan. Table 1's seven spectra at the revised study's sizes (d = 16, N = 32, P = 64,
#: top-2), depths 1-128, three seeds; batch 4096 on the recipe's schedule (warm-up, cosine decay to 0); four starts
#: (cold at 1e-3; B_L's heads, the depth-L/2 winner and U_L's heads at 3e-4), each at a ladder of caps: 20k steps,
#: twice that (the step-doubling check) and 80k in every cell; selection and report sets of 2^18 contexts.
POPULATION_PLAN = Plan(
    name="population", recipe=POPULATION_RECIPE, depths=_DEPTHS, seeds=(0, 1, 2), side_seeds=(0, 1, 2), long_spectra=(),
    top16_spectra=(), doubling_spectra=(), batch_size=4096, cold_rates=(CONVERGED_STUDY["learning_rate"],),
    cold_steps=20_000, warm_rates=(3e-4,), warm_steps=20_000, expressible_rates=(3e-4,),
    doubled_kinds=_STARTS, long_caps=tuple((a, b, L) for a, b in TABLE1_SPECTRA for L in _DEPTHS),
    long_steps=(80_000,), long_kinds=_STARTS, select_size=1 << 18, report_size=1 << 18, report_block=256,
    min_eval_size=1 << 18,
)
#: FLOP of one layer's forward and backward pass per context, per unit of P·d·N: ≈ 8 kFLOP per layer and context
#: at d = 16, N = 32, P = 64 (the count the design was costed with), the fallback estimate's
_FLOP_PER_PDN = 0.25
#: the throughput the FLOP estimate assumes on an accelerator with no measured steps (small batched matrices)
_ASSUMED_FLOPS = 4e12


def engine_of(plan: Plan) -> str:
    """The engine ``plan``'s candidates train on: its recipe's ``engine`` (numpy when it names none).

    Examples
    --------
    >>> engine_of(POPULATION_PLAN), engine_of(Plan())
    ('jax', 'numpy')
    """
    return plan.recipe.get("engine", "numpy")


def with_engine(plan: Plan, engine: str) -> Plan:
    """``plan`` with its candidates on ``engine``: its recipe with ``engine`` over it (same name).

    Raises
    ------
    ValueError
        An unknown engine, or ``'jax'`` where jax is not installed (naming the extra to install).

    Examples
    --------
    >>> engine_of(with_engine(POPULATION_PLAN, "numpy"))
    'numpy'
    >>> with_engine(POPULATION_PLAN, "cuda")
    Traceback (most recent call last):
    ...
    ValueError: engine must be one of 'numpy', 'jax'; got 'cuda'
    """
    from numerics.engines import check_engine

    check_engine(engine, plan.model)
    recipe = dataclasses.replace(plan.recipe, overrides={**plan.recipe.overrides, "engine": engine})
    return dataclasses.replace(plan, recipe=recipe)


@dataclasses.dataclass(frozen=True)
class Estimate:
    """What a plan costs on one engine and device: hours, steps, and where the step time comes from.

    Examples
    --------
    >>> Estimate(engine="numpy", device="cpu", hours=2.0, steps=10, source="measured").line()
    'engine numpy on cpu: 10 training steps, about 2 h (measured)'
    """

    engine: str
    device: str
    hours: float
    steps: int
    source: str

    def line(self) -> str:
        """The estimate in one line, as the CLI prints it before a plan starts."""
        return f"engine {self.engine} on {self.device}: {self.steps:,} training steps, about {self.hours:,.0f} h ({self.source})"


def _measured(engine: str, device: str, root: Path | None) -> tuple[list, str] | None:
    """``([(L, batch, seconds per step)], source)`` of ``engine`` from the bench record of ``device``, else from one of
    its platform (a CPU's record for any CPU); None without a record of the platform."""
    if root is None:
        return None
    found = []
    for path in sorted((root / "benchmarks" / "results").glob("engine_*.json")):
        record = json.loads(path.read_text())
        env = record["environment"]
        rows = [(r["size"]["L"], r["size"]["batch"], r["engines"][engine]["cpu_ms_median"] / 1e3)
                for r in record["results"] if engine in r["engines"]]
        if rows:
            found.append((env.get("device") == device, env.get("platform") == device.split()[0], rows, env, path))
    if not found:
        return None
    same, platform, rows, env, path = max(found, key=lambda f: f[:2])
    if not platform:
        return None
    where = f"{env.get('device')}, {env.get('cpu_model')}"
    return rows, f"step times measured on {where} by benchmarks/bench_engine.py ({path.name})"


def step_seconds(plan: Plan, depth: int, rows: list) -> float:
    """Seconds of one step of ``plan`` at ``depth``: a line in the depth fitted to measured ``(L, batch, s)`` rows.

    The rows at the batch nearest the plan's are fitted (time = c0 + c1 L) and scaled to the plan's batch.

    Examples
    --------
    >>> plan = Plan(batch_size=100)
    >>> round(step_seconds(plan, 3, [(1, 100, 0.2), (5, 100, 0.6)]), 6)
    0.4
    """
    batch = min({b for _, b, _ in rows}, key=lambda b: abs(np.log(b / plan.batch_size)))
    L, t = np.array([(L, s) for L, b, s in rows if b == batch], dtype=float).T
    c1, c0 = np.polyfit(L, t, 1) if len(L) > 1 else (0.0, t[0])
    return float((c0 + c1 * depth) * plan.batch_size / batch)


def estimate(plan: Plan = POPULATION_PLAN, engine: str | None = None, device: str | None = None) -> Estimate:
    """The cost of training every candidate of ``plan`` with ``engine`` on ``device`` (default: those found).

    The step time comes from ``benchmarks/bench_engine.py``'s record for the device (a checkout's
    ``benchmarks/results/engine_*.json``; on a CPU without its own record, the recorded CPU's), fitted in the
    depth (:func:`step_seconds`); with no record for the platform, from a FLOP count at an assumed 4 TFLOP/s
    (said in :attr:`Estimate.source`). Evaluations are left out: a cell evaluates about 10^7 contexts against the 10^9
    its steps draw.

    Examples
    --------
    >>> e = estimate(POPULATION_PLAN.only([(0.0, 0.0)]), "numpy", "cpu")
    >>> e.steps > 10**7, e.hours > 100
    (True, True)
    """
    engine = engine or engine_of(plan)
    if device is None:
        from numerics.engines import jax_available

        if engine == "jax" and jax_available():
            from numerics.engines.jax_engine import device_description

            device = device_description()
        else:
            device = "cpu"
    steps_by_depth = {}
    for a, b, P, k in plan.settings():
        for depth in plan.depths:
            trained = sum(c.steps for c in plan.cell(a, b, P, depth, 0, parent="-", k=k).candidates if c.trained)
            steps_by_depth[depth] = steps_by_depth.get(depth, 0) + trained * len(plan.seeds_for(a, b, P, k))
    measured = _measured(engine, device, checkout_root())
    if measured is not None:
        rows, source = measured
        seconds = sum(n * step_seconds(plan, L, rows) for L, n in steps_by_depth.items())
    else:
        flop = _FLOP_PER_PDN * plan.P * plan.d * plan.N * plan.batch_size
        seconds = sum(n * flop * L / _ASSUMED_FLOPS for L, n in steps_by_depth.items())
        source = f"no measured steps for {device}: a FLOP count at an assumed {_ASSUMED_FLOPS / 1e12:g} TFLOP/s"
    return Estimate(engine, device, seconds / 3600, sum(steps_by_depth.values()), source)
