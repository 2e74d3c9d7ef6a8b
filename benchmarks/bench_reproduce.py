"""The main job's run time: ``idepth reproduce --scale quick`` from an empty output directory, measured whole.

Runs the command in a child process (this tree first on ``PYTHONPATH``, default ``--workers``) and
records its wall time, its CPU time (user + system of the child and every process it waited for,
``resource.getrusage(RUSAGE_CHILDREN)``), the 1-minute load average before, during (sampled every
5 s) and after, the machine (cores, CPU, numpy's SIMD level) and the estimate the command printed
before training (the cost model, calibrated on this machine: its wall and CPU minutes). The idle
estimate of the wall time is the measured CPU time divided by the cores plus the part the main
process does alone (from the log: the first figure drawn to the report written; measured under the
load of the run, so at most that on idle cores); the ratio of the printed estimate to the measured
wall time says how good the cost model is.

The record is written atomically to ``--json`` (default ``benchmarks/results/reproduce_quick.json``);
``numerics.experiments.reproduce.scales.measured_run_time`` reads every ``reproduce_<scale>*.json`` there (the one
source of the run time the README, ``idepth reproduce --help``, the plan and the report quote). Regenerate with::

    python benchmarks/bench_reproduce.py                  # about 10 minutes on 2 idle cores
    python benchmarks/bench_reproduce.py --scale smoke --json /tmp/smoke.json   # the pipeline only
    python benchmarks/bench_reproduce.py --show benchmarks/results/reproduce_quick.json   # its Markdown

Measure on an idle machine: another job on the same cores lengthens the wall time and, through
shared caches, the CPU time; the load averages in the record say how idle it was.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "reproduce_quick.json"

#: the estimate line the command prints before training (numerics.experiments.reproduce.calibration)
_ESTIMATE = re.compile(r"estimated (?P<wall>[\d.]+) (?P<wall_unit>s|min|h) wall on (?P<workers>\d+) \S+ workers?, "
                       r"(?P<cpu>[\d.]+) (?P<cpu_unit>s|min|h) CPU")
#: a log line's elapsed seconds and text
_LOG = re.compile(r"^\[\s*(?P<seconds>\d+) s\] (?P<text>.*)$")
_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def _load() -> float:
    return os.getloadavg()[0]


def _phases(log_lines: list[str]) -> list[dict]:
    """``[{"at": s, "what": text}]`` of the command's timestamped log lines (the first 100 characters)."""
    out = []
    for line in log_lines:
        match = _LOG.match(line)
        if match:
            out.append({"at": int(match["seconds"]), "what": match["text"][:100]})
    return out


def _estimate(log_lines: list[str]) -> dict | None:
    for line in log_lines:
        match = _ESTIMATE.search(line)
        if match:
            return {"wall_seconds": float(match["wall"]) * _UNITS[match["wall_unit"]],
                    "cpu_seconds": float(match["cpu"]) * _UNITS[match["cpu_unit"]],
                    "workers": int(match["workers"]), "line": line.split("] ", 1)[-1]}
    return None


def _runs_by_kind(store: Path) -> list[dict]:
    """CPU seconds of the finished runs in ``store`` by (model, task, d, P, batch, steps), with the cost model's
    reference seconds (their ratio is the engine's speed here, as the calibration measures it)."""
    from numerics.experiments.reproduce.plan import estimate_run_seconds
    from numerics.experiments.store import load_results
    from numerics.train import TrainConfig

    known = set(TrainConfig.__dataclass_fields__)
    groups: dict = {}
    for record in load_results(store, status="done"):
        fields = {k: (tuple(v) if isinstance(v, list) else v) for k, v in record["config"].items() if k in known}
        config = TrainConfig(**fields)
        key = (config.model, config.task, config.d, config.P, config.batch_size, config.max_steps)
        group = groups.setdefault(key, {"model": config.model, "task": config.task, "d": config.d, "P": config.P,
                                        "batch": config.batch_size, "steps": config.max_steps, "runs": 0,
                                        "cpu_seconds": 0.0, "reference_seconds": 0.0})
        group["runs"] += 1
        group["cpu_seconds"] += float(record["metrics"]["cpu_time"])
        group["reference_seconds"] += estimate_run_seconds(config)
    rows = sorted(groups.values(), key=lambda g: -g["cpu_seconds"])
    for row in rows:
        row["cpu_seconds"], row["reference_seconds"] = round(row["cpu_seconds"], 1), round(row["reference_seconds"], 1)
    return rows


def measure(scale: str, out_dir: Path, extra: list[str]) -> dict:
    """Run ``idepth reproduce --scale SCALE --out OUT_DIR`` once; the record of :func:`main`."""
    sys.path.insert(0, str(ROOT))
    from numerics.experiments.reproduce.calibration import machine_description

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + ([os.environ["PYTHONPATH"]]
                                                                       if os.environ.get("PYTHONPATH") else [])))
    command = [sys.executable, "-m", "idepth.cli", "reproduce", "--scale", scale, "--out", str(out_dir), *extra]
    samples: list[float] = []
    done = threading.Event()

    def sample_load() -> None:
        while not done.wait(5.0):
            samples.append(_load())

    load_before = _load()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    sampler = threading.Thread(target=sample_load, daemon=True)
    sampler.start()
    child = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    done.set()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        tail = (child.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"the reproduction failed (exit {child.returncode}): {tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    log = child.stderr.splitlines()
    estimate = _estimate(log)
    phases = _phases(log)
    training_done = next((p["at"] for p in phases if p["what"].startswith("training:")), None)
    drawing = next((p["at"] for p in phases if p["what"].startswith("building ")), None)
    cores = os.cpu_count() or 1
    # the main process alone: figures, tables, report (its wall time here, at most its time on idle cores)
    serial = None if drawing is None else round(wall - drawing, 1)
    return {
        "command": "idepth " + " ".join(command[3:]).replace(str(out_dir), "OUT"),
        "scale": scale,
        "machine": machine_description(),
        # numpy's kernels switched off for this run (measuring its AVX2 kernels on an AVX-512 CPU), quoted with it
        "numpy_disabled_cpu_features": os.environ.get("NPY_DISABLE_CPU_FEATURES") or None,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "cpu_over_cores_seconds": round(cpu / cores, 1),
        "training_wall_seconds": training_done,
        "analysis_wall_seconds": None if training_done is None else round(wall - training_done, 1),
        "serial_wall_seconds": serial,
        "idle_estimate_seconds": None if serial is None else round(cpu / cores + serial, 1),
        "load_average_before": round(load_before, 2),
        "load_average_during_mean": round(sum(samples) / len(samples), 2) if samples else None,
        "load_average_during_max": round(max(samples), 2) if samples else None,
        "load_average_after": round(_load(), 2),
        "estimate": estimate,
        "estimate_over_measured_wall": None if estimate is None else round(estimate["wall_seconds"] / wall, 3),
        # the estimate is for this machine without other jobs: compare it with the idle estimate too
        "estimate_over_idle_estimate": None if estimate is None or serial is None
        else round(estimate["wall_seconds"] / (cpu / cores + serial), 3),
        "estimate_cpu_over_measured_cpu": None if estimate is None else round(estimate["cpu_seconds"] / cpu, 3),
        "phases": phases,
        "runs_by_kind": _runs_by_kind(out_dir / "store"),
        "summary": child.stdout.strip().splitlines()[-1] if child.stdout.strip() else "",
        "python": sys.version.split()[0],
    }


def markdown(record: dict) -> str:
    """The record as the Markdown of ``benchmarks/README.md``: the totals, then the runs by kind."""
    est = record["estimate"] or {}
    lines = [
        f"`{record['command']}` on {record['machine']} (numpy's SIMD level), load average "
        f"{record['load_average_before']} before, {record['load_average_during_mean']} during (mean; max "
        f"{record['load_average_during_max']}), Python {record['python']}:",
        "",
        "| wall | CPU | CPU / cores + main process alone (idle estimate) | printed estimate (wall, CPU) | "
        "estimate / idle estimate | estimate / measured CPU | training wall | analysis after training |",
        "|---|---|---|---|---|---|---|---|",
        f"| {record['wall_seconds']:.0f} s | {record['cpu_seconds']:.0f} s | {record['cpu_over_cores_seconds']:.0f} s + "
        f"{record['serial_wall_seconds']:.0f} s = {record['idle_estimate_seconds']:.0f} s | "
        f"{est.get('wall_seconds', float('nan')):.0f} s, {est.get('cpu_seconds', float('nan')):.0f} s | "
        f"{record['estimate_over_idle_estimate']} | {record['estimate_cpu_over_measured_cpu']} | "
        f"{record['training_wall_seconds']} s | {record['analysis_wall_seconds']:.0f} s |",
        "",
        "CPU of the finished runs by kind against the cost model's reference seconds (their ratio: the speed here):",
        "",
        "| model | task | d | P | batch | steps | runs | CPU s | reference s | speed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in record.get("runs_by_kind", []):
        lines.append(f"| {row['model']} | {row['task']} | {row['d']} | {row['P']} | {row['batch']} | {row['steps']} | "
                     f"{row['runs']} | {row['cpu_seconds']:.1f} | {row['reference_seconds']:.1f} | "
                     f"{row['reference_seconds'] / row['cpu_seconds']:.2f} |")
    runs = record.get("runs_by_kind", [])
    if runs:
        cpu, ref = sum(r["cpu_seconds"] for r in runs), sum(r["reference_seconds"] for r in runs)
        lines.append(f"| all | | | | | | {sum(r['runs'] for r in runs)} | {cpu:.1f} | {ref:.1f} | {ref / cpu:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", default="quick", help="the reproduction's scale (default: quick)")
    parser.add_argument("--json", default=str(DEFAULT_JSON), help=f"record written here (default: {DEFAULT_JSON})")
    parser.add_argument("--keep", metavar="DIR", default=None,
                        help="reproduce into DIR (must not exist) and keep it; default: a temporary directory")
    parser.add_argument("--show", metavar="JSON", default=None,
                        help="print the Markdown of an existing record (benchmarks/README.md) and measure nothing")
    parser.add_argument("reproduce_args", nargs="*", help="further options of idepth reproduce, after --")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from numerics.io import write_json

    if args.show is not None:
        import json

        print(markdown(json.loads(Path(args.show).read_text())))
        return 0

    if args.keep is not None and Path(args.keep).exists():
        parser.error(f"--keep: {args.keep} exists; the measurement starts from an empty directory")
    tmp = None if args.keep is not None else tempfile.mkdtemp(prefix="bench-reproduce-")
    out_dir = Path(args.keep) if args.keep is not None else Path(tmp) / "reproduction"
    try:
        record = measure(args.scale, out_dir, list(args.reproduce_args))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    write_json(args.json, record)
    est = record["estimate"]
    print(f"{record['scale']}: {record['wall_seconds']:.0f} s wall, {record['cpu_seconds']:.0f} s CPU "
          f"({record['cpu_over_cores_seconds']:.0f} s per core) on {record['machine']}; load average "
          f"{record['load_average_before']} before, {record['load_average_during_mean']} during; printed estimate "
          + ("none" if est is None else f"{est['wall_seconds']:.0f} s wall ({record['estimate_over_measured_wall']:.2f}"
             " x measured)") + f"; written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
