"""Whole-run throughput: CPU seconds of complete training runs (``numerics.experiments.runner.run``: training,
evaluations and the figure diagnostics) in this tree against a baseline tree, on the same configs, interleaved.

The configs come from a sweep store (every finished run of a reproduction, e.g. ``reproduction/store``);
``--sample N`` takes N of them spread over the families' models, tasks and depths (deterministic). Each run
executes in its own single-threaded subprocess (``OMP_NUM_THREADS=1``) with the tree first on ``sys.path``;
the trees alternate run by run, so the machine's load affects both alike. Reported: CPU seconds per run in
each tree (user + system of the subprocess), the total over the sample and the ratio baseline / this tree,
with the median of the per-run ratios.

Example (the quick plan before the speed work, commit eef2f6d, against this tree)::

    git worktree add /tmp/base eef2f6d
    OMP_NUM_THREADS=1 python benchmarks/bench_runs.py --store reproduction/store --baseline /tmp/base --sample 16

The quick plan's runs are mostly batch 32: there the per-step fixed costs, the periodic evaluations and the
diagnostics after training weigh as much as the training steps (``--profile`` prints one run's profile).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, os, resource, sys
sys.path.insert(0, sys.argv[1])
from numerics.experiments.runner import run
from numerics.train import TrainConfig
fields = json.loads(sys.argv[2])
known = set(TrainConfig.__dataclass_fields__)
config = TrainConfig(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in fields.items() if k in known})
before = os.times()
result = run(config)
after = os.times()
print(json.dumps({"cpu": (after.user - before.user) + (after.system - before.system),
                  "R_L": float(result.metrics["R_L"])}))
"""


def _configs(store: Path, sample: int) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from numerics.experiments.store import load_results

    records = sorted(load_results(store, status="done"), key=lambda r: r["hash"])
    if not records:
        raise SystemExit(f"--store {store}: no finished runs")
    by_kind: dict = {}
    for r in records:
        c = r["config"]
        by_kind.setdefault((c["model"], c["task"]), []).append(c)
    picked: list = []
    while len(picked) < min(sample, len(records)):  # round robin over (model, task), depths spread within
        for kind in sorted(by_kind):
            group = sorted(by_kind[kind], key=lambda c: (c["depth"], c["a"], c["b"], c["seed"]))
            taken = sum(1 for c in picked if (c["model"], c["task"]) == kind)
            if taken < len(group) and len(picked) < sample:
                picked.append(group[(taken * 7919) % len(group)] if taken else group[-1])
    return picked


def _run(tree: Path, config: dict) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, "-c", _CHILD, str(tree), json.dumps(config)], capture_output=True,
                         text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="sweep store whose finished runs give the configs")
    parser.add_argument("--baseline", type=Path, required=True, help="the baseline source tree (a git worktree)")
    parser.add_argument("--sample", type=int, default=16, help="runs to time (default 16)")
    parser.add_argument("--json", type=Path, default=None, help="write every number here")
    args = parser.parse_args(argv)
    if not (args.baseline / "numerics").is_dir():
        parser.error(f"--baseline {args.baseline}: not a source tree of the package")
    configs = _configs(args.store, args.sample)
    load = os.getloadavg()
    rows = []
    for i, config in enumerate(configs):
        order = [("baseline", args.baseline), ("this tree", ROOT)] if i % 2 == 0 else [("this tree", ROOT),
                                                                                        ("baseline", args.baseline)]
        result = {name: _run(tree, config) for name, tree in order}
        rows.append({"config": config, **result})
        b, t = result["baseline"]["cpu"], result["this tree"]["cpu"]
        print(f"{config['model']:>15} {config['task']:>9} d={config['d']:<3} N={config['N']:<3} P={config['P']:<4} "
              f"L={config['depth']:<3} batch={config['batch_size']:<4} steps={config['max_steps']:<5} "
              f"baseline {b:6.2f} s  this tree {t:6.2f} s  ratio {b / t:5.2f}", flush=True)
    base = sum(r["baseline"]["cpu"] for r in rows)
    this = sum(r["this tree"]["cpu"] for r in rows)
    ratios = [r["baseline"]["cpu"] / r["this tree"]["cpu"] for r in rows]
    print(f"total over {len(rows)} runs: baseline {base:.1f} s, this tree {this:.1f} s, ratio {base / this:.2f}; "
          f"median per-run ratio {statistics.median(ratios):.2f}; load averages before {load}, after "
          f"{os.getloadavg()}")
    if args.json is not None:
        from numerics.io import write_json

        write_json(args.json, {"rows": rows, "baseline_total": base, "this_total": this, "ratio": base / this,
                               "median_ratio": statistics.median(ratios), "date": time.strftime("%Y-%m-%d %H:%M")})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
