"""``idepth predict``: print (or plot) the predicted loss of a depth-L model.

A thin layer over :func:`theory.predict.predict_loss`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "predicted loss R_L of a depth-L attention model (theory.predict_loss)"


#: most depths one ``--depth`` spec may name (a longer list is a typo, not a request)
MAX_DEPTHS = 1000
#: largest depth a ``--depth`` spec may name, 2^20 (the laws' arrays grow with the depth)
MAX_DEPTH = 2**20


def _power(exponent: int) -> str:
    return f"2^{exponent}"


def depth_limits() -> str:
    """The caps of a ``--depth`` spec, as said in ``idepth predict --help`` and in its errors.

    Examples
    --------
    >>> depth_limits()
    'at most 1000 depths, each at most 2^20 = 1048576'
    """
    exponent = MAX_DEPTH.bit_length() - 1
    largest = f"{_power(exponent)} = {MAX_DEPTH}" if 2**exponent == MAX_DEPTH else str(MAX_DEPTH)
    return f"at most {MAX_DEPTHS} depths, each at most {largest}"


def parse_depths(text: str) -> list[int]:
    """Parse a ``--depth`` spec: ``"1,2,4"``, ranges ``"1-8"``, powers of two ``"2^0-8"`` or ``"2^5"``, or a mix.

    At most :data:`MAX_DEPTHS` depths, each at most :data:`MAX_DEPTH`; both caps are checked before any range
    is expanded, so a spec such as ``2^0-40`` (depths up to 2^40) is refused at once instead of exhausting
    the memory.

    Raises
    ------
    ValueError
        Naming ``--depth``, for a spec not of this form or one that asks for more than the caps allow.

    References
    ----------
    The depth L of the residual update, paper eqs. (9)-(11).

    Examples
    --------
    >>> parse_depths("1,3-5,2^4-6,2^10")
    [1, 3, 4, 5, 16, 32, 64, 1024]
    """
    ranges = []  # (first, last, powers): the depths first..last, or 2^first..2^last when powers
    for item in text.split(","):
        item = item.strip()
        try:
            if item.startswith("2^"):
                lo, _, hi = item[2:].partition("-")
                hi = hi or lo
                if int(lo) < 0 or "-" in hi:
                    raise ValueError
                ranges.append((int(lo), int(hi), True))
            elif "-" in item[1:]:
                lo, hi = item.split("-", 1)
                ranges.append((int(lo), int(hi), False))
            else:
                ranges.append((int(item), int(item), False))
        except ValueError:
            raise ValueError(f"--depth must be integers, ranges A-B or powers 2^A-B (A >= 0) separated by commas; "
                             f"got {text!r}") from None
    count = sum(max(last - first + 1, 0) for first, last, _ in ranges)
    if count == 0:
        raise ValueError(f"--depth names no depth; got {text!r}")
    if count > MAX_DEPTHS:
        raise ValueError(f"--depth names {count} depths; allowed: {depth_limits()}; got {text!r}")
    for first, last, powers in ranges:  # the exponent is compared, never raised: 2^99999999 is not computed
        if last >= first and (last > MAX_DEPTH.bit_length() - 1 if powers else last > MAX_DEPTH):
            largest = _power(last) if powers else str(last)
            raise ValueError(f"--depth asks for depth {largest}; allowed: {depth_limits()}; got {text!r}")
    depths: list[int] = []
    for first, last, powers in ranges:
        depths.extend(2**e if powers else e for e in range(first, last + 1))
    return depths


def _calibration(text: str | None):
    if text is None:
        return None
    if "=" not in text and "," not in text:  # a regime name of the shipped measurements, e.g. 'lazy'
        return text.strip()
    values = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--calibration must look like 'A=...,C=...', 'L0=...,c=...' or a measured regime's name "
                             f"('lazy'); got {text!r}")
        try:
            values[key.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--calibration value for {key.strip()!r} must be a number; got {value!r}") from None
    return values


def _heads(text: str | None):
    """``'4,12:0.5'``: temperatures 4 and 12, random forms of spread 0.5 (``:0`` or no ``:``: cosine heads)."""
    if text is None:
        return None
    from theory.head_families import CosineHeads, RandomFormHeads

    taus, _, sigma = text.partition(":")
    try:
        temperatures = [float(t) for t in taus.split(",") if t.strip()]
        spread = float(sigma) if sigma.strip() else 0.0
    except ValueError:
        raise ValueError(f"--heads must look like 'TAU,TAU,...:SIGMA' (e.g. '4,12:0.5'); got {text!r}") from None
    return CosineHeads(temperatures) if spread == 0 else RandomFormHeads(temperatures, spread)


def register(subparsers) -> None:
    """Add the ``predict`` sub-command."""
    p = subparsers.add_parser(
        "predict",
        help=HELP,
        description=(
            "Predicted loss R_L at the given depths for a power-law spectrum λ_k = c_λ k^-a, ω_k = c_ω k^-b (eq. 2) "
            "or a spectrum read from a file. linear/easy: exact population loss of the constrained residual "
            "(1 - γλ/L)^L (eqs. 29-34) or of the optimal free polynomial (eqs. 35-40); linear/difficult: the "
            "top-k floor of the best degree-L polynomial (eqs. 41-54); softmax/easy: 0; softmax/difficult: "
            "U_L, the best expressible loss found at each depth (the lower envelope of cosine-head, random-form and "
            "combined branches, eq. 60) -- an upper bound on the optimum R*_L (default: --regime expressible); "
            "B_L, the best average of L cosine heads (--regime heads); the exact law R_inf + c/(L + L0) of i.i.d. "
            "heads (--regime exchangeable --heads ...); or plateau + c/L from a calibration (eq. 63, --calibration). "
            "An option that does not apply to the case chosen is refused, naming those that do."
        ),
        epilog="examples:\n  idepth predict --a 2 --b 1 --d 1024 --depth 2^0-8\n"
        "  idepth predict --a 0 --b 0 --d 32 --task difficult --P 128 --depth 1-8 --json\n"
        "  idepth predict --attention softmax --task difficult --a 0 --b 0 --d 16 --P 64 --depth 1,2,4\n"
        "  idepth predict --attention softmax --task difficult --calibration L0=2.0,c=8.0 --depth 1,2,4",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--depth", default="2^0-6",
                   help=f"depths: '1,2,4', ranges '1-16', powers of two '2^0-8' (default 2^0-6); {depth_limits()}")
    spec = p.add_argument_group("spectrum (paper eq. 2)")
    spec.add_argument("--a", type=float, default=2.0, help="input exponent a (default 2)")
    spec.add_argument("--b", type=float, default=1.0, help="teacher exponent b (default 1)")
    spec.add_argument("--d", type=int, default=1024, help="dimension d (default 1024)")
    spec.add_argument("--c-lambda", type=float, default=1.0, help="input prefactor c_λ (default 1)")
    spec.add_argument("--c-omega", type=float, default=1.0, help="teacher prefactor c_ω (default 1)")
    spec.add_argument("--spectrum-file", type=Path, help="a text file with two columns λ_k ω_k (overrides --a/--b/--d)")
    case = p.add_argument_group("case")
    case.add_argument("--attention", default="linear", help="linear or softmax (default linear)")
    case.add_argument("--task", default="easy", help="easy (eq. 5) or difficult (eq. 6) (default easy)")
    case.add_argument("--polynomial", help="linear/easy: constrained (default) or free")
    case.add_argument("--gamma", type=float, help="linear/easy constrained: step γ in (0, 2L/λ_1); default L/λ_1")
    case.add_argument("--P", type=int, help="context length (difficult task)")
    case.add_argument("--k", type=int, help="top-k of the difficult task (default 2)")
    case.add_argument("--floor-method", help="linear/difficult: auto (default: exact cosine route if λ is flat, else "
                                               "Monte Carlo), semi_analytic or monte_carlo")
    case.add_argument("--samples", type=int, help="Monte-Carlo contexts (linear floor by Monte Carlo; softmax: per "
                                                   "set; default 4096, and for --regime expressible the shipped "
                                                   "results when they exist)")
    case.add_argument("--seed", type=int, help="Monte-Carlo seed (default 0)")
    case.add_argument("--calibration", help="softmax/difficult: 'A=..,C=..' (measured at one depth), 'L0=..,c=..', "
                                             "or a regime of the shipped training measurements, e.g. 'lazy' "
                                             "(at other sizes it is refused, naming the sizes they have)")
    case.add_argument("--regime",
                      help="softmax/difficult: expressible (default: U_L, the best expressible loss found, an upper "
                           "bound on the optimum), heads (B_L: cosine heads only), exchangeable (with --heads) or "
                           "calibrated (with --calibration, its default)")
    case.add_argument("--heads", metavar="TAUS:SIGMA", help="softmax/difficult, exchangeable: the head law, e.g. "
                                                           "'4,12:0.5' (random forms τ(I + 0.5 S) at τ = 4, 12) or "
                                                           "'8' (cosine heads)")
    case.add_argument("--norm", help="softmax/difficult, heads, with --width: the pre-norm, layer (default) or rms")
    case.add_argument("--width", type=int, help="softmax/difficult, heads: hidden width N >= d (default: exact cosine)")
    out = p.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the prediction as JSON")
    out.add_argument("--plot", type=Path, metavar="FILE", help="write a log-log plot of R_L against L (PNG/PDF/SVG)")
    p.set_defaults(func=run)


def _spectrum(args):
    from theory import PowerLawSpectrum, Spectrum

    if args.spectrum_file is not None:
        import numpy as np

        if not args.spectrum_file.is_file():
            raise FileNotFoundError(f"--spectrum-file {args.spectrum_file} does not exist")
        try:
            table = np.loadtxt(args.spectrum_file, ndmin=2)
        except ValueError as exc:
            raise ValueError(f"--spectrum-file {args.spectrum_file}: not a two-column numeric table ({exc})") from None
        if table.shape[1] != 2:
            raise ValueError(f"--spectrum-file must have two columns (λ_k ω_k); got {table.shape[1]}")
        return Spectrum(table[:, 0], table[:, 1])
    return PowerLawSpectrum(args.a, args.b, args.d, args.c_lambda, args.c_omega)


def run(args) -> int:
    import numpy as np

    from numerics.io import FIGURE_FORMATS, check_output_file
    from numerics.plotting import plot_prediction
    from theory.predict import predict_loss

    if args.plot is not None:  # before any work
        check_output_file(args.plot, "--plot", suffixes=FIGURE_FORMATS)
    spectrum = _spectrum(args)
    # only the options given: predict_loss refuses one that does not apply to the case, naming it
    options = dict(polynomial=args.polynomial, gamma=args.gamma, P=args.P, k=args.k, floor_method=args.floor_method,
                   n_samples=args.samples, rng=args.seed, calibration=_calibration(args.calibration),
                   regime=args.regime, norm=args.norm, width=args.width, heads=_heads(args.heads))
    from ._working import working

    with working("idepth predict", "computing"):  # Monte Carlo (B_L, floors, U_L afresh) takes tens of seconds
        prediction = predict_loss(parse_depths(args.depth), spectrum, attention=args.attention, task=args.task,
                                  **{name: value for name, value in options.items() if value is not None})
    if args.plot is not None:
        plot_prediction(prediction, args.plot, title=repr(spectrum))
    if args.json:
        print(json.dumps(prediction.to_dict(), indent=1, ensure_ascii=False))
        return 0
    print(f"# {prediction.attention} attention, {prediction.task} task, {spectrum!r}")
    print(f"# kind: {prediction.kind}")
    print(f"# law: {prediction.law}")
    if prediction.exponent is not None and prediction.coefficient is not None:
        print(f"# asymptote: {prediction.plateau:.6g} + {prediction.coefficient:.6g} · L^(-{prediction.exponent:.6g})")
    if prediction.validity_window is not None:
        print(f"# validity window: {prediction.validity_window.statement}")
    if prediction.branch is not None:  # the bracket: U_L above, the infinite-mixture limit below
        if prediction.plateau_gap is not None:
            print(f"# R*_inf (infinite-mixture limit): upper estimate {prediction.plateau:.6g}, lower estimate "
                  f"{prediction.plateau - prediction.plateau_gap:.6g} (gap {prediction.plateau_gap:.2g})")
        else:
            print(f"# R*_inf: no limit shipped here; plateau {prediction.plateau:.6g} is an upper estimate only")
        if prediction.alpha_predicted is not None:
            low, high = prediction.alpha_interval
            print(f"# alpha predicted by the head kernel's spectrum: {prediction.alpha_predicted:.3g} "
                  f"[{low:.3g}, {high:.3g}]")
    has_interval = prediction.lower is not None
    depths = np.atleast_1d(prediction.depth)
    columns = {"R_L": np.atleast_1d(prediction.loss)}
    if has_interval:
        columns.update(lower=np.atleast_1d(prediction.lower), upper=np.atleast_1d(prediction.upper))
    header = f"{'L':>6}" + "".join(f"  {name:>14}" for name in columns)
    header += "  in window" if prediction.in_window is not None else ""
    header += "  branch" if prediction.branch is not None else ""
    print(header)
    for i, L in enumerate(depths):
        line = f"{L:>6d}" + "".join(f"  {values[i]:>14.8g}" for values in columns.values())
        if prediction.in_window is not None:
            line += f"  {'yes' if np.atleast_1d(prediction.in_window)[i] else 'no'}"
        if prediction.branch is not None:
            line += f"  {np.atleast_1d(prediction.branch)[i]}"
        print(line)
    for assumption in prediction.assumptions:
        print(f"# assumes: {assumption}")
    if args.plot is not None:
        print(f"# plot written to {args.plot}")
    return 0
