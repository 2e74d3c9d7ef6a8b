"""Lockstep benchmark: a certified-study cell's candidates trained together against one by one.

``numerics.lockstep.train_lockstep(configs, initial_params=...)`` trains the K trained candidates
of a cell on one sampled batch per step (and one held-out set), bitwise equal to training each
alone with ``numerics.train.train``. This script measures what that saves, on real cells of
``Plan()`` (d = 16, N = 32, P = 64, B = 256, float32, sampler stream 2, the plan's
learning-rate ladders, oracle and nested starts) with short caps so a cell takes seconds:

* ``cold_steps`` / ``warm_steps`` replaced by ``--cold-steps`` / ``--warm-steps`` (300 / 150);
* ``evals_per_run`` replaced by ``--evals-per-run`` (1): the plan evaluates 16 times per 6000
  cold steps; at 300 steps one evaluation (plus the one at step 0) keeps about the same
  evaluation share of a run, where 16 would make the 4096-context evaluations a third of it;
* ``bound_contexts`` (the Monte Carlo that fits the oracle heads, not timed) ``--bound-contexts``;
* the nested start duplicates the depth-L/2 model's *initial* weights (the study uses the
  parent cell's winner; the work per step is the same).

Per cell, in interleaved repeats (every cell's lockstep, then its one-by-one, then the next
cell; then again), process CPU seconds (``time.process_time``, core-seconds: one thread) of

* **lockstep** -- ``train_lockstep(configs, initial_params=starts)``;
* **one by one** -- ``train(config, initial_params=start)`` for each candidate in turn;

per trained candidate, median over repeats; the ratio one-by-one / lockstep per cell and its
median over cells. The first repeat checks that both give the same final weights (bitwise).

``--profile`` then splits one lockstep step of each cell into its pieces (process CPU time,
each piece timed over ``--profile-steps`` steps, the pieces called as ``ModelRun.advance``
calls them): the sampler (one draw per step, shared), ``loss_and_grad`` (per candidate), the
finiteness checks + clipping + ``adam_update`` (per candidate) and one evaluation of the
held-out set (per candidate and evaluation), with the share of each in a lockstep step at the
benchmark's caps and at the plan's own caps (6000 / 3000 steps, 16 evaluations), and the ratio
those shares predict. One BLAS thread (set below, before numpy is imported). Run::

    python benchmarks/bench_lockstep.py --repeats 3 --profile --json lockstep.json
    python benchmarks/bench_lockstep.py --cells 0,0.5,64,2 --repeats 5

``--cells`` takes ``a,b,P,L`` tuples (cells of ``Plan()``; the (0, 0) spectrum at the
main P has the doubled candidates). ``--json OUT`` writes every number with the SIMD level
(atomically).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sampler import simd_extensions  # noqa: E402  (the one home of the SIMD report)

from numerics.experiments.study.plan import Plan  # noqa: E402
from numerics.experiments.study.run import _start  # noqa: E402  (the study's own starts)
from numerics.lockstep import train_lockstep  # noqa: E402
from numerics.models import check_initial_params, get_model  # noqa: E402
from numerics.train import (  # noqa: E402
    ModelRun,
    adam_init,
    adam_update,
    clip_by_global_norm,
    evaluate,
    evaluation_batch,
    learning_rate_at,
    train,
)

#: (a, b, P, L): an anisotropic spectrum (a Haar rotation per context) at small and large depth,
#: and the flat spectrum at the main P, whose cells carry the doubled candidates
DEFAULT_CELLS = ((0.0, 0.5, 64, 1), (0.0, 0.5, 64, 2), (0.0, 0.5, 64, 16), (0.0, 0.5, 64, 128), (0.0, 0.0, 64, 16))


def parse_cell(text: str) -> tuple:
    try:
        a, b, P, L = text.split(",")
        return float(a), float(b), int(P), int(L)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a cell is a,b,P,L (e.g. 0,0.5,64,16); got {text!r}") from None


def cell_setup(plan: Plan, a: float, b: float, P: int, depth: int) -> dict:
    """The trained candidates of a cell: their labels, TrainConfigs and initial weights (as ``run_cell`` builds them)."""
    cell = plan.cell(a, b, P, depth, seed=0, parent="benchmark" if depth > 1 else None)
    if depth > 1:  # the nested start needs a depth-L/2 model: its initial weights here
        model = get_model(cell.model)
        parent = model.init_params(cell.d, cell.N, depth // 2, np.random.default_rng(1), dtype=np.float32)
        cell = dataclasses.replace(cell, parent_params=parent)
    starts = {kind: _start(cell, kind, True) for kind in {c.start for c in cell.candidates}}
    trained = [c for c in cell.candidates if c.trained]
    return {
        "cell": cell,
        "labels": [c.label for c in trained],
        "configs": [cell.train_config(c, starts[c.start][1]) for c in trained],
        "initial_params": [starts[c.start][0] for c in trained],
    }


def run_lockstep(setup: dict) -> tuple[float, list]:
    t0 = time.process_time()
    results = train_lockstep(setup["configs"], initial_params=setup["initial_params"])
    return time.process_time() - t0, results


def run_one_by_one(setup: dict) -> tuple[float, list]:
    t0 = time.process_time()
    results = [train(c, initial_params=p) for c, p in zip(setup["configs"], setup["initial_params"])]
    return time.process_time() - t0, results


def same_weights(first: list, second: list) -> bool:
    for r1, r2 in zip(first, second):
        if isinstance(r1, Exception) or isinstance(r2, Exception):
            if type(r1) is not type(r2):
                return False
            continue
        if any(not np.array_equal(r1.params[k], r2.params[k]) for k in r1.params):
            return False
    return True


def profile_cell(setup: dict, steps: int, eval_repeats: int = 3) -> dict:
    """CPU ms of the pieces of one lockstep step (sampler, and per candidate loss_and_grad, Adam, one evaluation)."""
    configs = setup["configs"]
    model = get_model(configs[0].model)
    stream = ModelRun(configs[0], initial_params=setup["initial_params"][0])
    eval_batch = evaluation_batch(configs[0])
    params = [check_initial_params(model, p, c.d, c.N, c.depth, c.numpy_dtype) if p is not None else
              model.init_params(c.d, c.N, c.depth, np.random.default_rng(0), dtype=c.numpy_dtype, **c.init_options)
              for c, p in zip(configs, setup["initial_params"])]
    states = [adam_init(p) for p in params]
    sampler = lag = adam = 0.0
    for step in range(steps):
        t0 = time.process_time()
        batch = stream.draw_batch()
        t1 = time.process_time()
        sampler += t1 - t0
        for i, config in enumerate(configs):
            t1 = time.process_time()
            with np.errstate(over="ignore", invalid="ignore"):
                loss, grads = model.loss_and_grad(params[i], batch)
            t2 = time.process_time()
            float(loss)
            all(bool(np.all(np.isfinite(g))) for g in grads.values())
            grads, _ = clip_by_global_norm(grads, config.grad_clip)
            params[i], states[i] = adam_update(params[i], grads, states[i], learning_rate_at(step, config),
                                               config.beta1, config.beta2, config.eps)
            t3 = time.process_time()
            lag += t2 - t1
            adam += t3 - t2
    evals = []
    for _ in range(eval_repeats):
        t0 = time.process_time()
        with np.errstate(over="ignore", invalid="ignore"):
            evaluate(model, params[0], eval_batch)
        evals.append(time.process_time() - t0)
    K = len(configs)
    return {"sampler_ms": 1e3 * sampler / steps, "loss_and_grad_ms_per_candidate": 1e3 * lag / steps / K,
            "adam_ms_per_candidate": 1e3 * adam / steps / K, "evaluation_ms": 1e3 * statistics.median(evals),
            "steps": steps, "candidates": K}


def predicted(profile: dict, caps: list[int], evals: list[int]) -> dict:
    """CPU seconds of lockstep and one-by-one training from the pieces, and the share of each piece in lockstep."""
    s, g, u, e = (profile[k] / 1e3 for k in ("sampler_ms", "loss_and_grad_ms_per_candidate", "adam_ms_per_candidate",
                                           "evaluation_ms"))
    per_candidate = sum(caps) * (g + u) + sum(evals) * e
    lockstep = max(caps) * s + per_candidate
    one_by_one = sum(caps) * s + per_candidate
    return {"lockstep_s": lockstep, "one_by_one_s": one_by_one, "ratio": one_by_one / lockstep,
            "share_sampler": max(caps) * s / lockstep, "share_loss_and_grad": sum(caps) * g / lockstep,
            "share_adam": sum(caps) * u / lockstep, "share_evaluation": sum(evals) * e / lockstep}


def eval_count(config) -> int:
    """Evaluations of a run: at step 0, every ``eval_every`` steps and at the cap."""
    return 1 + len(set(range(config.eval_every, config.max_steps + 1, config.eval_every)) | {config.max_steps})


def write_json_atomically(path: str, data: dict) -> None:
    target = Path(path).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=2, allow_nan=False)
            handle.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench_lockstep.py",
        description="CPU seconds per candidate of a certified-study cell trained in lockstep (train_lockstep) against "
        "one by one (train), on real cells of Plan() with short caps, interleaved repeats, medians; "
        "optionally a profile of one lockstep step.",
        epilog="Example: python benchmarks/bench_lockstep.py --repeats 3 --profile --json lockstep.json",
    )
    parser.add_argument("--cells", nargs="+", type=parse_cell, default=list(DEFAULT_CELLS), metavar="a,b,P,L",
                        help="cells of Plan() (default: %(default)s)")
    parser.add_argument("--cold-steps", type=int, default=300, help="cold candidates' cap (plan: 6000; default %(default)s)")
    parser.add_argument("--warm-steps", type=int, default=150, help="warm candidates' cap (plan: 3000; default %(default)s)")
    parser.add_argument("--evals-per-run", type=int, default=1, help="evaluations per run (plan: 16; default %(default)s)")
    parser.add_argument("--bound-contexts", type=int, default=2048,
                        help="contexts of the oracle heads' fit (untimed; plan: 8192; default %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default %(default)s)")
    parser.add_argument("--profile", action="store_true", help="split one lockstep step of each cell into its pieces")
    parser.add_argument("--profile-steps", type=int, default=20, help="steps timed by --profile (default %(default)s)")
    parser.add_argument("--json", metavar="OUT", help="write all results to OUT (atomically)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or min(args.cold_steps, args.warm_steps, args.evals_per_run, args.profile_steps) < 1:
        parser.error("--repeats, --cold-steps, --warm-steps, --evals-per-run and --profile-steps must be >= 1")
    real = Plan()
    plan = dataclasses.replace(real, cold_steps=args.cold_steps, warm_steps=args.warm_steps,
                               evals_per_run=args.evals_per_run, bound_contexts=args.bound_contexts)
    simd = simd_extensions()
    load_before = os.getloadavg()
    print(f"numpy {np.__version__}; SIMD baseline {simd['baseline'][-1] if simd['baseline'] else '-'}, found "
          f"{', '.join(simd['found'])}; not found {', '.join(simd['not_found']) or '-'}; {os.cpu_count()} cores")
    print(f"plan: d={plan.d} N={plan.N} P={plan.P} batch={plan.batch_size} {plan.dtype} stream {plan.stream}; caps "
          f"{plan.cold_steps}/{plan.warm_steps} (plan {real.cold_steps}/{real.warm_steps}), {plan.evals_per_run} "
          f"evaluation(s) per run of {plan.eval_size} contexts; load average before {load_before[0]:.2f} "
          f"{load_before[1]:.2f} {load_before[2]:.2f}", flush=True)
    setups = []
    for a, b, P, L in args.cells:
        t0 = time.perf_counter()
        setup = cell_setup(plan, a, b, P, L)
        setups.append(setup)
        print(f"cell a={a:g} b={b:g} P={P} L={L}: {len(setup['configs'])} trained candidates "
              f"({', '.join(setup['labels'])}); set up in {time.perf_counter() - t0:.1f} s", flush=True)
    # one untimed warm-up of each cell's smallest run (first-call overheads)
    for setup in setups:
        warm = dataclasses.replace(setup["configs"][0], max_steps=2, eval_every=2)
        train(warm, initial_params=setup["initial_params"][0])
    times = [{"lockstep": [], "one_by_one": []} for _ in setups]
    equal = [None] * len(setups)
    for repeat in range(args.repeats):  # interleaved: cell 1 lockstep, one by one, cell 2 ..., then again
        for i, setup in enumerate(setups):
            lock_s, lock_results = run_lockstep(setup)
            alone_s, alone_results = run_one_by_one(setup)
            times[i]["lockstep"].append(lock_s)
            times[i]["one_by_one"].append(alone_s)
            if repeat == 0:
                equal[i] = same_weights(lock_results, alone_results)
            K = len(setup["configs"])
            print(f"repeat {repeat + 1}, cell {i + 1}: lockstep {lock_s / K:.2f} s, one by one {alone_s / K:.2f} s "
                  f"per candidate (ratio {alone_s / lock_s:.2f})", flush=True)
    rows = []
    for (a, b, P, L), setup, t, same in zip(args.cells, setups, times, equal):
        K = len(setup["configs"])
        lock, alone = statistics.median(t["lockstep"]), statistics.median(t["one_by_one"])
        rows.append({"a": a, "b": b, "P": P, "L": L, "candidates": K, "labels": setup["labels"],
                     "doubled": any(c.doubled for c in setup["cell"].candidates),
                     "caps": [c.max_steps for c in setup["configs"]],
                     "lockstep_s_per_candidate": lock / K, "one_by_one_s_per_candidate": alone / K,
                     "ratio": alone / lock, "lockstep_all_s": t["lockstep"], "one_by_one_all_s": t["one_by_one"],
                     "same_final_weights": same})
    load_after = os.getloadavg()
    print("\nCPU s per trained candidate (median over interleaved repeats); ratio = one by one / lockstep")
    print(f"{'a, b, P, L':<18}{'K':>3}{'doubled':>9}{'lockstep':>10}{'one by one':>12}{'ratio':>7}{'same w':>8}")
    for r in rows:
        print(f"{r['a']:g}, {r['b']:g}, {r['P']}, {r['L']:<8}{r['candidates']:>3}{'yes' if r['doubled'] else 'no':>9}"
              f"{r['lockstep_s_per_candidate']:>10.3f}{r['one_by_one_s_per_candidate']:>12.3f}{r['ratio']:>7.2f}"
              f"{'yes' if r['same_final_weights'] else 'NO':>8}")
    median_ratio = statistics.median(r["ratio"] for r in rows)
    print(f"median ratio over cells: {median_ratio:.2f}")
    if args.profile:
        print(f"\nprofile of one lockstep step (CPU ms, {args.profile_steps} steps; per candidate where said); "
              "shares of a lockstep run and the ratio they predict, at these caps and at the plan's")
        print(f"{'a, b, P, L':<18}{'sampler':>9}{'l&g/cand':>10}{'adam/cand':>10}{'eval':>8}"
              f"{'smp %':>7}{'l&g %':>7}{'adam %':>7}{'eval %':>7}{'pred':>6}{'plan: smp %':>12}{'l&g %':>7}{'eval %':>7}{'pred':>6}")
        for r, setup in zip(rows, setups):
            prof = profile_cell(setup, args.profile_steps)
            caps = [c.max_steps for c in setup["configs"]]
            here = predicted(prof, caps, [eval_count(c) for c in setup["configs"]])
            real_setup_caps = [c.steps for c in real.candidates(r["L"], doubled=r["doubled"]) if c.trained]
            real_evals = [1 + real.evals_per_run for _ in real_setup_caps]
            plan_pred = predicted(prof, real_setup_caps, real_evals)
            r["profile"], r["predicted_here"], r["predicted_plan_caps"] = prof, here, plan_pred
            print(f"{r['a']:g}, {r['b']:g}, {r['P']}, {r['L']:<8}{prof['sampler_ms']:>9.2f}"
                  f"{prof['loss_and_grad_ms_per_candidate']:>10.2f}{prof['adam_ms_per_candidate']:>10.2f}"
                  f"{prof['evaluation_ms']:>8.1f}{100 * here['share_sampler']:>6.0f}%{100 * here['share_loss_and_grad']:>6.0f}%"
                  f"{100 * here['share_adam']:>6.0f}%{100 * here['share_evaluation']:>6.0f}%{here['ratio']:>6.2f}"
                  f"{100 * plan_pred['share_sampler']:>11.0f}%{100 * plan_pred['share_loss_and_grad']:>6.0f}%"
                  f"{100 * plan_pred['share_evaluation']:>6.0f}%{plan_pred['ratio']:>6.2f}", flush=True)
    print(f"\nload average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; after: "
          f"{load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} ({os.cpu_count()} cores)")
    if args.json:
        write_json_atomically(args.json, {
            "benchmark": "bench_lockstep", "numpy": np.__version__, "simd_extensions": simd,
            "command": " ".join([Path(sys.argv[0]).name] + (sys.argv[1:] if argv is None else list(argv))),
            "plan": plan.to_dict(),
            "load_before": list(load_before), "load_after": list(load_after), "rows": rows,
            "median_ratio": median_ratio,
        })
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
