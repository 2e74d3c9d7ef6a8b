"""Engine benchmark: steps per second of the numpy engine and the JAX engine (``TrainConfig(engine=...)``).

The model is the controlled softmax model ``nonlinear`` (paper eqs. (7)-(10), (12), mask M(0)) on the
top-2 task (eq. 6), flat spectra (a = b = 0), float32, at the study's sizes d = 16, N = 32, P = 64 and
L in {1, 4, 16, 128}, batch 256 and 4096. A *step* is what the trainer does per step
(:class:`numerics.train.ModelRun.advance`): for the numpy engine ``numerics.tasks.sample`` (stream
``--stream``, default 2, the certified study's) + the hand-written ``loss_and_grad`` + the finiteness
checks + Adam; for the JAX engine one jitted step on JAX's default device (the batch drawn inside it,
``jax.grad``, Adam) plus the host's bookkeeping (the step size from ``numerics.optim``). No
evaluation is timed (``eval_every`` is past the last step). JAX compiles once per size in the warm-up;
each repeat then blocks on the device once, at its end.

Per size the two engines run interleaved ``--repeats`` times, each repeat about ``--seconds`` long;
reported: median wall ms per step, steps/s, process CPU ms per step, and the ratio jax / numpy of the
median wall times (``> 1``: the JAX step is slower). On a CPU the numpy engine and XLA are held to one
thread (``OMP/OPENBLAS/MKL/BLIS_NUM_THREADS=1``, ``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1``, set before numpy and jax are imported), as ``bench_peer.py`` does; on
a GPU the JAX engine uses the device. Run::

    pip install -e '.[jax]'
    nice python benchmarks/bench_engine.py                      # all sizes, 3 repeats; writes the JSON below
    python benchmarks/bench_engine.py --sizes 16,32,64,16,256 --repeats 2 --no-write

Writes ``benchmarks/results/engine_<device>.json`` (``<device>``: JAX's default platform, ``cpu`` or
``gpu``; atomically, through ``numerics.io.write_json``) with every number, the device's name, the
CPU model and its SIMD level (numpy's ``show_runtime()`` lists, as ``bench_sampler.py``), the versions
and the load averages before and after.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"
_XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _XLA_ONE_THREAD).strip()

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_sampler import cpu_model, simd_extensions  # noqa: E402  (the one home of the machine report)

from numerics.engines import jax_available  # noqa: E402
from numerics.io import write_json  # noqa: E402
from numerics.train import ModelRun, TrainConfig  # noqa: E402

#: (d, N, P, L, batch): the study's sizes, four depths, two batches
DEFAULT_SIZES = tuple((16, 32, 64, L, B) for B in (256, 4096) for L in (1, 4, 16, 128))
#: the main size (the issue's target: the JAX step within 2x of the numpy step here on a CPU)
MAIN_SIZE = (16, 32, 64, 16, 256)
ENGINES = ("numpy", "jax")


def parse_size(text: str) -> tuple:
    values = tuple(int(v) for v in text.split(","))
    if len(values) != 5 or min(values) < 1:
        raise argparse.ArgumentTypeError(f"a size is d,N,P,L,batch (five positive integers); got {text!r}")
    return values


def config_for(size: tuple, engine: str, stream: int, steps: int) -> TrainConfig:
    d, N, P, L, B = size
    return TrainConfig(model="nonlinear", task="difficult", k=2, a=0.0, b=0.0, d=d, N=N, P=P, depth=L, batch_size=B,
                       max_steps=steps + 1, eval_every=steps + 1, eval_size=64, dtype="float32", warmup_steps=0,
                       stream=stream, engine=engine)


class Timer:
    """One engine's run at one size, advanced and timed in repeats of ``steps`` steps."""

    def __init__(self, size: tuple, engine: str, stream: int, budget: int):
        self.run = ModelRun(config_for(size, engine, stream, budget))
        self.run.start()
        self.engine = engine

    def steps(self, n: int) -> tuple[float, float]:
        """Wall and CPU seconds per step over ``n`` steps (the device blocked at the end)."""
        run = self.run
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            run.advance(run.draw_batch())
        if self.engine == "jax":
            run.jax_trainer().block()
        return (time.perf_counter() - w0) / n, (time.process_time() - c0) / n


def bench_size(size: tuple, repeats: int, seconds: float, stream: int) -> dict:
    engines = [e for e in ENGINES if e == "numpy" or jax_available()]
    # a probe of 2 steps after a warm-up step (the compilation) sets the steps per repeat
    probes = {}
    for engine in engines:
        probe = Timer(size, engine, stream, 8)
        probe.steps(1)
        probes[engine] = probe.steps(2)[0]
    n = {e: max(2, int(seconds / max(probes[e], 1e-6))) for e in engines}
    timers = {e: Timer(size, e, stream, n[e] * repeats + 2) for e in engines}
    for e in engines:
        timers[e].steps(1)  # warm-up (compiled already: the cache is per data law and shape)
    wall = {e: [] for e in engines}
    cpu = {e: [] for e in engines}
    for _ in range(repeats):
        for e in engines:
            w, c = timers[e].steps(n[e])
            wall[e].append(w)
            cpu[e].append(c)
    out = {"size": dict(zip(("d", "N", "P", "L", "batch"), size)), "steps_per_repeat": n, "engines": {}}
    for e in engines:
        median = statistics.median(wall[e])
        out["engines"][e] = {"wall_ms_median": 1e3 * median, "wall_ms_min": 1e3 * min(wall[e]),
                             "cpu_ms_median": 1e3 * statistics.median(cpu[e]), "steps_per_s": 1.0 / median,
                             "wall_ms_repeats": [1e3 * w for w in wall[e]]}
    if "jax" in out["engines"]:
        out["ratio_jax_over_numpy"] = out["engines"]["jax"]["wall_ms_median"] / out["engines"]["numpy"]["wall_ms_median"]
        out["ratio_jax_over_numpy_cpu"] = out["engines"]["jax"]["cpu_ms_median"] / out["engines"]["numpy"]["cpu_ms_median"]
    return out


def environment() -> dict:
    env = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
           "cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "numpy_simd": simd_extensions(),
           "xla_flags": os.environ.get("XLA_FLAGS", "")}
    if jax_available():
        import jax

        from numerics.engines.jax_engine import device_description

        env.update(jax=jax.__version__, device=device_description(), platform=jax.devices()[0].platform)
    else:
        env.update(jax=None, device="cpu (numpy only: jax not installed)", platform="cpu")
    return env


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_engine.py",
        description="Steps per second of the numpy and the JAX training engines (nonlinear model, top-2 task, float32) "
        "at d=16, N=32, P=64, L in {1,4,16,128}, batch 256 and 4096; writes benchmarks/results/engine_<device>.json.",
        epilog="Example: python benchmarks/bench_engine.py --sizes 16,32,64,16,256 --repeats 2 --no-write")
    parser.add_argument("--sizes", nargs="+", type=parse_size, default=list(DEFAULT_SIZES), metavar="d,N,P,L,batch")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats per engine (default %(default)s)")
    parser.add_argument("--seconds", type=float, default=1.0, help="about this long per repeat (default %(default)s)")
    parser.add_argument("--stream", type=int, choices=(1, 2, 3), default=2, help="the numpy engine's sampler stream")
    parser.add_argument("--out", metavar="JSON", help="where to write (default benchmarks/results/engine_<device>.json)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.seconds <= 0:
        parser.error("--repeats must be >= 1 and --seconds > 0")
    env = environment()
    load_before = os.getloadavg()
    simd = env["numpy_simd"]
    print(f"device {env['device']}; CPU {env['cpu_model']} ({env['cpu_count']} cores), SIMD baseline "
          f"{simd['baseline'][-1] if simd['baseline'] else '-'}, found {', '.join(simd['found'])}; numpy {env['numpy']}, "
          f"jax {env['jax']}; load {load_before[0]:.2f}", flush=True)
    results = []
    print(f"{'d,N,P,L,batch':<18}{'numpy ms':>10}{'jax ms':>10}{'numpy st/s':>12}{'jax st/s':>10}{'jax/numpy':>11}"
          f"{'(CPU time)':>11}", flush=True)
    for size in args.sizes:
        r = bench_size(size, args.repeats, args.seconds, args.stream)
        results.append(r)
        e = r["engines"]
        jax_ms = f"{e['jax']['wall_ms_median']:>10.2f}" if "jax" in e else f"{'-':>10}"
        jax_rate = f"{e['jax']['steps_per_s']:>10.1f}" if "jax" in e else f"{'-':>10}"
        ratio = f"{r['ratio_jax_over_numpy']:>11.2f}{r['ratio_jax_over_numpy_cpu']:>11.2f}" if "jax" in e else ""
        print(f"{','.join(map(str, size)):<18}{e['numpy']['wall_ms_median']:>10.2f}{jax_ms}"
              f"{e['numpy']['steps_per_s']:>12.1f}{jax_rate}{ratio}", flush=True)
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} cores)")
    if not args.no_write:
        out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"engine_{env['platform']}.json"
        write_json(out, {
            "benchmark": "bench_engine",
            "command": " ".join(["bench_engine.py"] + (sys.argv[1:] if argv is None else list(argv))),
            "environment": env, "numpy_stream": args.stream, "main_size": dict(zip(("d", "N", "P", "L", "batch"), MAIN_SIZE)),
            "load_before": list(load_before), "load_after": list(load_after), "results": results,
        })
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
