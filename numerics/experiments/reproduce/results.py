"""A reproduction's finished runs (:class:`StoreResults`) as curves against depth.

:meth:`StoreResults.curve` gives one quantity of one spectrum as a :class:`~numerics.experiments.study.curves.Curve`
(:meth:`~numerics.experiments.study.curves.Curve.over_seeds`: standard errors over seeds; with one seed, the run's
held-out SE, for ``A_L − C_L`` ``sqrt(A_se² + C_se²)``; :attr:`Curve.se_kind` says which).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..study.curves import Curve

__all__ = ["StoreResults", "int_list"]


def int_list(values) -> str:
    """Integers (numpy's too) as a caption writes them: ``[1, 2, 4]``.

    Examples
    --------
    >>> import numpy as np
    >>> int_list(np.array([1, 2, 4]))
    '[1, 2, 4]'
    """
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


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
        return Curve.over_seeds(quantity, a, b, depths, values, heldout_se)


def _metric(metrics: dict, quantity: str) -> tuple[float, float]:
    def get(name: str) -> float:
        value = metrics.get(name)
        return math.nan if value is None else float(value)

    if quantity == "A_minus_C":
        A, C = get("A_L"), get("C_L")
        return A - C, math.hypot(get("A_L_se"), get("C_L_se"))
    return get(quantity), get(f"{quantity}_se")
