"""A reproduction's finished runs (:class:`StoreResults`) as curves against depth.

:meth:`StoreResults.curve` gives one quantity of one spectrum as a :class:`Curve`;
:func:`fit_curve` fits eq. (16) to it (whether it settles: :func:`numerics.experiments.criteria.last_doubling`).
Standard errors: over seeds; with one seed, the run's held-out SE (for
``A_L − C_L``, ``sqrt(A_se² + C_se²)``); :attr:`Curve.se_kind` says which.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import criteria

__all__ = ["Curve", "FitSummary", "StoreResults", "fit_curve", "int_list", "spectrum_label"]

def int_list(values) -> str:
    """Integers (numpy's too) as a caption writes them: ``[1, 2, 4]``.

    Examples
    --------
    >>> import numpy as np
    >>> int_list(np.array([1, 2, 4]))
    '[1, 2, 4]'
    """
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def spectrum_label(a: float, b: float) -> str:
    """``(a, b)`` as the paper writes it.

    References
    ----------
    Paper eq. (2).

    Examples
    --------
    >>> spectrum_label(0.25, 0.0)
    '(0.25, 0)'
    """
    return f"({a:g}, {b:g})"


class _Labelled:
    """``label``: the spectrum ``(a, b)`` as the paper writes it."""

    @property
    def label(self) -> str:
        return spectrum_label(self.a, self.b)


@dataclass(frozen=True, eq=False)
class Curve(_Labelled):
    """One quantity against depth for one spectrum of a family.

    Attributes
    ----------
    quantity : str
        Metric name (``R_L``, ``A_minus_C``, ...) of spectrum ``(a, b)`` (eq. 2).
    values : ndarray, shape (n_seeds, n_depths)
        Per-seed values (NaN where a run is missing or the value undefined).
    mean, se : ndarray, shape (n_depths,)
        Mean over seeds and its SE (``se_kind``: ``"seeds"`` or ``"held-out"``);
        ``n_seeds``: finite values per depth.

    References
    ----------
    Paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> c = Curve("R_L", 0.0, 0.0, np.array([1, 2]), np.array([[2.0, 1.5], [2.2, 1.7]]),
    ...           np.array([2.1, 1.6]), np.array([0.1, 0.1]), np.array([2, 2]), "seeds")
    >>> c.at(2)
    (1.6, 0.1)
    """

    quantity: str
    a: float
    b: float
    depths: np.ndarray
    values: np.ndarray
    mean: np.ndarray
    se: np.ndarray
    n_seeds: np.ndarray
    se_kind: str

    @property
    def empty(self) -> bool:
        """No finite value at any depth."""
        return not bool(np.any(np.isfinite(self.mean)))

    def at(self, depth: int) -> tuple[float, float]:
        """``(mean, se)`` at ``depth`` (NaN, NaN if absent)."""
        hits = np.flatnonzero(self.depths == depth)
        if hits.size == 0:
            return (math.nan, math.nan)
        return (float(self.mean[hits[0]]), float(self.se[hits[0]]))

    def finite(self) -> "Curve":
        """The depths where the mean is finite."""
        keep = np.isfinite(self.mean)
        return Curve(self.quantity, self.a, self.b, self.depths[keep], self.values[:, keep], self.mean[keep],
                     self.se[keep], self.n_seeds[keep], self.se_kind)


@dataclass(frozen=True, eq=False)
class FitSummary:
    """A fit of eq. (16) (or eq. 92) to a curve, or None and the ``reason``.

    References
    ----------
    Paper eqs. (16), (88)-(89), (92)-(93).

    Examples
    --------
    >>> FitSummary(None, "too few depths").ok
    False
    """

    fit: Any
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.fit is not None

    def value(self, name: str) -> float:
        """A parameter estimate (NaN if no fit)."""
        return float(getattr(self.fit, name)) if self.ok else math.nan

    def se(self, name: str) -> float:
        """A parameter's standard error (NaN if no fit)."""
        return float(self.fit.standard_errors[name]) if self.ok else math.nan


def _complete_rows(curve: Curve) -> np.ndarray:
    rows = curve.values[np.all(np.isfinite(curve.values), axis=1)]
    return rows if rows.shape[0] > 0 else curve.mean[None, :]


def fit_curve(curve: Curve, floor: float | None = None, *, gap_plateau: float | None = None) -> FitSummary:
    """Fit ``R_L = L0 + c L^(−alpha)`` (eq. 16) to ``curve``, or the gap law.

    The seeds with a value at every finite depth are fitted jointly
    (:func:`theory.fitting.fit_depth_law`); the gap law is fitted to the mean
    (one seed's ``C_L`` may exceed the plateau where the mean does not).

    Parameters
    ----------
    curve : Curve
    floor : float or None
        ``None``: ``L0`` fitted; ``0``: ``L0 = 0`` (easy task); otherwise fixed.
    gap_plateau : float or None
        Fit ``gap_plateau − C_L = c L^(−alpha)`` (eqs. 92-93) instead.

    References
    ----------
    Paper eqs. (16), (88)-(89), (92)-(93).

    Examples
    --------
    >>> depths = np.array([1, 2, 4, 8])
    >>> losses = 1.0 + 2.0 / depths
    >>> c = Curve("R_L", 0, 0, depths, losses[None], losses, np.zeros(4), np.ones(4, int), "held-out")
    >>> round(fit_curve(c).value("alpha"), 6)
    1.0
    """
    from theory.fitting import fit_depth_law, fit_gap_law

    curve = curve.finite()
    needed = 3 if (floor is None and gap_plateau is None) else 2
    if len(np.unique(curve.depths)) < needed:
        return FitSummary(None, f"{len(curve.depths)} depth(s) with data; the fit needs {needed}")
    try:
        if gap_plateau is not None:
            fit = fit_gap_law(curve.depths, curve.mean, gap_plateau)
        else:
            fit = fit_depth_law(curve.depths, _complete_rows(curve), floor)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
        return FitSummary(None, " ".join(str(exc).split()))
    return FitSummary(fit)


class StoreResults:
    """The finished runs of the store ``store_dir`` (missing: empty), by config.

    References
    ----------
    Paper eqs. (12), (61)-(63) (the stored metrics).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     StoreResults(tmp).n_done
    0
    """

    def __init__(self, store_dir) -> None:
        from numerics.experiments.store import STORE_FILENAME, load_results

        self.store_dir = Path(store_dir)
        records = load_results(self.store_dir, status="done") if (self.store_dir / STORE_FILENAME).exists() else []
        self._by_hash = {record["hash"]: record for record in records}
        self._arrays: dict[str, dict] = {}

    @property
    def n_done(self) -> int:
        return len(self._by_hash)

    def record(self, config) -> dict | None:
        """The store record of ``config`` (None if it has not finished)."""
        return self._by_hash.get(config.content_hash())

    def metrics(self, config) -> dict:
        """The metrics of ``config`` (empty if absent)."""
        record = self.record(config)
        return dict(record["metrics"]) if record else {}

    def arrays(self, config) -> dict:
        """All stored arrays of ``config`` (empty if absent); read once and cached."""
        from numerics.experiments.store import load_arrays

        key = config.content_hash()
        if key not in self._by_hash:
            return {}
        if key not in self._arrays:
            self._arrays[key] = load_arrays(self.store_dir, key)
        return self._arrays[key]

    def wall_time(self, configs) -> float:
        """Total worker wall time (s) of the finished runs among ``configs``."""
        records = [self.record(config) or {} for config in configs]
        return sum((float(r["wall_time"]) for r in records if r.get("wall_time") is not None), 0.0)

    def curve(self, family, a: float, b: float, quantity: str = "R_L") -> Curve:
        """A metric (``R_L``, ``m``, ...) or ``A_minus_C`` (eq. 63) by depth."""
        depths = np.asarray(family.depths, dtype=np.int64)
        values = np.full((len(family.seeds), len(depths)), np.nan)
        heldout_se = np.full(values.shape, np.nan)
        for j, depth in enumerate(depths):
            for i, seed in enumerate(family.seeds):
                m = self.metrics(family.config(a, b, int(depth), seed))
                if m:
                    values[i, j], heldout_se[i, j] = _metric(m, quantity)
        columns = [values[np.isfinite(values[:, j]), j] for j in range(len(depths))]
        n = np.sum(np.isfinite(values), axis=0)
        mean = np.array([float(np.mean(column)) if column.size else np.nan for column in columns], dtype=np.float64)
        if len(family.seeds) < 2:
            return Curve(quantity, float(a), float(b), depths, values, mean, heldout_se[0], n, "held-out")
        se = np.full(len(depths), np.nan)
        for j, column in enumerate(columns):
            if column.size >= 2:
                se[j] = criteria.standard_error(column)
            elif column.size == 1 and np.any(np.isfinite(heldout_se[:, j])):
                se[j] = float(np.nanmax(heldout_se[:, j]))
        return Curve(quantity, float(a), float(b), depths, values, mean, se, n, "seeds")


def _metric(metrics: dict, quantity: str) -> tuple[float, float]:
    def get(name: str) -> float:
        value = metrics.get(name)
        return math.nan if value is None else float(value)

    if quantity == "A_minus_C":
        A, C = get("A_L"), get("C_L")
        return A - C, math.hypot(get("A_L_se"), get("C_L_se"))
    return get(quantity), get(f"{quantity}_se")
