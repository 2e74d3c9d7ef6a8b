"""``idepth diagnose``: diagnostics of a trained checkpoint on fresh contexts.

A thin layer over :func:`numerics.diagnostics.diagnose`: prints R_L, A_L, C_L
(eqs. 61-63), per-layer errors and top-1 attention mass (Fig. 4c), the
selection-error percentiles (eqs. 90-91), ρ (eq. 83, context_updates) and the
normalised mode-wise loss (Figs. 3c, 7); ``--plot`` saves the latter as a PNG.
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

HELP = "diagnose a checkpoint: R, A, C, attention mass, mode-wise loss, selection error"


def register(subparsers) -> None:
    """Add the ``diagnose`` sub-command to ``subparsers``."""
    p = subparsers.add_parser(
        "diagnose",
        help=HELP,
        description=(
            "Load a checkpoint written by 'idepth train' and measure on fresh contexts of its task: "
            "the decomposition R_L = C_L + (A_L - C_L)/L (eqs. 61-63), per-layer errors, top-1 attention "
            "mass (Fig. 4c), selection-error percentiles Q_L(q) (eqs. 90-91), rho (eq. 83) and the "
            "normalised mode-wise loss (Figs. 3c, 7)."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("checkpoint", metavar="DIR", help="checkpoint directory written by 'idepth train'")
    p.add_argument("--contexts", type=int, default=2048, help="number of fresh contexts to average over")
    p.add_argument("--seed", type=int, default=12345, help="seed of the fresh contexts")
    p.add_argument("--plot", metavar="FILE", default=None,
                   help="save the normalised mode-wise loss plot here (.png, .pdf, .svg, ...)")
    p.add_argument("--allow-incomplete", action="store_true",
                   help="diagnose a checkpoint of an unfinished (interrupted) training run; said in the output")
    p.set_defaults(func=run)


def _fmt(value: float) -> str:
    return "nan" if isinstance(value, float) and math.isnan(value) else f"{value:.6g}"


def format_table(diag) -> str:
    """The diagnostics as plain-text tables."""
    lines = [f"{diag.model}, {diag.task} task, L = {diag.depth}, {diag.n_contexts} fresh contexts", ""]
    lines.append(f"{'quantity':<28}{'value':>14}{'std. error':>14}")
    for name, value, se in (
        ("R_L (loss, eq. 61)", diag.R_L, diag.R_L_se),
        ("A_L (mean layer error)", diag.A_L, diag.A_L_se),
        ("C_L (shared error)", diag.C_L, diag.C_L_se),
    ):
        lines.append(f"{name:<28}{_fmt(value):>14}{_fmt(se):>14}")
    lines.append(f"{'sum of mode-wise losses':<28}{_fmt(diag.modewise_total):>14}")
    for q, value in zip(diag.quantile_levels, diag.selection_quantiles):
        lines.append(f"{f'selection error Q({q:g})':<28}{_fmt(float(value)):>14}")
    if not math.isnan(diag.rho):
        lines.append(f"{'rho (eq. 83)':<28}{_fmt(diag.rho):>14}")
        lines.append(f"{'m (context update)':<28}{_fmt(diag.m):>14}")
    lines += ["", f"{'layer':>6}{'E e_l^2':>14}{'top-1 mass':>14}"]
    for layer, (err, mass) in enumerate(zip(diag.layer_errors, diag.top1_attention_mass), start=1):
        lines.append(f"{layer:>6}{_fmt(float(err)):>14}{_fmt(float(mass)):>14}")
    if np.any(np.isfinite(diag.modewise_loss)):
        lines += ["", f"{'mode k':>6}{'w_k E e_k^2':>14}{'normalised':>14}"]
        d = diag.modewise_loss.size
        shown = listed_modes(d)
        for k in shown:
            lines.append(f"{k:>6}{_fmt(float(diag.modewise_loss[k - 1])):>14}"
                         f"{_fmt(float(diag.modewise_loss_normalised[k - 1])):>14}")
        left_out = sorted(set(range(1, d + 1)) - set(shown))
        if left_out:
            lines.append(f"not listed: mode{'s' if len(left_out) > 1 else ''} {_spans(left_out)} of {d}, by the rule "
                         f"'{MODE_SAMPLE_RULE}' (a sample, not outliers: every mode is in the sum of mode-wise losses "
                         "and in --plot)")
    return "\n".join(lines)


#: the name of the rule that picks the modes the table lists (:func:`listed_modes`)
MODE_SAMPLE_RULE = "first three, quarter points, last"


def listed_modes(d: int) -> list[int]:
    """The modes k (1-based) the mode-wise table lists, by :data:`MODE_SAMPLE_RULE`.

    The first three, the modes at a quarter, half and three quarters of the spectrum (``k = ⌊jd/4⌋ + 1``)
    and the last one: the mode-wise loss of Figs. 3c and 7 at a glance; ``--plot`` draws every mode.

    References
    ----------
    Paper Figs. 3c and 7 (the normalised mode-wise loss).

    Examples
    --------
    >>> listed_modes(8), listed_modes(3)
    ([1, 2, 3, 5, 7, 8], [1, 2, 3])
    """
    return sorted(k + 1 for k in {0, 1, 2, d // 4, d // 2, (3 * d) // 4, d - 1} if 0 <= k < d)


def _spans(modes: list[int]) -> str:
    """``[4, 6, 9, 10, 11]`` → ``'4, 6, 9-11'``."""
    spans: list[list[int]] = []
    for k in modes:
        if spans and k == spans[-1][-1] + 1:
            spans[-1].append(k)
        else:
            spans.append([k])
    return ", ".join(str(s[0]) if len(s) == 1 else f"{s[0]}-{s[-1]}" for s in spans)


def run(args: argparse.Namespace) -> int:
    """Load the checkpoint, run the diagnostics, print them, optionally plot."""
    from numerics.checkpoint import checkpoint_status
    from numerics.diagnostics import diagnose, plot_modewise_loss
    from numerics.io import FIGURE_FORMATS, check_output_file
    from numerics.train import TrainResult

    from theory.validation import check_generator, check_positive_int

    if args.plot is not None:  # before any work: nothing is computed for a plot that cannot be written
        check_output_file(args.plot, "--plot", suffixes=FIGURE_FORMATS)
    check_positive_int("--contexts", args.contexts)
    rng = check_generator(args.seed, "--seed", allow_seed=True)  # a negative seed: numpy's message names nothing
    status = checkpoint_status(args.checkpoint)
    incomplete = status is not None and status.get("complete") is False
    if incomplete and not args.allow_incomplete:
        raise ValueError(
            f"checkpoint {args.checkpoint!r} is incomplete: its training stopped at step {status.get('step', '?')} "
            f"of {status.get('max_steps', '?')} (interrupted?); continue it with 'idepth train ... --resume', "
            "or pass --allow-incomplete to diagnose it as it is"
        )
    result = TrainResult.load(args.checkpoint)
    diag = diagnose(result, n_contexts=args.contexts, rng=rng)
    if incomplete:
        print(f"INCOMPLETE CHECKPOINT (--allow-incomplete): training stopped at step {status.get('step', '?')} of "
              f"{status.get('max_steps', '?')}; these are the weights of that step, not of a finished run\n")
    print(format_table(diag))
    if args.plot is not None:
        plot_modewise_loss(diag, args.plot)
        print(f"\nmode-wise loss plot: {args.plot}", file=sys.stderr)
    return 0
