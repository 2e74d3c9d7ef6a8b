"""``idepth train``: train one model to convergence and write a checkpoint (paper eq. (12)).

A thin layer over :func:`numerics.train.train`: parses the options into a
:class:`numerics.train.TrainConfig`, shows a progress bar, writes the
checkpoint (``params.npz``, ``arrays.npz``, ``config.json``, ``metrics.json``)
into ``--out`` and prints the final metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "train one model to convergence (paper eq. 12) and write a checkpoint"


def register(subparsers) -> None:
    """Add the ``train`` sub-command to ``subparsers``."""
    from numerics.train import DTYPES, SCHEDULES, TASKS, TrainConfig

    defaults = TrainConfig.__dataclass_fields__
    default = lambda name: defaults[name].default  # noqa: E731
    p = subparsers.add_parser(
        "train",
        help=HELP,
        description=(
            "Train one of the paper's attention models online with Adam on fresh contexts until the "
            "evaluation loss stops improving (or --steps), then evaluate R_L, A_L, C_L (eqs. 61-63), "
            "per-layer and mode-wise errors on a fixed held-out set and write a checkpoint to --out."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    data = p.add_argument_group("data (paper eqs. 1-6)")
    data.add_argument("--task", choices=TASKS, default=default("task"),
                      help="easy: exact-match retrieval (eq. 5); difficult: mean label of the top-k tokens (eq. 6)")
    data.add_argument("--k", type=int, default=default("k"), help="tokens averaged by the difficult task (eq. 6)")
    data.add_argument("--a", type=float, default=default("a"), help="input spectrum exponent a: λ_k = c_λ k^-a (eq. 2)")
    data.add_argument("--b", type=float, default=default("b"), help="teacher spectrum exponent b: ω_k = c_ω k^-b (eq. 2)")
    data.add_argument("--c-lambda", type=float, default=default("c_lambda"), help="input spectrum prefactor c_λ (eq. 2)")
    data.add_argument("--c-omega", type=float, default=default("c_omega"), help="teacher spectrum prefactor c_ω (eq. 2)")
    data.add_argument("--d", type=int, default=default("d"), help="input dimension d")
    data.add_argument("--P", type=int, default=default("P"), help="context length P (number of context tokens)")
    model = p.add_argument_group("model (paper eqs. 7-12, appendix C)")
    model.add_argument("--model", default=default("model"),
                       help="linear, nonlinear, single_stream, untied_values or context_updates")
    model.add_argument("--N", type=int, default=default("N"), help="hidden width N (>= d)")
    model.add_argument("--depth", type=int, default=default("depth"), help="number of attention layers L")
    model.add_argument("--init", action="append", default=[], metavar="KEY=VALUE",
                       help="an init_params option of the model (repeatable), e.g. --init qk_scale=4; "
                            "merged over the model family's default")
    opt = p.add_argument_group("optimisation and stopping")
    opt.add_argument("--seed", type=int, default=default("seed"), help="seed of the initial weights and training batches")
    opt.add_argument("--steps", type=int, default=default("max_steps"), help="step cap (max_steps)")
    opt.add_argument("--batch-size", type=int, default=default("batch_size"), help="fresh contexts per Adam step")
    opt.add_argument("--lr", type=float, default=None,
                     help="peak Adam learning rate (default: the model family's measured default)")
    opt.add_argument("--schedule", choices=SCHEDULES, default=default("schedule"), help="learning-rate schedule")
    opt.add_argument("--warmup", type=int, default=default("warmup_steps"), help="linear warm-up steps")
    opt.add_argument("--grad-clip", type=float, default=None, help="clip the global gradient norm to this value")
    opt.add_argument("--eval-size", type=int, default=default("eval_size"), help="size of the fixed held-out evaluation set")
    opt.add_argument("--eval-every", type=int, default=default("eval_every"), help="evaluate (and checkpoint) every this many steps")
    opt.add_argument("--eval-seed", type=int, default=default("eval_seed"), help="seed of the evaluation set")
    opt.add_argument("--tol", type=float, default=default("tol"),
                     help="converged when the evaluation loss has not improved by this relative amount ...")
    opt.add_argument("--window", type=int, default=default("window"), help="... over this many steps")
    opt.add_argument("--dtype", choices=DTYPES, default=default("dtype"), help="floating-point type")
    out = p.add_argument_group("output")
    out.add_argument("--out", required=True, metavar="DIR", help="checkpoint directory (created; must be empty unless --force)")
    out.add_argument("--force", action="store_true", help="write into a non-empty --out directory, replacing a checkpoint there")
    out.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(func=run)


def _parse_init(items: list[str]) -> dict:
    options = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--init must be KEY=VALUE; got {item!r}")
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text  # a bare word such as identity
        options[key] = value
    return options


def _check_out(path: Path, force: bool) -> None:
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"--out {str(path)!r} is a file, not a directory")
    if path.is_dir() and any(path.iterdir()) and not force:
        raise FileExistsError(f"--out {str(path)!r} is not empty (use --force to write into it)")


def run(args: argparse.Namespace) -> int:
    """Build the config, train with a progress bar, write the checkpoint, print the metrics."""
    from numerics.train import TrainConfig, TrainingDiverged, train

    config = TrainConfig(
        model=args.model, task=args.task, k=args.k, a=args.a, b=args.b, d=args.d, N=args.N, P=args.P,
        depth=args.depth, seed=args.seed, batch_size=args.batch_size, max_steps=args.steps,
        learning_rate=args.lr, schedule=args.schedule, warmup_steps=args.warmup, grad_clip=args.grad_clip,
        init=_parse_init(args.init), eval_size=args.eval_size, eval_every=args.eval_every,
        eval_seed=args.eval_seed, tol=args.tol, window=args.window, dtype=args.dtype,
        c_lambda=args.c_lambda, c_omega=args.c_omega,
    )
    out = Path(args.out)
    _check_out(out, args.force)
    try:
        result = train(config, progress=not args.quiet, checkpoint_dir=out)
    except TrainingDiverged as exc:
        print(f"idepth train: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        m = result.metrics
        status = "converged" if m["converged"] else "stopped at the step cap"
        print(f"{config.model}, {config.task} task, L = {config.depth}: {status} after {m['steps']} steps "
              f"({m['wall_time']:.1f} s)")
        print(f"  R_L = {m['R_L']:.6g} ± {m['R_L_se']:.2g}   A_L = {m['A_L']:.6g}   C_L = {m['C_L']:.6g}")
        print(f"  initial eval loss {m['initial_eval_loss']:.6g}, label variance {m['label_variance']:.6g}")
        print(f"  checkpoint: {out}")
    return 0
