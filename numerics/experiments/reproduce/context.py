"""What every artefact builder receives: the scale, the finished runs, and the
theory they compare against (oracle bounds, linear floors, eqs. 47-54), cached
under ``OUT/cache/`` so a re-run does not redo the Monte Carlo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..cache import cached
from .results import StoreResults
from ..scales import Family, Scale

__all__ = ["ReproductionContext"]

#: seed of every Monte-Carlo theory evaluation of a reproduction (bounds, floors)
THEORY_SEED = 20261015


@dataclass
class ReproductionContext:
    """Inputs of the artefact builders (see the module docstring).

    Attributes
    ----------
    results : StoreResults
        Finished runs of ``out_dir/store``.
    families : tuple of str
        Families run for this reproduction (others read as empty).
    converged : ConvergedTable or None
        The converged-study table (None: ``converged_error`` says why);
        ``converged_checks``: its runs ``(row, config)`` re-trained here.
    certified_verdicts : path or None
        The certified study's verdicts file (None: the shipped one).
    unavailable : mapping of str to str
        Inputs that could not be read (``"converged study"``, ``"certified study"``) and why;
        a claim of that family not tested carries the reason in its mark.

    References
    ----------
    Paper eqs. (47)-(54) (floor), (60) (heads of the oracle bound).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ctx = ReproductionContext.open(get_scale("smoke"), tmp)
    ...     ctx.figures_dir.name, ctx.results.n_done
    ('figures', 0)
    """

    scale: Scale
    out_dir: Path
    results: StoreResults
    families: tuple = ()
    converged: Any = None
    converged_error: str = "not loaded"
    converged_checks: tuple = ()
    certified_verdicts: Any = None
    unavailable: Mapping = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, scale: Scale, out_dir, families: tuple = (), *, converged=None, converged_error: str = "not loaded",
             converged_checks: tuple = (), certified_verdicts=None,
             unavailable: Mapping | None = None) -> "ReproductionContext":
        """Read ``out_dir/store`` and create ``figures/``, ``tables/`` and ``cache/``."""
        out_dir = Path(out_dir)
        for sub in ("figures", "tables", "cache"):
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        return cls(scale=scale, out_dir=out_dir, results=StoreResults(out_dir / "store"),
                   families=tuple(families) or tuple(scale.families), converged=converged,
                   converged_error=converged_error, converged_checks=tuple(converged_checks),
                   certified_verdicts=certified_verdicts, unavailable=dict(unavailable or {}))

    @property
    def figures_dir(self) -> Path:
        return self.out_dir / "figures"

    @property
    def tables_dir(self) -> Path:
        return self.out_dir / "tables"

    @property
    def cache_dir(self) -> Path:
        return self.out_dir / "cache"

    def family(self, name: str) -> Family:
        return self.scale.families[name]

    def ran(self, name: str) -> bool:
        return name in self.families

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``key`` (in memory)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def oracle_bound(self, family: Family, a: float, b: float) -> dict:
        """``HeadBound.to_dict()`` of the oracle bound at the family's sizes
        (the regime study's cache entry: one value per bound)."""
        from numerics.experiments.bounds import bound_key, head_bounds

        key = bound_key(a, b, family.d, family.P, family.k, n_contexts=self.scale.bound_contexts)
        return self.memo(("bound", tuple(sorted(key.items()))),
                         lambda: head_bounds([key], self.cache_dir)[0].to_dict())

    def linear_floor(self, family: Family, a: float, b: float, *, d: int | None = None, P: int | None = None,
                     samples: int | None = None) -> dict:
        """Linear floor by degree at the family's sizes (or ``d``, ``P``):
        exact for an isotropic input, Monte Carlo otherwise."""
        d = family.d if d is None else d
        P = family.P if P is None else P
        depth = int(max(family.depths))
        exact = float(a) == 0.0  # isotropic input spectrum: cosine ranking is exact semi-analytically
        key = {"a": float(a), "b": float(b), "d": d, "P": P, "k": family.k, "depth": depth,
               "method": "semi_analytic" if exact else "monte_carlo",
               "samples": 0 if exact else int(samples or self.scale.floor_samples), "seed": THEORY_SEED}

        def compute() -> dict:
            from theory import PowerLawSpectrum
            from theory.floor import linear_floor_monte_carlo, linear_floor_semi_analytic

            spectrum = PowerLawSpectrum(a, b, d)
            if exact:
                est = linear_floor_semi_analytic(spectrum, P, family.k, depth, ranking="cosine")
            else:
                est = linear_floor_monte_carlo(spectrum, P, family.k, depth, key["samples"], THEORY_SEED,
                                               queries_per_context=4, variance_reduction="control_variates")
            return {"floor_by_degree": [float(v) for v in est.floor_by_degree],
                    "standard_error_by_degree": [float(v) for v in est.standard_error_by_degree],
                    "method": est.method, "ranking": est.ranking, "d": d, "P": P, "k": family.k,
                    "n_samples": est.n_samples}

        return self.memo(("floor", tuple(sorted(key.items()))),
                         lambda: cached(self.cache_dir, "linear-floor", key, compute))

    def finite_p_floor(self, family: Family, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of the finite-P floor of degree ``depth``, seeded
        by its own key (:func:`theory.floor.linear_floor_finite_p`)."""
        import hashlib

        degree = int(max(family.depths) if depth is None else depth)
        key = {"a": float(a), "b": float(b), "d": family.d, "P": family.P, "k": family.k, "depth": degree,
               "n_contexts": int(self.scale.floor_samples), "n_seeds": 8}
        seed = int.from_bytes(hashlib.sha256(repr(sorted(key.items())).encode()).digest()[:4], "big")

        def compute() -> dict:
            from theory import PowerLawSpectrum
            from theory.floor import linear_floor_finite_p

            est = linear_floor_finite_p(PowerLawSpectrum(a, b, family.d), family.P, family.k, degree, rng=seed,
                                        n_contexts=key["n_contexts"], n_seeds=key["n_seeds"])
            return {"floor": float(est.floor_by_degree[-1]), "standard_error": float(est.standard_error_by_degree[-1]),
                    "method": est.method, "seed": seed}

        value = self.memo(("finite-p-floor", tuple(sorted(key.items()))),
                          lambda: cached(self.cache_dir, "linear-floor-finite-p", key, compute))
        return value["floor"], value["standard_error"]

    def floor_at(self, family: Family, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of degree ``depth`` (default: the family's largest depth)."""
        floor = self.linear_floor(family, a, b)
        degree = int(max(family.depths) if depth is None else depth)
        index = min(degree, len(floor["floor_by_degree"])) - 1
        se = floor["standard_error_by_degree"][index]
        return float(floor["floor_by_degree"][index]), (0.0 if se is None or math.isnan(se) else float(se))
