"""Benchmark of the sweep machinery (numerics/experiments/sweep/, numerics/experiments/store.py).

What it measures (medians over ``--repeats`` repetitions):

1. **Throughput**: wall time of a 16-run tiny sweep (real
   :func:`numerics.train.run_config`, nonlinear model, d = N = 4, P = 16,
   2000 steps; about a second per run) with 1 and with 2 local workers,
   each into a fresh directory, pool start-up included. On 2 idle cores the
   ratio should be close to 2; the worker start-up (importing numpy, scipy,
   sympy and the package, a few seconds once per worker) is paid in both.
2. **Store commit per run**: :meth:`ResultsStore.record` of one finished run
   (5 metrics columns + JSON, 6 small ``.npy`` arrays), each in its own
   ``synchronous=FULL`` WAL transaction (one fsync), and
   :meth:`ResultsStore.mark_running` of one run.
3. **Scheduling overhead per run**: a sweep of no-op runs (the runner returns
   two metrics and no array) with 2 local workers; the marginal cost per run
   is ``(T(n_big) - T(n_small)) / (n_big - n_small)``, which removes the
   pool start-up and includes the config hash, pickling, inter-process
   transfer, the driver's two commits (``running``, ``done``) and the
   progress bookkeeping.

Run::

    python benchmarks/bench_sweep.py               # all three, 3 repeats
    python benchmarks/bench_sweep.py --repeats 5 --skip-throughput

Numbers depend on the machine and on its load: run it on an otherwise idle
machine: the throughput line also prints the parallelism that two plain
Python processes get at that moment (2.0 on an idle 2-core machine), the
ceiling for the speed-up. It prints one line per measurement.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TINY = dict(model="nonlinear", task="difficult", k=2, d=4, N=4, P=16, batch_size=16, max_steps=2000,
            eval_every=50, eval_size=64, warmup_steps=0, window=10_000)


@dataclass(frozen=True)
class NoopResult:
    metrics: dict
    arrays: dict


def noop_runner(config) -> NoopResult:
    """Does nothing: what is left is the sweep's own per-run cost."""
    return NoopResult({"R_L": 1.0, "steps": 0}, {})


def _median_time(fn, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


_SPIN = "import time; t = time.perf_counter(); s = sum(range(30_000_000)); print(time.perf_counter() - t)"


def machine_parallelism() -> float:
    """How many cores' worth of pure-Python work the machine gives two processes right now.

    2.0 on an idle 2-core machine; less when other processes compete. The
    expected sweep speed-up of 2 workers over 1 is about this number.
    """
    import subprocess

    alone = float(subprocess.run([sys.executable, "-c", _SPIN], capture_output=True, text=True).stdout)
    pair = [subprocess.Popen([sys.executable, "-c", _SPIN], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    both = max(float(proc.communicate()[0]) for proc in pair)
    return 2 * alone / both


def bench_throughput(repeats: int) -> None:
    from numerics.experiments.sweep import Execution, Grid, run_sweep

    grid = Grid(**TINY, depth=[1, 2, 3, 4], seed=[0, 1, 2, 3])
    assert len(grid) == 16
    medians = {}
    for workers in (1, 2):
        def sweep():
            with tempfile.TemporaryDirectory() as tmp:
                summary = run_sweep(grid, tmp, execution=Execution(workers=workers, progress=False))
                assert summary.done == 16, summary
        medians[workers], times = _median_time(sweep, repeats)
        print(f"throughput: 16 runs, {workers} worker(s): median {medians[workers]:.2f} s "
              f"({16 / medians[workers]:.2f} runs/s; all: {', '.join(f'{t:.2f}' for t in times)})")
    print(f"throughput: speed-up 2 vs 1 workers = {medians[1] / medians[2]:.2f}x "
          f"(the machine's parallelism for two pure-Python processes right now: {machine_parallelism():.2f}x)")


def bench_store(repeats: int, n: int = 200) -> None:
    import numpy as np

    from numerics.experiments.store import ResultsStore, RunOutcome, encode_array

    rng = np.random.default_rng(0)
    arrays = {name: encode_array(rng.standard_normal(size)) for name, size in
              [("loss_curve", (9, 2)), ("layer_errors", 16), ("modewise_loss", 32),
               ("modewise_loss_normalised", 32), ("top1_attention_mass", 16), ("train_loss", 400)]}
    metrics = {"R_L": 0.5, "A_L": 0.6, "C_L": 0.4, "steps": 400, "converged": True, "wall_time": 1.0}
    commit, mark = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp, ResultsStore(tmp) as store:
            hashes = [f"run{i:05d}" for i in range(n)]
            store.register((h, "{}") for h in hashes)
            for h in hashes:
                start = time.perf_counter()
                store.mark_running([h])
                mark.append(time.perf_counter() - start)
                start = time.perf_counter()
                store.record(RunOutcome(h, True, metrics, arrays, None, None, 0.0, 1.0, 1.0, "host", 1))
                commit.append(time.perf_counter() - start)
    print(f"store: commit of one finished run: median {1e3 * statistics.median(commit):.2f} ms "
          f"(90th percentile {1e3 * statistics.quantiles(commit, n=10)[-1]:.2f} ms, {len(commit)} commits)")
    print(f"store: mark one run running: median {1e3 * statistics.median(mark):.2f} ms")


def bench_scheduling(repeats: int, small: int = 20, big: int = 420) -> None:
    from numerics.experiments.sweep import Execution, Grid, run_sweep

    def sweep(n: int):
        grid = Grid(**TINY, seed=list(range(n)))
        with tempfile.TemporaryDirectory() as tmp:
            summary = run_sweep(grid, tmp, execution=Execution(workers=2, progress=False), runner=noop_runner)
            assert summary.done == n, summary

    t_small, _ = _median_time(lambda: sweep(small), repeats)
    t_big, _ = _median_time(lambda: sweep(big), repeats)
    per_run = (t_big - t_small) / (big - small)
    print(f"scheduling: no-op sweep of {small} runs {t_small:.2f} s, of {big} runs {t_big:.2f} s (medians, 2 workers)")
    print(f"scheduling: marginal cost per run {1e3 * per_run:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-throughput", action="store_true")
    args = parser.parse_args()
    print(f"cores usable: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.2f}")
    bench_store(args.repeats)
    bench_scheduling(args.repeats)
    if not args.skip_throughput:
        bench_throughput(args.repeats)


if __name__ == "__main__":
    main()
