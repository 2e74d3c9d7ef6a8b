"""How the certified study's page and figures write numbers, settings, contrasts and α (shared by both).

Examples use ``types.SimpleNamespace`` for a summary: each function reads only the fields it names.
"""

from __future__ import annotations

import numpy as np

from ...criteria import GAIN_LAW_MAX_CHI2_DOF, alpha_ends_bounded

__all__ = ["RECIPE_LABELS", "alpha_text", "bounded", "bounded_text", "checks_text", "contrast_text", "find_contrast",
           "fit_text", "recipe_order", "setting_label"]

#: the ways of getting a depth-L model, from the laziest to the best loss found, as the page names them
RECIPE_LABELS = {"lazy": "lazy (gain frozen)", "equal_budget": "equal budget", "cold lr=0.001": "cold, lr 1e-3",
                 "cold lr=0.0003": "cold, lr 3e-4", "heads": "B_L heads", "envelope": "envelope R*_L"}


def depth_list(depths) -> str:
    """Depths as the page and the verdicts' reasons list them (``none`` for no depth).

    Examples
    --------
    >>> depth_list((1, 2, 4)), depth_list(())
    ('1, 2, 4', 'none')
    """
    return ", ".join(map(str, depths)) if depths else "none"


def setting_label(setting: tuple) -> str:
    """A setting ``(a, b, k, d, N, P)`` as the page names it.

    Examples
    --------
    >>> setting_label((0.0, 0.5, 2, 16, 32, 64))
    '(a, b) = (0, 0.5), P = 64, top-2'
    """
    a, b, k, d, N, P = setting
    return f"(a, b) = ({a:g}, {b:g}), P = {P}, top-{k}"


def bounded_text(value: float, lo: float, hi: float) -> str:
    """``value [lo, hi]`` with an end at the grid's edge written "unbounded".

    Examples
    --------
    >>> bounded_text(1.2, 0.8, 10.0)
    '1.20 [0.80, unbounded]'
    """
    if not np.isfinite(value):
        return "–"
    below, above = alpha_ends_bounded(lo, hi)
    low = f"{lo:.2f}" if below else "unbounded"
    high = f"{hi:.2f}" if above else "unbounded"
    return f"{value:.2f} [{low}, {high}]"


def contrast_text(c) -> str:
    """A contrast with its interval and its α = 1 value (``–`` without one).

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> contrast_text(C(value=0.6, lo=0.5, hi=0.7, reference=0.533, resolved=True)), contrast_text(None)
    ('0.600 [0.500, 0.700] (α = 1: 0.533)', '–')
    """
    if c is None:
        return "–"
    if not c.resolved:
        return f"{c.value:.3f}, unbounded: its denominator gain is not resolved (α = 1: {c.reference:.3f})"
    return f"{c.value:.3f} [{c.lo:.3f}, {c.hi:.3f}] (α = 1: {c.reference:.3f})"


def find_contrast(s, name: str, estimate: str = "mean over seeds", checked: bool | None = None):
    """The contrast ``name`` of summary ``s`` (the descriptive one, on every depth done, unless ``checked``).

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> c = C(name="g2/gLmax", estimate="mean over seeds", checked=False, L_max=4, depths=(1, 2, 4))
    >>> find_contrast(C(contrasts=[c]), "g2/gLmax") is c, find_contrast(C(contrasts=[c]), "other")
    (True, None)
    """
    for c in s.contrasts:
        if c.name == name and c.estimate == estimate and (checked is None or c.checked == checked):
            if checked or c.L_max == max(c.depths):
                return c
    return None


def fit_text(s) -> str:
    """The envelope's gain-law α where the law fits (χ²/dof ≤ the rule's), else why it is not reported.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> fit_text(S(dof=5, alpha=3.8, alpha_lo=1.58, alpha_hi=10.0, chi2=33.48, fit_reported=False))
    'not reported: χ²/dof = 33.5/5 > 2'
    """
    if s.dof <= 0 or not np.isfinite(s.alpha):
        return "–"
    if not s.fit_reported:
        return f"not reported: χ²/dof = {s.chi2:.1f}/{s.dof} > {GAIN_LAW_MAX_CHI2_DOF:g}"
    return f"{bounded_text(s.alpha, s.alpha_lo, s.alpha_hi)} (χ²/dof = {s.chi2:.1f}/{s.dof})"


def checks_text(s) -> str:
    """Where the step-doubling check ran and where it failed.

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> checks_text(S(doubling_run=(1, 2, 4), checked=(1, 2))), checks_text(S(doubling_run=(), checked=()))
    ('ran at 1, 2, 4; failed at 4', 'never ran')
    """
    if not s.doubling_run:
        return "never ran"
    failed = [L for L in s.doubling_run if L not in s.checked]
    return f"ran at {depth_list(s.doubling_run)}" + (f"; failed at {depth_list(failed)}" if failed else "")


def recipe_order(summaries) -> list:
    """The recipes in ``summaries``, in the order of :data:`RECIPE_LABELS` (unknown ones last).

    Examples
    --------
    >>> from types import SimpleNamespace as S
    >>> recipe_order([S(recipes=[S(name="x"), S(name="envelope"), S(name="lazy")])])
    ['lazy', 'envelope', 'x']
    """
    present = {r.name for s in summaries for r in s.recipes}
    return [n for n in RECIPE_LABELS if n in present] + sorted(present - set(RECIPE_LABELS))


def bounded(r) -> bool:
    """Whether ``r``'s α interval is narrower than the whole grid (else the gains do not bound α).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> bounded(R(alpha=1.0, alpha_lo=0.5, alpha_hi=2.0)), bounded(R(alpha=1.0, alpha_lo=0.01, alpha_hi=10.0))
    (True, False)
    """
    return bool(np.isfinite(r.alpha) and any(alpha_ends_bounded(r.alpha_lo, r.alpha_hi)))


def alpha_text(r) -> str:
    """A recipe's α where its gain-law fit is reported (χ²/dof ≤ the rule's), ``unbounded`` at the grid's edge.

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> alpha_text(R(alpha=1.0, alpha_lo=0.5, alpha_hi=2.0, dof=3, chi2=2.0, fit_reported=True))
    '1.00 [0.50, 2.00]'
    """
    if not np.isfinite(r.alpha):
        return "–"
    if r.dof > 0 and not r.fit_reported:
        return f"no single α (χ²/dof = {r.chi2:.1f}/{r.dof})"
    if not bounded(r):
        return f"unbounded (gain {r.gain:+.4f} ± {r.gain_se:.4f})"
    return bounded_text(r.alpha, r.alpha_lo, r.alpha_hi)
