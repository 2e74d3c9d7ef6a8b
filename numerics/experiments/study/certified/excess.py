"""The study against the bracket: the excess of the trained envelope and of ``U_L`` over ``R*_∞``.

The controlled model of depth L is an equal-weight average of L heads (paper eq. 60), so the infinite-mixture
limit ``R*_∞`` (:mod:`theory.mixture_limit`) lies below every depth's optimum and ``U_L``
(:mod:`theory.expressible`, models built by hand) above it. A power law ``R_L = L0 + c L^-α`` (eq. 16) with
``L0 = R*_∞`` is a straight line of slope ``−α`` in ``log(R_L − R*_∞)`` against ``log L``: :func:`excess_rows`
collects what the page's figure and table show (reading the shipped theory results, the computing pass), and
:func:`excess_section` writes the page's section from them (rendering only).
"""

from __future__ import annotations

import math

import numpy as np

from ..._markdown import markdown_table

__all__ = ["EXCESS_FIGURE", "excess_rows", "excess_section", "local_slope", "plateau_bracket"]

#: the figure of the section, relative to the page
EXCESS_FIGURE = "figures/certified-excess.png"


def local_slope(depths, excess, start: int, stop: int) -> float:
    """The least-squares slope of ``log excess`` against ``log L`` over ``start <= L <= stop`` (NaN where an
    excess is not positive or fewer than two depths are in range): ``−α`` of a power law.

    Examples
    --------
    >>> round(local_slope([1, 2, 4, 8], [1.0, 0.5, 0.25, 0.125], 1, 8), 6)
    -1.0
    """
    L = np.asarray(depths, dtype=float)
    e = np.asarray(excess, dtype=float)
    keep = (L >= start) & (L <= stop)
    if keep.sum() < 2 or not np.all(e[keep] > 0):
        return math.nan
    return float(np.polyfit(np.log(L[keep]), np.log(e[keep]), 1)[0])


def plateau_bracket(row: dict) -> tuple[float, float]:
    """``(low, high)``: where ``R*_∞`` lies. ``low``: its lower estimate; ``high``: the least of its upper estimate
    and the shipped ``U_L`` at every depth (a depth-L model is a mixture of heads, so ``R*_∞ ≤ R*_L ≤ U_L``).

    Examples
    --------
    >>> plateau_bracket({"plateau": 2.06, "plateau_lower": 1.97, "U": [2.1, 2.04]})
    (1.97, 2.04)
    """
    high = row["plateau"] if row.get("U") is None else min(row["plateau"], min(row["U"]))
    return row["plateau_lower"], high


def excess_rows(summaries, plan) -> list[dict]:
    """Per main spectrum of ``plan``: the envelope with its SE, the shipped ``U_L`` at the same depths, and the
    shipped ``R*_∞`` (upper estimate, its SE, lower estimate, the α its head kernel predicts with its interval);
    ``plateau`` is None where no final ``R*_∞`` is shipped for the spectrum.

    Examples
    --------
    >>> excess_rows([], None)
    []
    """
    from theory import PowerLawSpectrum
    from theory.expressible import shipped_expressible
    from theory.mixture_limit import shipped_infinite_mixture

    rows = []
    for s in summaries:
        a, b, k, d, N, P = s.setting
        if not plan.is_main(a, b, P, k):
            continue
        spectrum = PowerLawSpectrum(a, b, d)
        U, limit = shipped_expressible(spectrum, P, k), shipped_infinite_mixture(spectrum, P, k)
        at = {} if U is None else {L: (v, e) for L, v, e in zip(U.depths, U.loss, U.loss_se)}
        whole = all(L in at for L in s.depths)
        rows.append({
            "a": a, "b": b, "label": f"(a, b) = ({a:g}, {b:g})", "depths": list(s.depths),
            "envelope": [float(v) for v in s.R.mean], "envelope_se": [float(v) for v in s.R.se],
            "U": [at[L][0] for L in s.depths] if whole else None,
            "U_se": [at[L][1] for L in s.depths] if whole else None,
            "plateau": None if limit is None else float(limit.upper),
            "plateau_se": None if limit is None else float(limit.upper_se),
            "plateau_lower": None if limit is None else float(limit.lower),
            "alpha_predicted": None if limit is None else float(limit.alpha_predicted),
            "alpha_interval": None if limit is None else [float(x) for x in limit.alpha_interval]})
    return rows


def _fmt(value, digits: int = 4) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def excess_section(rows, *, start: int = 16, stop: int = 128) -> list[str]:
    """The page's section on the bracket (Markdown lines) from :func:`excess_rows`; none without rows.

    Examples
    --------
    >>> excess_section([])
    []
    """
    if not rows:
        return []
    table = []
    for r in rows:
        if r["plateau"] is None:
            table.append([r["label"], "not shipped", "–", "–", "–", "–", "–"])
            continue
        low, high = plateau_bracket(r)
        slopes = [local_slope(r["depths"], np.asarray(r["envelope"]) - plateau, start, stop) for plateau in (low, high)]
        lo, hi = r["alpha_interval"]
        table.append([r["label"], f"{_fmt(r['plateau'])} ± {_fmt(r['plateau_se'])}", _fmt(r["plateau_lower"]),
                      f"[{_fmt(low)}, {_fmt(high)}]", _fmt(high - low),
                      f"{_fmt(r['alpha_predicted'], 2)} [{_fmt(lo, 2)}, {_fmt(hi, 2)}]",
                      f"{_fmt(-slopes[0], 2)} / {_fmt(-slopes[1], 2)}"])
    return [
        "## The bracket: the excess over the infinite-mixture limit", "",
        f"![R_L − R*_∞ against L, log–log, per spectrum]({EXCESS_FIGURE})", "",
        "Each panel: the trained envelope `R*_L` and `U_L` (models built by hand, an upper bound on the optimum) "
        "minus `R*_∞`, the infinite-mixture limit (a lower bound on every depth's optimum: the depth-L model is an "
        "equal-weight mixture of L heads), on log–log axes, where `R_L = R*_∞ + c L^-α` is a straight line. "
        "The excess is taken over `R*_∞`'s upper estimate (its fitted mixture's loss on an independent report set); "
        "the shaded band reaches the excess over its lower estimate (fit-set optimum minus the Frank–Wolfe gap). "
        "Dashed: α = 1 through the envelope at L = 1; dotted: the α the head kernel's eigen-decay predicts for "
        "balanced heads (`theory.mixture_limit`). Triangles: within 2 SE of `R*_∞` or below it.", "",
        *markdown_table(["spectrum", "R*_∞ upper estimate ± SE", "R*_∞ lower estimate",
                         "R*_∞ lies in (with U_L)", "width", "α predicted [interval]",
                         f"envelope's α, L = {start}–{stop}, over the low / high end"], table),
        "",
        "`R*_∞` lies between its lower estimate and the least of its upper estimate and every `U_L` (each depth's "
        "model is a mixture of heads). The last column is the least-squares log–log slope of the envelope's excess "
        f"over L = {start}–{stop} with the plateau at either end of that interval, without an interval of its own: "
        "where the two differ, the plateau's uncertainty, not the envelope, decides the exponent. "
        "`idepth bracket compute` regenerates `R*_∞` (`theory/data/mixture_limit/`).", ""]
