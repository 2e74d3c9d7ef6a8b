"""``idepth train``: train one model to convergence and write a checkpoint (paper eq. (12)).

A thin layer over :func:`numerics.train.train`. Its options are derived from the
fields of :class:`numerics.train.TrainConfig` (one option per field, ``--name``
with ``-`` for ``_``; a few keep shorter historical names), so a new field is an
option without an edit here. The checkpoint (``params.npz``, ``arrays.npz``,
``config.json``, ``metrics.json``) goes into ``--out``; an interrupted run
(Ctrl-C) leaves its last evaluation's checkpoint there, and the same command with
``--resume`` continues it to the same final weights as an uninterrupted run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import typing
from pathlib import Path

HELP = "train one model to convergence (paper eq. 12) and write a checkpoint"

#: option names of a TrainConfig field other than ``--field-name`` (the first is shown in --help)
ALIASES = {
    "max_steps": ("--steps", "--max-steps"),
    "learning_rate": ("--lr", "--learning-rate"),
    "warmup_steps": ("--warmup", "--warmup-steps"),
}

#: help text of each field (a field missing here still gets an option, under "other TrainConfig fields")
FIELD_HELP = {
    "task": "easy: exact-match retrieval (eq. 5); difficult: mean label of the top-k tokens (eq. 6)",
    "k": "tokens averaged by the difficult task (eq. 6)",
    "a": "input spectrum exponent a: λ_k = c_λ k^-a (eq. 2)",
    "b": "teacher spectrum exponent b: ω_k = c_ω k^-b (eq. 2)",
    "c_lambda": "input spectrum prefactor c_λ (eq. 2)",
    "c_omega": "teacher spectrum prefactor c_ω (eq. 2)",
    "d": "input dimension d",
    "P": "context length P (number of context tokens)",
    "model": "the attention model (numerics.models.MODELS)",
    "N": "hidden width N (>= d)",
    "depth": "number of attention layers L",
    "init": "an init_params option of the model (repeatable), e.g. --init qk_scale=4; merged over the model "
            "family's default",
    "frozen": "parameters kept at their initial value, comma separated (repeatable), e.g. --frozen W_o,W_v,W_y "
              "(the gain g = W_o W_v W_y of eq. 60 fixed)",
    "seed": "seed of the initial weights and training batches",
    "max_steps": "step cap (max_steps)",
    "batch_size": "fresh contexts per Adam step",
    "learning_rate": "peak Adam learning rate (default: the model family's measured default)",
    "schedule": "learning-rate schedule",
    "warmup_steps": "linear warm-up steps",
    "beta1": "Adam's first-moment decay rate β1",
    "beta2": "Adam's second-moment decay rate β2",
    "eps": "Adam's denominator offset ε",
    "grad_clip": "clip the global gradient norm to this value",
    "eval_size": "size of the fixed held-out evaluation set",
    "eval_every": "evaluate (and checkpoint) every this many steps",
    "eval_seed": "seed of the evaluation set",
    "tol": "converged when the evaluation loss has not improved by this relative amount ...",
    "window": "... over this many steps",
    "dtype": "floating-point type",
    "engine": "what computes a step: numpy (default) or jax (pip install -e \".[jax]\"; models nonlinear and "
              "nonlinear_rms; JAX's default device, a GPU when present)",
}

GROUPS = (
    ("data (paper eqs. 1-6)", ("task", "k", "a", "b", "c_lambda", "c_omega", "d", "P")),
    ("model (paper eqs. 7-12, appendix C)", ("model", "N", "depth", "init", "frozen")),
    ("optimisation and stopping", ("seed", "max_steps", "batch_size", "learning_rate", "schedule", "warmup_steps",
                                   "beta1", "beta2", "eps", "grad_clip", "eval_size", "eval_every", "eval_seed",
                                   "tol", "window", "dtype", "engine")),
)


def _choices() -> dict:
    from numerics.engines import ENGINES
    from numerics.models import MODELS
    from numerics.train import DTYPES, SCHEDULES, TASKS

    return {"task": TASKS, "schedule": SCHEDULES, "dtype": DTYPES, "model": tuple(MODELS), "engine": ENGINES}


def _base_type(hint):
    """``float`` for ``float | None`` (an optional field); the hint itself otherwise."""
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


#: TrainConfig fields that are no option: a warm start (``start``) needs weights the command line cannot give
NOT_OPTIONS = ("start",)


def _add_field_option(group, field, hint, choices) -> None:
    from collections.abc import Mapping

    names = ALIASES.get(field.name, ("--" + field.name.replace("_", "-"),))
    text = FIELD_HELP.get(field.name, f"TrainConfig.{field.name}")
    kind = _base_type(hint)
    origin = typing.get_origin(kind)
    if field.name == "init" or origin in (Mapping, dict) or kind in (dict,):
        group.add_argument(*names, dest=field.name, action="append", default=[], metavar="KEY=VALUE", help=text)
    elif origin is tuple or kind is tuple:
        group.add_argument(*names, dest=field.name, action="append", default=[], metavar="NAMES", help=text)
    elif kind is bool:
        group.add_argument(*names, dest=field.name, action=argparse.BooleanOptionalAction,
                           default=field.default, help=text)
    else:
        convert = kind if kind in (int, float, str) else str
        group.add_argument(*names, dest=field.name, type=convert, default=field.default,
                           choices=choices.get(field.name), help=text)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show a default only where there is one to show (not ``None`` or an empty list)."""

    def _get_help_string(self, action):
        if action.default is None or action.default == [] or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def register(subparsers) -> None:
    """Add the ``train`` sub-command to ``subparsers``: one option per :class:`~numerics.train.TrainConfig` field."""
    from numerics.train import TrainConfig

    p = subparsers.add_parser(
        "train",
        help=HELP,
        description=(
            "Train one of the paper's attention models online with Adam on fresh contexts until the "
            "evaluation loss stops improving (or --steps), then evaluate R_L, A_L, C_L (eqs. 61-63), "
            "per-layer and mode-wise errors on a fixed held-out set and write a checkpoint to --out. "
            "Ctrl-C keeps the checkpoint of the last evaluation; the same command with --resume continues it "
            "(same final weights as an uninterrupted run). Every field of numerics.train.TrainConfig is an option."
        ),
        formatter_class=_HelpFormatter,
    )
    hints = typing.get_type_hints(TrainConfig)
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    choices = _choices()
    placed = set()
    for title, names in GROUPS:
        group = p.add_argument_group(title)
        for name in names:
            if name in fields:
                _add_field_option(group, fields[name], hints[name], choices)
                placed.add(name)
    rest = [name for name in fields if name not in placed and name not in NOT_OPTIONS]
    if rest:  # a field added to TrainConfig later: still an option
        group = p.add_argument_group("other TrainConfig fields")
        for name in rest:
            _add_field_option(group, fields[name], hints[name], choices)
    out = p.add_argument_group("output")
    out.add_argument("--out", required=True, metavar="DIR",
                     help="checkpoint directory (created; must be empty unless --force or --resume)")
    out.add_argument("--force", action="store_true", help="write into a non-empty --out directory, replacing a checkpoint there")
    out.add_argument("--resume", action="store_true",
                     help="continue the interrupted run whose checkpoint is in --out (give the same options as that run)")
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


def _parse_names(items: list[str]) -> tuple[str, ...]:
    return tuple(name.strip() for item in items for name in item.split(",") if name.strip())


def config_from_args(args: argparse.Namespace):
    """The :class:`~numerics.train.TrainConfig` the options describe (one value per field)."""
    from numerics.train import TrainConfig

    values = {}
    for field in dataclasses.fields(TrainConfig):
        if field.name in NOT_OPTIONS:
            continue
        value = getattr(args, field.name)
        if field.name == "init":
            value = _parse_init(value)
        elif isinstance(value, list):
            value = _parse_names(value)
        values[field.name] = value
    return TrainConfig(**values)


def _check_out(path: Path, force: bool, resume: bool) -> None:
    from numerics.io import check_output_dir

    if force and resume:
        raise ValueError("--force (start over) and --resume (continue) exclude each other")
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"--out {str(path)!r} is a file, not a directory")
    check_output_dir(path, "--out")
    if path.is_dir() and any(path.iterdir()) and not (force or resume):
        raise FileExistsError(f"--out {str(path)!r} is not empty (use --resume to continue an interrupted run "
                              "there, --force to start over)")


def run(args: argparse.Namespace) -> int:
    """Build the config, train with a progress bar, write the checkpoint, print the metrics."""
    from numerics.checkpoint import checkpoint_status
    from numerics.train import TrainingDiverged, train

    config = config_from_args(args)
    out = Path(args.out)
    _check_out(out, args.force, args.resume)
    if args.resume and checkpoint_status(out) is None and not (out.is_dir() and any(out.iterdir())):
        print(f"idepth train: nothing to resume in {out}; starting at step 0", file=sys.stderr)
    if config.engine == "jax" and not args.quiet:
        from numerics.engines.jax_engine import device_description

        print(f"engine: jax on {device_description()}")
    try:
        result = train(config, progress=not args.quiet, checkpoint_dir=out, resume=args.resume)
    except TrainingDiverged as exc:
        print(f"idepth train: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        status = checkpoint_status(out) or {}
        where = (f"the checkpoint of step {status['step']} in {out} is kept; continue with the same command and --resume"
                 if "step" in status and not status.get("complete") else "no checkpoint was written yet")
        print(f"idepth train: interrupted; {where}", file=sys.stderr)
        return 130
    if not args.quiet:
        m = result.metrics
        status = "converged" if m["converged"] else "stopped at the step cap"
        resumed = f", resumed at step {m['resumed_at']}" if m.get("resumed_at") else ""
        print(f"{config.model}, {config.task} task, L = {config.depth}: {status} after {m['steps']} steps "
              f"({m['wall_time']:.1f} s wall, {m['cpu_time']:.1f} s CPU{resumed})")
        print(f"  R_L = {m['R_L']:.6g} ± {m['R_L_se']:.2g}   A_L = {m['A_L']:.6g}   C_L = {m['C_L']:.6g}")
        print(f"  initial eval loss {m['initial_eval_loss']:.6g}, label variance {m['label_variance']:.6g}")
        print(f"  checkpoint: {out}")
    return 0
