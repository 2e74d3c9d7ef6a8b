"""Benchmark of ``predict_loss``'s softmax default, U_L (theory/expressible.py).

What it measures (process CPU seconds and wall seconds, one BLAS thread):

1. ``predict_loss(depths 1-128 by doubling, (a, b), attention='softmax', task='difficult', P=64)``
   at d = 16: the shipped results are read (target: under 60 s on one core -- here well under one);
2. the same prediction computed on demand (``n_samples=4096``: 4096 fit and selection contexts,
   8192 report contexts, 32 random forms per class), what a spectrum or size without shipped
   results costs (target: under 60 s on one core);
3. the cost of fitting a shipped file, read from the files themselves (``cpu_seconds`` of
   ``best_expressible`` and ``laws_cpu_seconds`` of the family laws, as recorded when
   ``idepth expressible run`` wrote them).

The baseline of the ratios is case 1. Run on an otherwise idle machine::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_expressible.py [--a 0 --b 0]

It prints the CPU model, numpy's SIMD level and the load averages before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import cpu_model  # noqa: E402  (the one home of the machine report)

DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128)


def _simd() -> str:
    import numpy as np

    try:
        config = np.show_config(mode="dicts")
        found = config["SIMD Extensions"]["found"]
        return ", ".join(found) if found else "baseline only"
    except Exception:  # noqa: BLE001 - an older numpy without dict mode
        return "unknown"


def _time(function) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    function()
    return time.process_time() - cpu, time.perf_counter() - wall


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", type=float, default=0.0)
    parser.add_argument("--b", type=float, default=0.0)
    args = parser.parse_args(argv)
    from theory import PowerLawSpectrum
    from theory.expressible import SHIPPED_DIR, data_file_name
    from theory.predict import predict_loss

    import theory

    spectrum = PowerLawSpectrum(args.a, args.b, 16)
    print(f"CPU: {cpu_model()}; numpy SIMD found: {_simd()}; threads: OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; load before: {os.getloadavg()}")
    shipped = _time(lambda: predict_loss(DEPTHS, spectrum, attention="softmax", task="difficult", P=64))
    computed = _time(lambda: predict_loss(DEPTHS, spectrum, attention="softmax", task="difficult", P=64,
                                          n_samples=4096, rng=0))
    print(f"{'case':<48} {'CPU s':>8} {'wall s':>8} {'CPU / shipped':>14}")
    for name, (cpu, wall) in (("predict_loss default, shipped results", shipped),
                              ("predict_loss default, computed (n_samples=4096)", computed)):
        print(f"{name:<48} {cpu:>8.2f} {wall:>8.2f} {cpu / max(shipped[0], 1e-9):>14.0f}")
    path = Path(theory.__file__).parent.joinpath(*SHIPPED_DIR, data_file_name(args.a, args.b, 16, 64, 2))
    if path.is_file():
        data = json.loads(path.read_text())
        print(f"fitting the shipped file {path.name}: best_expressible {data.get('cpu_seconds', float('nan')):.0f} CPU s,"
              f" family laws {data.get('laws_cpu_seconds', float('nan')):.0f} CPU s (as recorded when written)")
    print(f"load after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
