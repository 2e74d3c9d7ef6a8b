"""Sampler benchmark: ``numerics.tasks.sample`` streams 1, 2 and 3, and their share of a training step.

Per size (d, N, P, L, batch) and spectrum (flat, a = b = 0, where no rotation is drawn; and
anisotropic, a = b = 1, where every context draws a Haar rotation), float32, top-2 task (eq. 6),
one BLAS thread, the three calls run interleaved ``--repeats`` times after one untimed warm-up:

* ``sample(..., stream=s)`` for every stream ``s`` of :data:`theory.data_law.STREAMS`, on the same
  generator type (PCG64);
* ``get_model("nonlinear").loss_and_grad(params, batch)`` on one batch (the model's step).

Each call is timed by the CPU time of its thread (``time.thread_time``): on a shared machine the
wall clock would count the other jobs' time slices too. Reported: median ms of each, and the sampler's **share of a step**
``sample / (sample + loss_and_grad)`` for each stream, with the CPU's SIMD extensions as numpy
reports them (``numpy.show_runtime()``: baseline, found, not found). Run::

    python benchmarks/bench_sampler.py                                   # two sizes, 30 repeats
    python benchmarks/bench_sampler.py --sizes 16,32,64,16,256 --repeats 50 --json sampler.json

``--json OUT`` writes every number and the SIMD level (atomically: a temporary file, then
``os.replace``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from numerics.models import get_model  # noqa: E402
from numerics.tasks import sample  # noqa: E402
from theory import PowerLawSpectrum  # noqa: E402
from theory.data_law import STREAMS  # noqa: E402

SIZES = ((16, 32, 64, 16, 256), (32, 64, 128, 32, 256))
SPECTRA = ((0.0, 0.0), (1.0, 1.0))


def simd_extensions() -> dict:
    """numpy's view of the CPU: ``{'baseline': [...], 'found': [...], 'not_found': [...]}``."""
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        # the lists numpy.show_runtime() prints under "simd_extensions"
        from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__
    found = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]
    not_found = [name for name in __cpu_dispatch__ if not __cpu_features__.get(name)]
    return {"baseline": list(__cpu_baseline__), "found": found, "not_found": not_found}


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; ``platform.processor()`` elsewhere): every benchmark's record."""
    import platform

    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def measure(size: tuple, spectrum_exponents: tuple, repeats: int) -> dict:
    d, N, P, L, B = size
    model = get_model("nonlinear")
    spectrum = PowerLawSpectrum(*spectrum_exponents, d)
    rng = np.random.default_rng(0)
    params = model.init_params(d, N, L, rng, dtype=np.float32)
    batch = sample("difficult", spectrum, P, B, rng, k=2, dtype=np.float32)
    calls = {f"stream_{s}": (lambda s=s: sample("difficult", spectrum, P, B, rng, k=2, dtype=np.float32, stream=s))
             for s in STREAMS}
    calls["loss_and_grad"] = lambda: model.loss_and_grad(params, batch)
    times = {name: [] for name in calls}
    for call in calls.values():
        call()
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.thread_time()
            call()
            times[name].append(time.thread_time() - start)
    ms = {name: 1e3 * statistics.median(values) for name, values in times.items()}
    out = {"size": list(size), "a": spectrum_exponents[0], "b": spectrum_exponents[1], "ms": ms}
    for stream in (f"stream_{s}" for s in STREAMS):
        out[f"share_{stream}"] = ms[stream] / (ms[stream] + ms["loss_and_grad"])
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="*", default=None, help="d,N,P,L,batch tuples")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(argv)
    sizes = SIZES if not args.sizes else tuple(tuple(int(x) for x in s.split(",")) for s in args.sizes)
    simd = simd_extensions()
    print(f"numpy {np.__version__}; SIMD baseline {simd['baseline'][-1] if simd['baseline'] else '-'}, "
          f"found {', '.join(simd['found'])}; not found {', '.join(simd['not_found']) or '-'}")
    print(f"load average before: {os.getloadavg()}")
    rows = []
    print("d, N, P, L, B          a, b   | " + "  ".join(f"stream {s} ms" for s in STREAMS)
          + "  loss_and_grad ms | " + "  ".join(f"share {s}" for s in STREAMS))
    for size in sizes:
        for exponents in SPECTRA:
            row = measure(size, exponents, args.repeats)
            rows.append(row)
            ms = row["ms"]
            print(f"{str(size):22s} {exponents[0]:.0f}, {exponents[1]:.0f} | "
                  + "  ".join(f"{ms[f'stream_{s}']:11.2f}" for s in STREAMS) + f"  {ms['loss_and_grad']:16.2f} | "
                  + "  ".join(f"{100 * row[f'share_stream_{s}']:5.0f} %" for s in STREAMS))
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        payload = {"numpy": np.__version__, "simd_extensions": simd, "repeats": args.repeats, "rows": rows}
        target = Path(args.json)
        with tempfile.NamedTemporaryFile("w", dir=target.parent or ".", delete=False, suffix=".tmp") as handle:
            json.dump(payload, handle, indent=2)
        os.replace(handle.name, target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
