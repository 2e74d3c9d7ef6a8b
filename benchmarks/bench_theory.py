"""Benchmark of the closed-form theory (theory/polynomial_laws.py).

What it measures (median wall time over ``--repeats`` repetitions, after one
warm-up call):

1. ``constrained_loss`` at the reference step γ* = L/λ_1 for the 10^5 depths
   L = 1..10^5 on a d = 1024 power-law spectrum (target < 50 ms): the depth
   sequence is evaluated as a few matrix products (blocks of 256 consecutive
   depths), not as 10^8 powers;
2. ``constrained_loss`` with an explicit scalar step for the same depths (no
   target: every (L, k) pair needs its own power, ~10^8 exp/log1p);
3. ``free_loss`` for all L <= 256 at d = 1024 in one call (target < 2 s):
   Krylov projection with full re-orthogonalisation, O(d L²) flops;
4. ``predict_loss`` (the public entry point, with validation, exponent and
   validity window) for the same two cases, targets 50 ms and 2 s.

Run single-threaded on an otherwise idle machine::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_theory.py [--repeats 7]

Add further cases to ``CASES`` as ``Case(name, size, function, target)``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from theory import PowerLawSpectrum  # noqa: E402
from theory.polynomial_laws import constrained_loss, free_loss  # noqa: E402
from theory.predict import predict_loss  # noqa: E402

SPECTRUM = PowerLawSpectrum(a=1.5, b=1.0, d=1024)
MANY_DEPTHS = np.arange(1, 100_001)
ALL_FREE_DEPTHS = np.arange(1, 257)


@dataclass(frozen=True)
class Case:
    """One timed call: what, at which size, and the target median in seconds (None: no target)."""

    name: str
    size: str
    function: Callable[[], object]
    target: Optional[float]


CASES = [
    Case("constrained_loss (gamma*)", "10^5 depths, d=1024", lambda: constrained_loss(MANY_DEPTHS, SPECTRUM), 0.050),
    Case(
        "constrained_loss (scalar gamma)",
        "10^5 depths, d=1024",
        lambda: constrained_loss(MANY_DEPTHS, SPECTRUM, gamma=1.0),
        None,
    ),
    Case("free_loss", "L=1..256, d=1024", lambda: free_loss(ALL_FREE_DEPTHS, SPECTRUM), 2.0),
    Case("predict_loss (linear, easy)", "10^5 depths, d=1024", lambda: predict_loss(MANY_DEPTHS, SPECTRUM), 0.050),
    Case(
        "predict_loss (free polynomial)",
        "L=1..256, d=1024",
        lambda: predict_loss(ALL_FREE_DEPTHS, SPECTRUM, polynomial="free"),
        2.0,
    ),
]


def median_time(function: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``function()`` over ``repeats`` calls after one warm-up."""
    function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed repetitions per case (default 7)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1; got {args.repeats}")
    print(f"{'case':34s} {'size':22s} {'median':>10s} {'target':>8s}  ok")
    for case in CASES:
        median = median_time(case.function, args.repeats)
        target = "-" if case.target is None else f"{case.target * 1e3:.0f} ms"
        ok = "-" if case.target is None else ("yes" if median < case.target else "NO")
        print(f"{case.name:34s} {case.size:22s} {median * 1e3:8.1f} ms {target:>8s}  {ok}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
