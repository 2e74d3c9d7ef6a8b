"""Bitwise check of run results against a reference tree: every metric and array of a handful of small runs.

A refactor of the trainer, the diagnostics or the sweep runner must not move a stored number: the
store keys results by config hash, so a changed byte would silently mix two versions in one store.
This script trains small configs covering every model of :data:`numerics.models.MODELS`, the easy
and the difficult task, depth 1 and depth > 1, float32 and float64, held-out sets smaller than
the top-1 probe, larger than one evaluation chunk and (context-update and wide models) evaluated in
chunks smaller than 512, each

* through :func:`numerics.experiments.runner.run` (the sweep's runner) and
* through :func:`numerics.lockstep.train_lockstep` (the configs of one data law in one group),

in this tree and in a reference tree (a worktree of an earlier commit), each in its own
single-threaded subprocess, and compares every metric and array byte for byte (wall and CPU
times excepted). Lockstep results of this tree are also compared with the reference runner's
results, key by key: both are ``train``'s result with the same diagnostics. Run::

    git worktree add /tmp/ref HEAD --detach      # before the change
    python benchmarks/bitwise_results.py --reference /tmp/ref

Exit status 0 when every key of every run is equal, 1 otherwise (the differing keys are listed).
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: metrics that measure the machine, not the run
TIMES = ("wall_time", "cpu_time")

#: data laws: (name, the fields they fix); every model runs at each depth of ``depths``
LAWS = (
    ("easy-f32", dict(task="easy", d=4, P=16, a=0.5, b=0.5, eval_size=600, dtype="float32"), (1, 3)),
    ("difficult-f64", dict(task="difficult", k=2, d=4, P=16, a=0.0, b=0.5, eval_size=300, dtype="float64"), (1, 2)),
    ("small-probe", dict(task="difficult", k=3, d=3, P=12, eval_size=100, dtype="float32"), (2,)),
)
#: runs whose evaluation chunk (numerics.models.chunk_size) is below 512: (name, fields, models, depth)
WIDE = (
    ("context-wide", dict(task="difficult", k=2, d=4, P=128, eval_size=1024, dtype="float32"), ("context_updates",), 2),
    ("wide", dict(task="easy", d=4, N=48, P=384, eval_size=600, dtype="float32"), ("nonlinear", "linear"), 2),
    ("linear-wide", dict(task="difficult", k=2, d=64, N=64, P=512, eval_size=1024, dtype="float32"), ("linear",), 1),
)
COMMON = dict(N=8, batch_size=16, max_steps=12, eval_every=5, warmup_steps=2, window=100, seed=3)


def groups() -> list[tuple[str, list[dict]]]:
    """The configs as field dicts, grouped by data law (one lockstep group each)."""
    from numerics.models import MODELS

    out = []
    for name, law, depths in LAWS:
        out.append((name, [dict(COMMON, **law, model=m, depth=L) for m in MODELS for L in depths]))
    for name, law, models, depth in WIDE:
        out.append((name, [dict(COMMON, **law, model=m, depth=depth) for m in models]))
    return out


def plain(result) -> tuple[dict, dict, dict]:
    """``(metrics, arrays, params)`` of a training result, as plain dicts (what :func:`differences` compares)."""
    return dict(result.metrics), dict(result.arrays), dict(result.params)


def dump(path: Path) -> None:
    """Train every config both ways in the tree on ``sys.path``; pickle ``{key: (metrics, arrays)}``."""
    from numerics.experiments.runner import run
    from numerics.lockstep import train_lockstep
    from numerics.train import TrainConfig

    out = {}
    for name, fields in groups():
        configs = [TrainConfig(**f) for f in fields]
        for f, config in zip(fields, configs):
            out[("run", name, f["model"], f["depth"])] = plain(run(config))
        for f, result in zip(fields, train_lockstep(configs)):
            out[("lockstep", name, f["model"], f["depth"])] = plain(result)
    import numerics

    path.write_bytes(pickle.dumps({"tree": str(Path(numerics.__file__).resolve().parents[1]), "results": out}))


def _child(tree: Path, path: Path) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(tree))
    subprocess.run([sys.executable, __file__, "--dump", str(path)], env=env, check=True, cwd=tree)
    out = pickle.loads(path.read_bytes())
    if Path(out["tree"]) != tree.resolve():
        raise SystemExit(f"the child imported the package from {out['tree']}, not from {tree}")
    return out["results"]


def bitwise_equal(a, b) -> bool:
    """Equal to the byte: arrays in dtype, shape and bytes; floats as float64 bytes (NaN equals NaN)."""
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    return type(a) is type(b) and a == b


def differences(mine: tuple, theirs: tuple, subset: bool = False) -> list[str]:
    """Keys of metrics, arrays and params that differ (``subset``: only the reference's keys count)."""
    out = []
    for kind, a, b in zip(("metrics", "arrays", "params"), mine, theirs):
        keys_a, keys_b = set(a) - set(TIMES), set(b) - set(TIMES)
        if not subset and keys_a != keys_b:
            out.append(f"{kind} keys: only here {sorted(keys_a - keys_b)}, only in the reference {sorted(keys_b - keys_a)}")
        out += [f"{kind}[{k!r}]" for k in sorted(keys_a & keys_b) if not bitwise_equal(a[k], b[k])]
        if subset:
            out += [f"{kind}[{k!r}] missing" for k in sorted(keys_b - keys_a)]
    return out


def compare(here: dict, reference: dict) -> dict[str, list[str]]:
    """Per run, the differing keys: run vs reference run, lockstep vs reference lockstep and reference run."""
    report = {}
    for key, result in sorted(here.items()):
        label = " ".join(map(str, key))
        report[label] = differences(result, reference[key], subset=key[0] == "lockstep")
        if key[0] == "lockstep":
            report[label + " (vs reference run)"] = differences(result, reference[("run",) + key[1:]])
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, help="the reference source tree (a git worktree)")
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # the child: train and pickle
    args = parser.parse_args(argv)
    if args.dump is not None:
        dump(args.dump)
        return 0
    if args.reference is None or not (args.reference / "numerics").is_dir():
        parser.error("--reference: a source tree of the package is required")
    with tempfile.TemporaryDirectory() as tmp:
        here = _child(ROOT, Path(tmp) / "here.pkl")
        reference = _child(args.reference, Path(tmp) / "reference.pkl")
    report = compare(here, reference)
    keys = sum(len(r[0]) + len(r[1]) + len(r[2]) for r in here.values())
    bad = {label: diff for label, diff in report.items() if diff}
    for label, diff in bad.items():
        print(f"DIFFER {label}: {', '.join(diff)}")
    runs = sum(1 for k in here if k[0] == "run")
    print(f"{runs} configs, {len(here)} results ({keys} metrics, arrays and params), {len(report)} comparisons: "
          f"{'all equal, bitwise' if not bad else f'{len(bad)} differ'} (times {', '.join(TIMES)} excepted)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
