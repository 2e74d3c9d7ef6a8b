"""The cost model on this machine: a few timed training steps scale the plan's estimate.

The cost model gives CPU seconds on the machine it was fitted on. :func:`calibrate`
times a few steps of each engine (softmax, linear) at the sizes the plan spends most of its time on
(:func:`calibration_sizes`): this machine's speed relative to the cost model's there (a loaded machine is
slower).
:func:`calibrated_estimate` divides each run's cost by its engine's speed.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Iterable

from numerics.models import get_model

from ..execution import usable_cores
from .plan import Plan, _duration, analysis_seconds, estimate_run_seconds, step_milliseconds

__all__ = ["CALIBRATION_SIZES", "Calibration", "calibrate", "calibrated_estimate", "calibration_sizes", "format_estimate",
           "machine_description", "measure_speeds", "simd_level"]

#: the sizes timed: fitting points of the cost model, flat spectra, float32. The linear engine first: in a fresh
#: process the softmax steps run at about 0.55 of their speed in a worker that has trained before (0.36x against
#: 0.66x here; the allocator's state, large arrays freed once), which made the quick estimate 1.7x the measured CPU
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
    try:
        from numpy._core._multiarray_umath import __cpu_baseline__ as baseline
        from numpy._core._multiarray_umath import __cpu_dispatch__ as dispatch
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_baseline__ as baseline
            from numpy.core._multiarray_umath import __cpu_dispatch__ as dispatch
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return "unknown SIMD"
    return simd_level_of(set(baseline) | set(dispatch), features)


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
class Calibration:
    """This machine's speed relative to the cost model's machine.

    Attributes
    ----------
    speeds : dict of str to float
        ``{"softmax": s, "linear": s}``: cost-model over measured CPU time.
    load : float or None
        The 1-minute load average; ``seconds``: the calibration's wall time.

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

    @property
    def speed(self) -> float:
        """The geometric mean of the engines' speeds (one number to quote)."""
        return math.prod(self.speeds.values()) ** (1.0 / len(self.speeds))

    def speed_of(self, model: str) -> float:
        """The speed of the engine (``ATTENTION``) that runs ``model``."""
        return self.speeds[get_model(model).ATTENTION]


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
    """``{engine: cost-model ms / measured ms}`` at ``sizes`` (``{engine: TrainConfig fields}``, default
    :data:`CALIBRATION_SIZES`), here.

    Examples
    --------
    >>> sorted(measure_speeds(repeats=1))  # doctest: +SKIP
    ['linear', 'softmax']
    """
    speeds = {}
    for engine, fields in (CALIBRATION_SIZES if sizes is None else sizes).items():
        measured, modelled = _time_steps(fields, _steps_for(fields, engine), repeats)
        speeds[engine] = modelled / measured if measured > 0 else 1.0
    return speeds


def _steps_for(fields: dict, engine: str) -> int:
    """Steps per timed repeat: :data:`_STEPS` at the default sizes, else about 0.3 s of the cost model's."""
    if fields == CALIBRATION_SIZES.get(engine):
        return _STEPS[engine]
    from numerics.train import TrainConfig

    return int(min(200, max(2, round(300.0 / step_milliseconds(TrainConfig(**fields))))))


#: the fields of a run that fix its step's cost (what :func:`calibration_sizes` copies)
_SIZE_FIELDS = ("model", "task", "d", "N", "P", "depth", "batch_size")


def calibration_sizes(configs: Iterable) -> dict:
    """``{engine: sizes}``: per engine, the sizes of the runs that cost most in ``configs`` (by the cost model).

    Timing the sizes the plan spends its time on keeps the estimate honest where the cost model's error depends
    on the size (at the quick scale: small batches run at the model's speed, batch 256 at a third of it). An
    engine without runs keeps :data:`CALIBRATION_SIZES`.

    Examples
    --------
    >>> from numerics.train import TrainConfig
    >>> runs = [TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=2, max_steps=100, batch_size=32)] * 3 + [
    ...     TrainConfig(model="nonlinear", d=8, N=8, P=32, depth=4, max_steps=100, batch_size=64)]
    >>> sizes = calibration_sizes(runs)
    >>> sizes["softmax"]["depth"], sizes["linear"] == CALIBRATION_SIZES["linear"]
    (2, True)
    """
    totals: dict = {}
    for config in configs:
        key = tuple(getattr(config, name) for name in _SIZE_FIELDS)
        engine = get_model(config.model).ATTENTION
        totals[engine, key] = totals.get((engine, key), 0.0) + estimate_run_seconds(config)
    sizes = dict(CALIBRATION_SIZES)
    for engine in sizes:
        mine = {key: seconds for (e, key), seconds in totals.items() if e == engine}
        if mine:
            sizes[engine] = dict(zip(_SIZE_FIELDS, max(mine, key=mine.get)))
    return sizes


def calibrate(repeats: int = 3, timeout: float = 120.0, sizes: dict | None = None) -> Calibration:
    """Time a few training steps of each engine here (about 5 s) against the cost model.

    The steps run in a child process with one BLAS thread, as a sweep's
    workers do (a threaded BLAS would count its spinning as CPU time).
    ``sizes``: ``{engine: TrainConfig fields}`` to time (default :data:`CALIBRATION_SIZES`; a plan's
    :func:`calibration_sizes`).

    Raises
    ------
    RuntimeError
        The child process failed or took longer than ``timeout`` seconds.

    Examples
    --------
    >>> c = calibrate(repeats=1)  # doctest: +SKIP
    >>> print(f"{c.speed:.1f}x on {c.machine}")  # doctest: +SKIP
    0.8x on 2 cores, AMD EPYC, AVX-512 (AVX512_ICL)
    """
    import json
    import subprocess
    import sys

    from ..sweep import BLAS_THREAD_VARIABLES

    started = time.perf_counter()
    env = dict(os.environ, **{name: "1" for name in BLAS_THREAD_VARIABLES})
    code = ("import json, sys; from numerics.experiments.reproduce.calibration import measure_speeds; "
            f"print(json.dumps(measure_speeds({int(repeats)}, json.loads(sys.argv[1]))))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    try:
        child = subprocess.run([sys.executable, "-c", code, json.dumps(sizes)], capture_output=True, text=True,
                               env=env,
                               timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the calibration took longer than {timeout:.0f} s") from None
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the calibration failed: {last}")
    speeds = json.loads(child.stdout.strip().splitlines()[-1])
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover
        load = None
    return Calibration(speeds=speeds, machine=machine_description(), load=load,
                       seconds=time.perf_counter() - started)


def calibrated_estimate(plan: Plan, calibration: Calibration, extra_configs: Iterable = (), *,
                        study: bool | None = None) -> tuple:
    """(CPU seconds of the training runs, of the analysis after training, costs by hash) here.

    Each run's estimate is divided by its engine's speed; ``extra_configs`` (the converged study's
    spot checks, the regime study's runs) are added, each distinct run once. The analysis
    (:func:`~numerics.experiments.reproduce.plan.analysis_seconds`, with the regime study and the
    consistency check when ``study``, default: when the plan is a whole reproduction) is
    ``{"parallel": s, "serial": s}``, divided by the calibration's mean speed.

    Examples
    --------
    >>> from numerics.experiments.reproduce.plan import make_plan
    >>> plan = make_plan("smoke", "table2")
    >>> runs, analysis, costs = calibrated_estimate(plan, Calibration({"softmax": 1.0, "linear": 0.5}, "", None, 0.0))
    >>> round(runs / plan.estimated_seconds, 6), len(costs) == plan.n_runs, sorted(analysis)
    (2.0, True, ['parallel', 'serial'])
    """
    costs = {config.content_hash(): seconds / calibration.speed_of(config.model)
             for config, seconds in zip(plan.configs, plan.run_seconds or map(estimate_run_seconds, plan.configs))}
    for config in extra_configs:
        costs.setdefault(config.content_hash(), estimate_run_seconds(config) / calibration.speed_of(config.model))
    study = bool(plan.study_seconds) if study is None else bool(study)
    analysis = {part: seconds / calibration.speed
                for part, seconds in analysis_seconds(plan.scale, plan.artefacts, study=study).items()}
    return sum(costs.values()), analysis, costs


def format_estimate(plan: Plan, calibration: Calibration, workers: int, *, extra_configs: Iterable = (),
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
    line = (f"estimated {_duration(wall)} wall on {workers} {backend} worker{'s' if workers != 1 else ''}, "
            f"{_duration(cpu)} CPU (training {_duration(runs)}, analysis {_duration(cpu - runs)} of which "
            f"{_duration(analysis['serial'])} in the main process; calibrated: this CPU runs the engine at "
            f"{calibration.speed:.1f}x the reference of the cost model: {speeds}; {calibration.machine}; measured in "
            f"{calibration.seconds:.0f} s)")
    cores = usable_cores()
    if calibration.load is not None and calibration.load > 0.5 * cores:
        line += (f"; the machine is busy (load average {calibration.load:.1f} on {cores} cores): "
                 "other jobs slow it further")
    return line
