"""How the certified study's page and figures write numbers, settings, contrasts and α (shared by both)."""

from __future__ import annotations

import numpy as np

from ...criteria import GAIN_LAW_MAX_CHI2_DOF, alpha_ends_bounded
from .verdict import _depth_list

#: the ways of getting a depth-L model, from the laziest to the best loss found, as the page names them
RECIPE_LABELS = {"lazy": "lazy (gain frozen)", "equal_budget": "equal budget", "cold lr=0.001": "cold, lr 1e-3",
                 "cold lr=0.0003": "cold, lr 3e-4", "heads": "B_L heads", "envelope": "envelope R*_L"}


def _label(setting: tuple) -> str:
    a, b, k, d, N, P = setting
    return f"(a, b) = ({a:g}, {b:g}), P = {P}, top-{k}"


def _bounded_text(value: float, lo: float, hi: float) -> str:
    """``value [lo, hi]`` with an end at the grid's edge written "unbounded"."""
    if not np.isfinite(value):
        return "–"
    below, above = alpha_ends_bounded(lo, hi)
    low = f"{lo:.2f}" if below else "unbounded"
    high = f"{hi:.2f}" if above else "unbounded"
    return f"{value:.2f} [{low}, {high}]"


def _contrast_text(c) -> str:
    """A contrast with its interval and its α = 1 value (``–`` without one)."""
    if c is None:
        return "–"
    if not c.resolved:
        return f"{c.value:.3f}, unbounded: its denominator gain is not resolved (α = 1: {c.reference:.3f})"
    return f"{c.value:.3f} [{c.lo:.3f}, {c.hi:.3f}] (α = 1: {c.reference:.3f})"


def _contrast(s, name: str, estimate: str = "mean over seeds", checked: bool | None = None):
    """The contrast ``name`` of summary ``s`` (the descriptive one, on every depth done, unless ``checked``)."""
    for c in s.contrasts:
        if c.name == name and c.estimate == estimate and (checked is None or c.checked == checked):
            if checked or c.L_max == max(c.depths):
                return c
    return None


def _fit_text(s) -> str:
    """The envelope's gain-law α where the law fits (χ²/dof ≤ the rule's), else why it is not reported."""
    if s.dof <= 0 or not np.isfinite(s.alpha):
        return "–"
    if not s.fit_reported:
        return f"not reported: χ²/dof = {s.chi2:.1f}/{s.dof} > {GAIN_LAW_MAX_CHI2_DOF:g}"
    return f"{_bounded_text(s.alpha, s.alpha_lo, s.alpha_hi)} (χ²/dof = {s.chi2:.1f}/{s.dof})"


def _checks_text(s) -> str:
    """Where the step-doubling check ran and where it failed."""
    if not s.doubling_run:
        return "never ran"
    failed = [L for L in s.doubling_run if L not in s.checked]
    return f"ran at {_depth_list(s.doubling_run)}" + (f"; failed at {_depth_list(failed)}" if failed else "")


def _recipe_order(summaries) -> list:
    """The recipes in ``summaries``, in the order of :data:`RECIPE_LABELS` (unknown ones last)."""
    present = {r.name for s in summaries for r in s.recipes}
    return [n for n in RECIPE_LABELS if n in present] + sorted(present - set(RECIPE_LABELS))


def _bounded(r) -> bool:
    """Whether ``r``'s α interval is narrower than the whole grid (else the gains do not bound α)."""
    return bool(np.isfinite(r.alpha) and any(alpha_ends_bounded(r.alpha_lo, r.alpha_hi)))


def _alpha_text(r) -> str:
    """A recipe's α where its gain-law fit is reported (χ²/dof ≤ the rule's), ``unbounded`` at the grid's edge."""
    if not np.isfinite(r.alpha):
        return "–"
    if r.dof > 0 and not r.fit_reported:
        return f"no single α (χ²/dof = {r.chi2:.1f}/{r.dof})"
    if not _bounded(r):
        return f"unbounded (gain {r.gain:+.4f} ± {r.gain_se:.4f})"
    return _bounded_text(r.alpha, r.alpha_lo, r.alpha_hi)
