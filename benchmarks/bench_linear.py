"""The linear model's step: the Krylov engine against the dense ``N x d`` recursion it replaced.

Times ``numerics.models.linear.loss_and_grad`` (the ``Y`` recursion in Krylov coordinates,
``Y_ℓ = Q C_ℓ``) against ``numerics.models.linear._dense_loss_and_grad`` (the same loss and gradient
through the ``N x d`` states, the engine before), interleaved, one BLAS thread, float32, at the paper
plan's linear sizes by default (d = N = 128, P = 1024, batch 128) and the depths of its linear
families. Also times one batch of the sampler (``numerics.tasks.sample``) for a flat and an
anisotropic spectrum, which is the rest of a step. Weights are the default initialisation plus a
small perturbation of every matrix, so the Krylov spaces have their full dimension ``min(L + 1, N)``
(at ``W_v = I`` exactly they have one, and the engine is cheaper still). Before timing, the two
engines' gradients are compared (max relative difference printed).

Example::

    python benchmarks/bench_linear.py                      # d = N = 128, P = 1024, B = 128, L = 1 .. 64; ≈ 3 min
    python benchmarks/bench_linear.py --sizes 32,32,128,32 --depths 1,2,4,8 --repeats 7
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from numerics.models import linear  # noqa: E402
from numerics.tasks import sample  # noqa: E402
from theory import PowerLawSpectrum  # noqa: E402


def _time(fn, repeats: int) -> list[float]:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="128,128,1024,128", help="d,N,P,batch (default: %(default)s)")
    parser.add_argument("--depths", default="1,2,4,8,16,32,64", help="comma-separated L (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per engine and depth (default: 3)")
    parser.add_argument("--json", type=Path, help="write every number here")
    args = parser.parse_args(argv)
    try:
        d, N, P, B = (int(x) for x in args.sizes.split(","))
        depths = [int(x) for x in args.depths.split(",")]
    except ValueError:
        parser.error(f"--sizes takes d,N,P,batch and --depths comma-separated integers; got {args.sizes!r}, {args.depths!r}")
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1; got {args.repeats}")
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, one thread, float32, (d, N, P, B) = ({d}, {N}, {P}, {B}); load {os.getloadavg()}")
    rows = {"sizes": [d, N, P, B], "sampler": {}, "depths": {}}
    for name, spectrum in (("flat", PowerLawSpectrum(0.0, 0.0, d)), ("anisotropic", PowerLawSpectrum(1.0, 0.5, d))):
        times = _time(lambda: sample("difficult", spectrum, P, B, rng, k=2, dtype=np.float32), args.repeats)
        rows["sampler"][name] = statistics.median(times) * 1e3
        print(f"sampler, {name:11s} spectrum: {rows['sampler'][name]:8.1f} ms per batch (median)")
    batch = sample("difficult", PowerLawSpectrum(1.0, 0.5, d), P, B, rng, k=2, dtype=np.float32)
    print(f"{'L':>4} {'dense ms':>10} {'Krylov ms':>10} {'ratio':>7} {'max rel. grad diff':>19}")
    for L in depths:
        params = linear.init_params(d, N, L, rng, dtype=np.float32)
        params = {k: (v + 0.01 * rng.standard_normal(v.shape)).astype(np.float32) for k, v in params.items()}
        _, fast = linear.loss_and_grad(params, batch)
        _, dense = linear._dense_loss_and_grad(params, batch)
        diff = max(float(np.abs(fast[k] - dense[k]).max() / np.abs(dense[k]).max()) for k in fast)
        t_dense, t_fast = [], []
        for _ in range(args.repeats):  # interleaved
            t_dense += _time(lambda: linear._dense_loss_and_grad(params, batch), 1)
            t_fast += _time(lambda: linear.loss_and_grad(params, batch), 1)
        md, mf = statistics.median(t_dense) * 1e3, statistics.median(t_fast) * 1e3
        rows["depths"][L] = {"dense_ms": md, "krylov_ms": mf, "ratio": md / mf, "max_rel_grad_diff": diff}
        print(f"{L:>4} {md:>10.1f} {mf:>10.1f} {md / mf:>7.2f} {diff:>19.1e}", flush=True)
    if args.json:
        tmp = args.json.with_suffix(args.json.suffix + ".tmp")
        tmp.write_text(json.dumps(rows, indent=2))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
