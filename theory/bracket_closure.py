"""What would close the ``R*_∞`` bracket: its width split into its two parts, their measured rates and the cost.

A shipped :class:`theory.mixture_limit.InfiniteMixture` brackets ``R*_∞`` between its *upper* estimate
(the fitted mixture's loss on an independent report set) and its *lower* estimate (the fit-set loss minus
the Frank–Wolfe gap). Its width splits exactly into two parts that fall with different budgets:

* **overfit** ``upper − fit_loss``: the mixture's weights were fitted on the fit set, so the in-sample loss
  is biased low; it falls with the fit-set size ``n``. Measured on the shipped ``fit_size`` curve (the
  final atoms' weights re-fitted on the first ``n`` fit contexts) by a log-log fit ``c n^{-q}`` over the
  sizes with at least :data:`CONTEXTS_PER_ATOM` contexts per atom (below that the fit interpolates). The
  least-squares model ``overfit ≈ κ atoms / n`` (``q = 1``) is stated beside it with ``κ`` read at the
  largest size.
* **gap** ``2 g δ``: Frank–Wolfe has not converged, the oracle's best response still improves on the
  residual; it falls with the iterations ``t`` (``C/t`` for Frank–Wolfe with an exact oracle). Measured on
  the shipped per-iteration ``history`` by a log-log fit ``C t^{-p}`` over the iterations with a non-zero
  gap. The oracle is a stochastic search, so a single call's gap is noisy.

A rate counts as measured only when its exponent is positive (above :data:`FLAT`) by more than
:data:`MEASURED_SES` standard errors of the regression; otherwise no extrapolation is made (the field is ``None`` with the reason).

**The target.** The bracket should be no wider than ``U_128 − R*_∞``. With ``R*_∞`` read at the
*lower* estimate that condition is ``upper − lower ≤ U_128 − lower``, i.e. ``upper ≤ U_128``: it does not
involve the gap at all, and it is the sign of the paired difference ``upper − U_128`` the shipped file
holds (``met_at_lower``). A width that *resolves* ``U_128``'s distance to the limit must be at most
``U_128 − upper`` (``R*_∞`` read at its upper estimate, the largest it can be up to its SE): that is the
``target`` every extrapolation aims at. Each part must fall below it on its own; the extrapolations give
each part half of it (``split``).

**Cost.** The CPU time per iteration is read from the shipped ``history`` (process seconds between the
first and last iteration), per fit context by dividing by the fit-set size: the fit-set reads, the
non-negative least squares and the comparison of the oracle's candidates scale with ``n`` (the oracle's
search pool does not, so scaling the whole iteration by ``n`` overstates the cost at small ``n``).
"""

from __future__ import annotations

import math

import numpy as np

from theory.validation import check_positive_int

__all__ = ["bracket_closure", "continued_gap", "CONTEXTS_PER_ATOM", "FLAT", "MEASURED_SES", "SPLIT"]

#: the overfit's rate is fitted on the fit-set sizes with at least this many contexts per atom
CONTEXTS_PER_ATOM = 16
#: a rate counts as measured when its exponent exceeds this many standard errors
MEASURED_SES = 2.0
#: an exponent at or below this is a flat series (a constant has exponent 0 ± 0 up to round-off)
FLAT = 1e-6
#: the share of the target each part of the width must fall to
SPLIT = 0.5


def _power_fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """``y ≈ c x^{-e}`` by least squares in logs: ``(e, se(e), c)``; the SE from the residuals."""
    design = np.column_stack([np.ones(x.size), -np.log(x)])
    coef, *_ = np.linalg.lstsq(design, np.log(y), rcond=None)
    resid = np.log(y) - design @ coef
    dof = x.size - 2
    se = math.sqrt(float(resid @ resid) / dof * np.linalg.inv(design.T @ design)[1, 1]) if dof > 0 else math.inf
    return float(coef[1]), se, float(math.exp(coef[0]))


def _rate(x, y, what: str) -> dict:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = np.isfinite(y) & (y > 0)
    out = {"points": int(keep.sum()), "dropped": int(x.size - keep.sum()), "exponent": math.nan,
           "exponent_se": math.nan, "constant": math.nan, "measured": False}
    if keep.sum() < 3:
        out["reason"] = f"{int(keep.sum())} usable {what}: too few points for a rate"
        return out
    e, se, c = _power_fit(x[keep], y[keep])
    out.update(exponent=e, exponent_se=se, constant=c)
    if e > max(MEASURED_SES * se, FLAT):
        out["measured"] = True
        out["reason"] = ""
    else:
        out["reason"] = (f"exponent {e:.2f} ± {se:.2f} is not above {MEASURED_SES:g} SE: the {what} do not "
                         "show a falling rate")
    return out


def _reach(now: float, ratio: float, exponent: float) -> float:
    """``now · ratio^{1/exponent}``: where ``c x^{-e}`` falls by ``ratio`` (inf past the float range)."""
    try:
        return float(now * ratio ** (1.0 / exponent))
    except OverflowError:
        return math.inf


def bracket_closure(mix, *, split: float = SPLIT) -> dict:
    """The width of a shipped ``R*_∞`` bracket, its two parts, their measured rates and what would close it.

    Parameters
    ----------
    mix : theory.mixture_limit.InfiniteMixture
        A final result with ``history``, ``fit_size`` and ``versus_expressible``.
    split : float
        The share of the target each part must fall to (``0 < split < 1``; default :data:`SPLIT`).

    Returns
    -------
    dict
        ``width = overfit + gap``; ``expressible`` (``depth``, ``upper_minus`` = upper − U_L and its
        ``se``, paired on the report set); ``target`` (``U_L − upper``) and ``met``; ``met_at_lower``
        (the target with ``R*_∞`` at the lower estimate, i.e. ``upper ≤ U_L``); ``gap_rate`` and
        ``overfit_rate`` (``exponent``, ``exponent_se``, ``constant``, ``points``, ``measured``,
        ``reason``); ``fit_loss_drop`` (the fit loss's fall from the first to the last iteration);
        ``overfit_per_atom`` (``κ`` of ``κ atoms/n``); ``iterations_needed`` and
        ``fit_size_needed`` (``None`` where the rate is not measured or the target is not positive) and
        ``fit_size_needed_atoms`` (from ``κ atoms/n``); ``cpu_per_iteration`` (s, at the shipped fit
        size), ``cpu_hours`` (``None`` when no set size is supported) and ``cpu_basis`` (what it
        assumes); ``note`` (why a number is missing).

    Raises
    ------
    ValueError
        If ``split`` is not in (0, 1) or ``mix`` has no history or fit-size curve.

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket`` (section "What would close the bracket").

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> from theory.mixture_limit import shipped_infinite_mixture
    >>> out = bracket_closure(shipped_infinite_mixture(PowerLawSpectrum(0, 0, 16), 64))
    >>> round(out["width"], 4), round(out["overfit"] + out["gap"], 4), round(out["target"], 4)
    (0.1412, 0.1412, 0.0089)
    >>> out["met"], out["met_at_lower"], out["gap_rate"]["measured"], out["overfit_rate"]["measured"]
    (False, True, False, True)
    """
    if not (isinstance(split, (int, float)) and 0 < split < 1):
        raise ValueError(f"split must be a number in (0, 1); got {split!r}")
    history = [h for h in getattr(mix, "history", ()) if h.get("gap") is not None]
    fit_size = getattr(mix, "fit_size", {}) or {}
    if len(history) < 2 or not fit_size.get("sizes"):
        raise ValueError("mix must be a final InfiniteMixture with a history of >= 2 iterations and a fit_size curve")
    n_fit = check_positive_int("n_fit", int(mix.setting["n_fit"]))
    atoms = int(np.asarray(mix.weights).size)
    overfit = float(mix.upper - mix.fit_loss)
    width = float(mix.upper - mix.lower)
    versus = mix.versus_expressible or {}
    out: dict = {"upper": float(mix.upper), "upper_se": float(mix.upper_se), "lower": float(mix.lower),
                 "fit_loss": float(mix.fit_loss), "width": width, "overfit": overfit, "gap": float(mix.gap),
                 "atoms": atoms, "n_fit": n_fit, "iterations": len(history), "split": float(split)}
    notes = []
    if versus:
        excess = -float(versus["upper_minus_expressible"])
        out["expressible"] = {"depth": int(versus["depth"]), "loss": float(versus["loss"]),
                              "upper_minus": -excess, "se": float(versus["upper_minus_expressible_se"])}
        out["target"] = excess
        out["met"] = bool(width <= excess)
        out["met_at_lower"] = bool(mix.upper <= versus["loss"])
    else:
        out.update(expressible=None, target=math.nan, met=False, met_at_lower=False)
        notes.append("no shipped U_L to compare")

    iters = np.array([h["iteration"] for h in history], dtype=np.float64)
    gaps = np.array([h["gap"] for h in history], dtype=np.float64)
    out["gap_rate"] = _rate(iters, gaps, "per-iteration gaps")
    # what the iterations bought: the fit loss's fall over the run, to set beside the gap it leaves open
    out["fit_loss_drop"] = float(history[0]["fit_loss"] - mix.fit_loss)
    sizes = np.asarray(fit_size["sizes"], dtype=np.float64)
    curve = np.asarray(fit_size["report_loss"]) - np.asarray(fit_size["fit_loss"])
    enough = sizes >= CONTEXTS_PER_ATOM * atoms
    out["overfit_rate"] = {**_rate(sizes[enough], curve[enough], "overfits over the fit-set sizes"),
                           "sizes": sizes[enough].astype(int).tolist()}
    out["overfit_per_atom"] = float(curve[-1] * sizes[-1] / atoms)

    target = out["target"]
    share = split * target if target > 0 else math.nan
    out["iterations_needed"] = out["fit_size_needed"] = out["fit_size_needed_atoms"] = None
    if not target > 0:
        notes.append(f"U_{versus.get('depth', 'L')} is not above the upper estimate: no width resolves it")
    else:
        gr, orate = out["gap_rate"], out["overfit_rate"]
        if gr["measured"]:
            out["iterations_needed"] = _reach(len(history), out["gap"] / share, gr["exponent"])
        else:
            notes.append("gap: " + gr["reason"])
        if orate["measured"]:
            out["fit_size_needed"] = _reach(sizes[-1], curve[-1] / share, orate["exponent"])
        else:
            notes.append("overfit: " + orate["reason"])
        out["fit_size_needed_atoms"] = float(out["overfit_per_atom"] * atoms / share)

    seconds = np.array([h["seconds"] for h in mix.history], dtype=np.float64)
    per_iteration = float((seconds[-1] - seconds[0]) / (seconds.size - 1))
    out["cpu_per_iteration"] = per_iteration
    out["cpu_seconds"] = float(mix.cpu_seconds)
    out["cpu_hours"] = None
    out["cpu_basis"] = ""
    if out["fit_size_needed"] is not None:
        steps = out["iterations_needed"]
        basis = "the iterations needed"
        if steps is None:
            steps, basis = float(len(history)), f"the shipped {len(history)} iterations (gap rate not measured)"
        out["cpu_hours"] = float(steps * per_iteration * out["fit_size_needed"] / n_fit / 3600.0)
        out["cpu_basis"] = f"{basis} at the fitted set size, cost per iteration linear in n"
    elif out["iterations_needed"] is not None:
        out["cpu_hours"] = float(out["iterations_needed"] * per_iteration / 3600.0)
        out["cpu_basis"] = "the iterations needed at the shipped set size (overfit rate not measured)"
    out["note"] = "; ".join(notes)
    return out


def continued_gap(mix, continuation: dict, *, last: int = 10) -> dict:
    """Frank–Wolfe continued from a shipped measure: does its gap fall at the rate the shipped history gave?

    Parameters
    ----------
    mix : theory.mixture_limit.InfiniteMixture
        The shipped result the continuation started from.
    continuation : dict
        A check file (``theory/data/mixture_limit/checks/*_continued.json``): its ``history`` holds the
        continuation's iterations, numbered from 1.
    last : int
        The number of final gaps averaged for the comparison with the shipped rate's prediction.

    Returns
    -------
    dict
        ``iterations`` (continued, with a measured gap); ``rate`` (over the continuation alone, iterations
        counted on from the shipped run's) and ``joint_rate`` (shipped and continued together), each as in
        :func:`bracket_closure`; ``predicted`` (``C t^{-p}`` of the shipped fit at the last iteration) and
        ``measured`` (the mean of the ``last`` gaps); ``fit_loss_drop`` and ``report_loss_drop`` over the
        continuation; ``cpu_seconds`` and ``cpu_per_iteration``.

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> import json
    >>> from theory import PowerLawSpectrum
    >>> from theory.mixture_limit import default_out_dir, shipped_infinite_mixture
    >>> check = json.loads((default_out_dir() / "checks" / "a0_b0_d16_P64_k2_continued.json").read_text())
    >>> out = continued_gap(shipped_infinite_mixture(PowerLawSpectrum(0, 0, 16), 64), check)
    >>> out["iterations"], out["rate"]["measured"], round(out["predicted"], 3), round(out["measured"], 3)
    (35, False, 0.04, 0.057)
    """
    last = check_positive_int("last", last)
    shipped = [h for h in mix.history if h.get("gap") is not None]
    more = [h for h in continuation.get("history", ()) if h.get("gap") is not None]
    if len(shipped) < 2 or len(more) < 2:
        raise ValueError("continuation must hold a history of >= 2 iterations with a measured gap, after a shipped "
                         "mix with >= 2")
    offset = len(mix.history)
    t_more = np.array([h["iteration"] + offset for h in more], dtype=np.float64)
    g_more = np.array([h["gap"] for h in more], dtype=np.float64)
    t_ship = np.array([h["iteration"] for h in shipped], dtype=np.float64)
    g_ship = np.array([h["gap"] for h in shipped], dtype=np.float64)
    rate = _rate(t_more, g_more, "continued gaps")
    joint = _rate(np.r_[t_ship, t_more], np.r_[g_ship, g_more], "shipped and continued gaps")
    fitted = _rate(t_ship, g_ship, "per-iteration gaps")
    seconds = [h["seconds"] for h in continuation["history"]]
    history = continuation["history"]
    return {"iterations": len(more), "rate": rate, "joint_rate": joint,
            "predicted": float(fitted["constant"] * t_more[-1] ** (-fitted["exponent"])),
            "measured": float(g_more[-last:].mean()), "last": min(last, len(more)),
            "fit_loss_drop": float(mix.fit_loss - history[-1]["fit_loss"]),
            "report_loss_drop": float(mix.upper - history[-1]["report_loss"]),
            "cpu_seconds": float(continuation["cpu_seconds"]),
            "cpu_per_iteration": float((seconds[-1] - seconds[0]) / (len(seconds) - 1))}
