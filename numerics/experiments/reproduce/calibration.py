"""The run-time estimate on this machine: the plan's costliest kinds of run are timed, whole and shortened.

The cost model (:func:`~numerics.experiments.reproduce.plan.estimate_run_seconds`) gives CPU seconds on the
machine it was fitted on, and its error depends on the size of the run (on an AVX2 core a batch-32 softmax
step runs at about half the model's speed, its fixed second per run is a few tenths, and a P = 512 linear
evaluation costs several steps, not a third of one). So :func:`calibrate` does not scale the model by one
number: it groups the plan's runs by their shape (:func:`run_shape`: everything that fixes a run's cost
except its step count), and for the costliest shapes (:func:`timed_shapes`) trains one run of each twice, for
one and for two evaluation intervals, in as many child processes as the workers that will train them
(:func:`time_runs`). A run of the shape then costs the first plus one interval's increment per further
interval (:class:`RunTiming`). Runs of shapes not timed are the cost model's seconds divided by their
engine's speed, the ratio of the cost model to the measurements over the timed shapes (or, where an engine
has none, over a few timed steps, :func:`measure_speeds`). :func:`calibrated_estimate` adds them up.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from numerics.models import get_model

from ..execution import usable_cores
from .plan import Schedule, analysis_seconds, duration_text, estimate_run_seconds, step_milliseconds

__all__ = ["CALIBRATION_SIZES", "Calibration", "RunTiming", "calibrate", "calibrated_estimate", "format_estimate",
           "machine_description", "measure_speeds", "other_load", "run_shape", "simd_level", "time_runs",
           "timed_shapes"]

#: the sizes whose steps are timed for an engine that has no timed run shape (:func:`measure_speeds`): fitting
#: points of the cost model, flat spectra, float32
CALIBRATION_SIZES = {
    "linear": dict(model="linear", task="difficult", d=128, N=128, P=1024, depth=2, batch_size=128),
    "softmax": dict(model="nonlinear", task="difficult", d=16, N=32, P=64, depth=16, batch_size=256),
}
#: steps per repeat (after as many warm-up steps); the best of ``repeats`` repeats is kept
_STEPS = {"linear": 2, "softmax": 40}

#: numpy's SIMD targets, best first, with the family they belong to
_SIMD_LEVELS = (
    ("AVX512_SPR", "AVX-512"), ("AVX512_ICL", "AVX-512"), ("AVX512_CNL", "AVX-512"), ("AVX512_CLX", "AVX-512"),
    ("AVX512_SKX", "AVX-512"), ("X86_V4", "AVX-512"), ("AVX512F", "AVX-512"), ("X86_V3", "AVX2"), ("AVX2", "AVX2"),
    ("AVX", "AVX"), ("X86_V2", "SSE4.2"), ("SSE42", "SSE4.2"), ("SVE", "SVE"), ("ASIMD", "NEON"), ("VSX", "VSX"),
)


def simd_level() -> str:
    """The best SIMD target numpy dispatches to on this CPU, e.g. ``'AVX-512 (AVX512_ICL)'``.

    Only numpy's baseline and dispatch targets count, and only those enabled: with
    ``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR"`` on an AVX-512 CPU numpy runs its AVX2 kernels,
    and this says ``'AVX2 (X86_V3)'`` although the CPU still reports the other AVX-512 extensions.

    Examples
    --------
    >>> isinstance(simd_level(), str)
    True
    """
    import importlib

    for module in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):  # numpy >= 2, numpy < 2
        try:
            umath = importlib.import_module(module)
        except ImportError:
            continue
        return simd_level_of(set(umath.__cpu_baseline__) | set(umath.__cpu_dispatch__), umath.__cpu_features__)
    return "unknown SIMD"


def simd_level_of(targets, features) -> str:
    """The best of numpy's ``targets`` that ``features`` enables, named with its family.

    Examples
    --------
    >>> simd_level_of({"X86_V2", "X86_V3", "X86_V4", "AVX512_ICL"}, {"X86_V3": True, "X86_V4": False, "AVX512_CNL": True})
    'AVX2 (X86_V3)'
    >>> simd_level_of({"X86_V2", "X86_V3"}, {})
    'no SIMD extension'
    """
    for name, family in _SIMD_LEVELS:
        if name in targets and features.get(name):
            return f"{family} ({name})"
    return "no SIMD extension"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def machine_description() -> str:
    """Cores, CPU and SIMD level: ``'2 cores, AMD EPYC, AVX-512 (AVX512_ICL)'``.

    Examples
    --------
    >>> "cores" in machine_description() or "core," in machine_description()
    True
    """
    cores = usable_cores()
    return f"{cores} core{'s' if cores != 1 else ''}, {_cpu_name()}, {simd_level()}"


@dataclass(frozen=True)
class RunTiming:
    """The measured CPU seconds of one run shape (:func:`run_shape`) here.

    Attributes
    ----------
    eval_every : int
        The shape's evaluation interval E.
    first : float
        A run of E steps: setting up (weights, the held-out set), E steps, its evaluations and the final
        diagnostics.
    interval : float
        Each further E steps and their evaluation (a run of 2E steps minus ``first``).

    Examples
    --------
    >>> RunTiming(eval_every=100, first=0.4, interval=0.1).seconds(1000)
    1.3
    """

    eval_every: int
    first: float
    interval: float

    def seconds(self, max_steps: int) -> float:
        """CPU seconds of a run of ``max_steps`` steps (one that stops early costs less)."""
        return round(self.first + max(0.0, max_steps / self.eval_every - 1.0) * self.interval, 12)


@dataclass(frozen=True)
class Calibration:
    """This machine's speed relative to the cost model's machine, and its measured run shapes.

    Attributes
    ----------
    speeds : dict of str to float
        ``{"softmax": s, "linear": s}``: cost-model over measured CPU time, per engine (over its timed run
        shapes, or a few timed steps where it has none).
    load : float or None
        Processes of other jobs running when the calibration began (:func:`other_load`); ``seconds``: the
        calibration's wall time.
    runs : dict of tuple to RunTiming
        ``{run_shape(config): timing}`` of the shapes timed whole (empty when only steps were timed).

    Examples
    --------
    >>> c = Calibration({"softmax": 0.5, "linear": 1.0}, "2 cores, CPU, AVX2", 0.1, 3.0)
    >>> c.speed_of("linear"), c.speed_of("nonlinear"), round(c.speed, 2)
    (1.0, 0.5, 0.71)
    """

    speeds: dict
    machine: str
    load: float | None
    seconds: float
    runs: dict = field(default_factory=dict)

    @property
    def speed(self) -> float:
        """The geometric mean of the engines' speeds (one number to quote)."""
        return math.prod(self.speeds.values()) ** (1.0 / len(self.speeds))

    def speed_of(self, model: str) -> float:
        """The speed of the engine (``ATTENTION``) that runs ``model``."""
        return self.speeds[get_model(model).ATTENTION]

    def run_seconds(self, config) -> float:
        """CPU seconds of ``config`` here: its shape's timing (interpolated in depth between two timed depths
        of its family), else the cost model over its engine's speed.

        Examples
        --------
        >>> from numerics.train import TrainConfig
        >>> def run(depth):
        ...     return TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=depth, max_steps=300, eval_every=100)
        >>> timed = {run_shape(run(1)): RunTiming(100, 1.0, 0.5), run_shape(run(5)): RunTiming(100, 3.0, 1.5)}
        >>> c = Calibration({"softmax": 0.5, "linear": 1.0}, "", None, 0.0, runs=timed)
        >>> c.run_seconds(run(1)), c.run_seconds(run(3))
        (2.0, 4.0)
        """
        timing = self._timing(config)
        if timing is not None:
            return timing.seconds(config.max_steps)
        return estimate_run_seconds(config) / self.speed_of(config.model)

    def _timing(self, config) -> RunTiming | None:
        shape = run_shape(config)
        if shape in self.runs:
            return self.runs[shape]
        family = sorted((s[_DEPTH], t) for s, t in self.runs.items() if _family(s) == _family(shape))
        if len(family) < 2:
            return None
        (low, a), (high, b) = family[0], family[-1]
        w = (config.depth - low) / (high - low)
        return RunTiming(eval_every=a.eval_every, first=max(0.0, a.first + w * (b.first - a.first)),
                         interval=max(0.0, a.interval + w * (b.interval - a.interval)))


def _time_steps(sizes: dict, steps: int, repeats: int) -> tuple:
    """(best measured, cost-model) CPU time (ms) per training step."""
    from numerics.train import ModelRun, TrainConfig

    config = TrainConfig(**sizes, max_steps=10**6, eval_every=10**6, eval_size=sizes["batch_size"],
                         warmup_steps=0, dtype="float32")
    run = ModelRun(config)
    for _ in range(steps):  # warm-up: first-call costs (allocation, dispatch, page faults)
        run.advance(run.draw_batch())
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(steps):
            run.advance(run.draw_batch())
        best = min(best, (time.process_time() - started) / steps * 1e3)
    return best, step_milliseconds(config)


def measure_speeds(repeats: int = 3, sizes: dict | None = None) -> dict:
    """``{engine: cost-model ms / measured ms}`` of a few training steps at ``sizes`` (``{engine: TrainConfig
    fields}``, default :data:`CALIBRATION_SIZES`), here.

    Examples
    --------
    >>> sorted(measure_speeds(repeats=1))  # doctest: +SKIP
    ['linear', 'softmax']
    """
    speeds = {}
    for engine, fields in (CALIBRATION_SIZES if sizes is None else sizes).items():
        measured, modelled = _time_steps(fields, _STEPS[engine], repeats)
        speeds[engine] = modelled / measured if measured > 0 else 1.0
    return speeds


#: the fields of a run that fix its cost, besides its step count (:func:`run_shape`)
_SHAPE_FIELDS = ("model", "task", "d", "N", "P", "depth", "batch_size", "eval_size", "eval_every", "dtype", "k",
                 "frozen")
_DEPTH = _SHAPE_FIELDS.index("depth")
#: whole runs are timed, costliest shape first, until they cover this share of the plan's cost-model seconds ...
TIMED_SHARE = 0.9
#: ... or the timing runs' own cost-model seconds (their steps and evaluations) reach this
TIMING_BUDGET = 8.0


def run_shape(config) -> tuple:
    """What fixes the cost of a run besides its step count: sizes, evaluation, dtype, and a rotated spectrum.

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> one = TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=2, max_steps=100, seed=0)
    >>> run_shape(one) == run_shape(TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=2, max_steps=900, seed=1))
    True
    >>> run_shape(one) == run_shape(TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=4, max_steps=100))
    False
    """
    return tuple(getattr(config, name) for name in _SHAPE_FIELDS) + ((config.a, config.b) != (0.0, 0.0),)


def _timing_configs(config) -> tuple:
    """The two runs that time ``config``'s shape: one and two evaluation intervals, no early stop."""
    every = max(1, min(config.eval_every, config.max_steps))
    one = dataclasses.replace(config, max_steps=every, eval_every=every, warmup_steps=0, start=None)
    return one, dataclasses.replace(one, max_steps=2 * every)


def _timing_price(config) -> float:
    """The cost model's seconds of the steps and evaluations of the two runs that time ``config``'s shape (its
    fixed second per run is mostly not spent)."""
    return sum(estimate_run_seconds(run) - 1.0 for run in _timing_configs(config))


def _family(shape: tuple) -> tuple:
    """A run shape without its depth: the shapes whose timings :meth:`Calibration.run_seconds` interpolates."""
    return shape[:_DEPTH] + shape[_DEPTH + 1:]


def timed_shapes(configs: Iterable, share: float = TIMED_SHARE, budget: float = TIMING_BUDGET) -> list:
    """The runs to time whole: of each family of shapes (the same but for the depth), costliest family first,
    one run at its least and one at its greatest depth, until ``share`` of the cost is covered or the timing
    runs' cost-model seconds reach ``budget``.

    A run's cost is linear in its depth (its steps, evaluations and weights are), so the two ends of a family
    price every depth between them. Runs that start from given weights (``start``) are timed from a cold
    start (the same cost per step).

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> runs = [TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=L, max_steps=900) for L in (1, 2, 4)]
    >>> runs.append(TrainConfig(model="nonlinear", d=8, N=8, P=64, depth=1, max_steps=100))
    >>> [(c.P, c.depth) for c in timed_shapes(runs, share=0.5)]
    [(32, 1), (32, 4)]
    """
    cost: dict = {}
    ends: dict = {}
    for config in configs:
        family = _family(run_shape(config))
        cost[family] = cost.get(family, 0.0) + estimate_run_seconds(config)
        low, high = ends.get(family, (config, config))
        ends[family] = (min(low, config, key=lambda c: c.depth), max(high, config, key=lambda c: c.depth))
    total, covered, spent, chosen = sum(cost.values()), 0.0, 0.0, []
    for family in sorted(cost, key=cost.get, reverse=True):
        if covered >= share * total:
            break
        runs = list({run_shape(c): c for c in ends[family]}.values())
        price = sum(_timing_price(c) for c in runs)
        if chosen and spent + price > budget:
            continue
        chosen += runs
        covered, spent = covered + cost[family], spent + price
    return chosen


def time_runs(configs: Iterable, repeats: int = 2) -> list:
    """``[RunTiming]`` of each config's shape, measured here in this process (after one untimed warm-up run).

    Each shortened run is timed ``repeats`` times and its least CPU time kept: the interval is the difference of
    two runs of about a second, and one timing of each let it vary 2.6x between calibrations (page faults,
    memory placement), which made the linear engine's speed, and so the estimate, swing by 2x.

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> [timing] = time_runs([TrainConfig(model="nonlinear", d=4, N=4, P=8, depth=1, max_steps=40, eval_every=20)])
    >>> timing.eval_every, timing.first > 0
    (20, True)
    """
    from numerics.train import train

    configs = list(configs)
    if configs:  # first-call costs (imports, dispatch) belong to no run
        train(_timing_configs(min(configs, key=estimate_run_seconds))[0])
    timings = []
    for config in configs:
        seconds = []
        for run in _timing_configs(config):
            best = math.inf
            for _ in range(max(1, int(repeats))):
                started = time.process_time()
                train(run)
                best = min(best, time.process_time() - started)
            seconds.append(best)
        timings.append(RunTiming(eval_every=_timing_configs(config)[0].max_steps, first=seconds[0],
                                 interval=max(0.0, seconds[1] - seconds[0])))
    return timings


def _split(configs: list, parts: int) -> list:
    """``configs`` dealt into ``parts`` lists of about equal cost (dearest first, to the cheapest list)."""
    lists: list = [[] for _ in range(max(1, parts))]
    loads = [0.0] * len(lists)
    for config in sorted(configs, key=estimate_run_seconds, reverse=True):
        i = loads.index(min(loads))
        lists[i].append(config)
        loads[i] += _timing_price(config)
    return [part for part in lists if part]


def _engine_speeds(configs: Iterable, runs: dict) -> dict:
    """``{engine: cost-model seconds / measured seconds}`` over the ``configs`` whose shape ``runs`` timed."""
    modelled: dict = {}
    measured: dict = {}
    timings = Calibration({}, "", None, 0.0, runs=runs)
    for config in configs:
        timing = timings._timing(config)
        if timing is not None:
            engine = get_model(config.model).ATTENTION
            modelled[engine] = modelled.get(engine, 0.0) + estimate_run_seconds(config)
            measured[engine] = measured.get(engine, 0.0) + timing.seconds(config.max_steps)
    return {engine: modelled[engine] / measured[engine] for engine in modelled if measured[engine] > 0}


def calibrate(repeats: int = 3, timeout: float = 120.0, configs: Iterable = (), workers: int = 1) -> Calibration:
    """Time the costliest run shapes of ``configs`` whole here (about 10-20 s), and an engine without any by a
    few of its steps.

    The runs are timed in ``workers`` worker processes at once (as many as will train, so that they share
    the caches as training will), each with one BLAS thread, as a sweep's workers do (a threaded BLAS would
    count its spinning as CPU time). Without ``configs``, only steps are timed (about 5 s).

    Raises
    ------
    RuntimeError
        A worker process failed or took longer than ``timeout`` seconds.

    Examples
    --------
    >>> c = calibrate(repeats=1)  # doctest: +SKIP
    >>> print(f"{c.speed:.1f}x on {c.machine}")  # doctest: +SKIP
    0.8x on 2 cores, AMD EPYC, AVX-512 (AVX512_ICL)
    """
    load = other_load()  # before the children: they are this job's own load
    started = time.perf_counter()
    configs = list({config.content_hash(): config for config in configs}.values())  # each distinct run once
    shapes = timed_shapes(configs)
    parts = _split(shapes, min(max(1, int(workers)), usable_cores()))
    outputs = _in_workers([(time_runs, (part,)) for part in parts], timeout)
    runs = {run_shape(config): timing for part, output in zip(parts, outputs) for config, timing in zip(part, output)}
    speeds = _engine_speeds(configs, runs)
    missing = [engine for engine in CALIBRATION_SIZES if engine not in speeds]
    if missing:
        [stepped] = _in_workers([(measure_speeds, (int(repeats), {e: CALIBRATION_SIZES[e] for e in missing}))],
                                timeout)
        speeds.update(stepped)
    return Calibration(speeds={engine: speeds[engine] for engine in CALIBRATION_SIZES}, machine=machine_description(),
                       load=load, seconds=time.perf_counter() - started, runs=runs)


def other_load(loadavg: str | os.PathLike = "/proc/loadavg", samples: int = 5, interval: float = 0.05) -> float | None:
    """How many processes other than this one are running or ready to run now: the median over ``samples``
    readings of the kernel's runnable count (``/proc/loadavg``'s fourth field, less this process).

    Unlike the 1-minute load average it does not remember a job that has just finished or been paused, nor
    count the calibration's own children. Where the file does not exist: the 1-minute load average (or None).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "loadavg"
    >>> _ = f.write_text("2.31 1.80 1.02 3/412 9999")
    >>> other_load(f, samples=1)
    2.0
    """
    readings = []
    for i in range(samples):
        try:
            text = Path(loadavg).read_text().split()
        except OSError:
            try:
                return os.getloadavg()[0]
            except (AttributeError, OSError):  # pragma: no cover
                return None
        readings.append(max(0, int(text[3].split("/")[0]) - 1))
        if i + 1 < samples:
            time.sleep(interval)
    return float(sorted(readings)[len(readings) // 2])


def _in_workers(jobs: list, timeout: float) -> list:
    """``fn(*arguments)`` of each ``(fn, arguments)`` of ``jobs``, each in its own worker process of the sweep's local
    pool (one BLAS thread each, as a sweep's workers), all at once; their results in order.

    ``RuntimeError`` when a job fails or all take longer than ``timeout`` seconds.
    """
    import concurrent.futures as cf

    from ..sweep._backends import BLAS_THREAD_VARIABLES, local_pool, preserved_environment

    if not jobs:
        return []
    deadline = time.monotonic() + timeout
    try:
        with preserved_environment(BLAS_THREAD_VARIABLES), local_pool(len(jobs)) as pool:
            futures = [pool.submit(fn, *arguments) for fn, arguments in jobs]
            return [future.result(timeout=max(0.0, deadline - time.monotonic())) for future in futures]
    except cf.TimeoutError:
        raise RuntimeError(f"the calibration took longer than {timeout:.0f} s") from None
    except Exception as exc:  # a job's own error, raised again here by its future
        raise RuntimeError(f"the calibration failed: {exc}") from exc


def calibrated_estimate(plan: Schedule, calibration: Calibration, extra_configs: Iterable = (), *,
                        study: bool | None = None) -> tuple:
    """(CPU seconds of the training runs, of the analysis after training, costs by hash) here.

    Each run costs :meth:`Calibration.run_seconds` (its shape's timing, or the cost model over its engine's
    speed); ``extra_configs`` (the certified study's spot checks, the regime study's runs) are added, each
    distinct run once. The analysis (:func:`~numerics.experiments.reproduce.plan.analysis_seconds`, with the
    regime study and the consistency check when ``study``, default: when the plan is a whole reproduction) is
    ``{"parallel": s, "serial": s}``, divided by the calibration's mean speed.

    Examples
    --------
    >>> from numerics.experiments.reproduce.plan import make_plan
    >>> plan = make_plan("smoke", "table2")
    >>> runs, analysis, costs = calibrated_estimate(plan, Calibration({"softmax": 1.0, "linear": 0.5}, "", None, 0.0))
    >>> round(runs / plan.estimated_seconds, 6), len(costs) == plan.n_runs, sorted(analysis)
    (2.0, True, ['parallel', 'serial'])
    """
    costs = {}
    for config in list(plan.configs) + list(extra_configs):
        costs.setdefault(config.content_hash(), calibration.run_seconds(config))
    study = bool(plan.study_seconds) if study is None else bool(study)
    analysis = {part: seconds / calibration.speed
                for part, seconds in analysis_seconds(plan.scale, plan.artefacts, study=study).items()}
    return sum(costs.values()), analysis, costs


def format_estimate(plan: Schedule, calibration: Calibration, workers: int, *, extra_configs: Iterable = (),
                    backend: str = "local", study: bool = True) -> str:
    """The line printed before training: ``estimated 9.6 min wall on 2 local workers, ...``.

    The wall time is the CPU time of the training runs and of the pooled analysis (bounds,
    floors) shared among the workers, plus the analysis the main process does alone (figures,
    tables, report). ``extra_configs`` must hold the regime study's runs when ``study``.

    Examples
    --------
    >>> from numerics.experiments.reproduce.plan import make_plan
    >>> line = format_estimate(make_plan("smoke", "table2"), Calibration({"softmax": 0.8, "linear": 0.8},
    ...                        "2 cores, AMD EPYC, AVX-512 (AVX512_ICL)", 0.0, 3.0), 2)
    >>> print(line)  # doctest: +ELLIPSIS
    estimated ... s wall on 2 local workers, ... s CPU (training ... s, analysis ... s of which ... s in the main process; calibrated: this CPU runs the engine at 0.8x the reference ...
    """
    runs, analysis, _ = calibrated_estimate(plan, calibration, extra_configs, study=study)
    parallel = max(1, min(workers, usable_cores())) if backend == "local" else max(1, workers)
    pooled = max(1, min(workers, usable_cores()))  # the analysis pool is local
    cpu = runs + analysis["parallel"] + analysis["serial"]
    wall = runs / parallel + analysis["parallel"] / pooled + analysis["serial"]
    speeds = ", ".join(f"{engine} {value:.2f}x" for engine, value in calibration.speeds.items())
    line = (f"estimated {duration_text(wall)} wall on {workers} {backend} worker{'s' if workers != 1 else ''}, "
            f"{duration_text(cpu)} CPU (training {duration_text(runs)}, analysis {duration_text(cpu - runs)} of which "
            f"{duration_text(analysis['serial'])} in the main process; calibrated: this CPU runs the engine at "
            f"{calibration.speed:.1f}x the reference of the cost model: {speeds}; {calibration.machine}; measured in "
            f"{calibration.seconds:.0f} s)")
    cores = usable_cores()
    if calibration.load is not None and calibration.load > 0.5 * cores:
        line += (f"; the machine is busy ({calibration.load:g} processes of other jobs running on {cores} cores): "
                 "they slow it further")
    return line
