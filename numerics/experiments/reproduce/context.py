"""What every artefact builder receives: the scale, the finished runs, and the
theory they compare against (oracle bounds, linear floors, eqs. 47-54), cached
under ``OUT/cache/`` so a re-run does not redo the Monte Carlo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from ..cache import cached, function_digest
from .results import StoreResults
from ..study.plan import Plan
from .scales import Scale

__all__ = ["ReproductionContext"]

#: seed of every Monte-Carlo theory evaluation of a reproduction (bounds, floors)
THEORY_SEED = 20261015
#: independent fits of each finite-P floor (its SE is over them)
FINITE_P_SEEDS = 8


@dataclass
class ReproductionContext:
    """Inputs of the artefact builders (see the module docstring).

    Attributes
    ----------
    results : StoreResults
        Finished runs of ``out_dir/store``.
    families : tuple of str
        Families run for this reproduction (others read as empty).
    envelopes : EnvelopeTable or None
        The certified study's current settings (None: ``envelopes_error`` says why);
        ``certified_checks``: its candidates ``(row, config)`` re-trained here.
    certified_verdicts : path or None
        The certified study's verdicts file (None: the shipped one).
    unavailable : mapping of str to str
        Inputs that could not be read (``"certified study"``) and why;
        a claim of that family not tested carries the reason in its mark.

    References
    ----------
    Paper eqs. (47)-(54) (floor), (60) (heads of the oracle bound).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ctx = ReproductionContext.open(get_scale("smoke"), tmp)
    ...     ctx.figures_dir.name, ctx.results.n_done
    ('figures', 0)
    """

    scale: Scale
    out_dir: Path
    results: StoreResults
    families: tuple = ()
    envelopes: Any = None
    envelopes_error: str = "not loaded"
    certified_checks: tuple = ()
    certified_verdicts: Any = None
    unavailable: Mapping = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, scale: Scale, out_dir, families: tuple = (), *, envelopes=None, envelopes_error: str = "not loaded",
             certified_checks: tuple = (), certified_verdicts=None,
             unavailable: Mapping | None = None) -> "ReproductionContext":
        """Read ``out_dir/store`` and create ``figures/``, ``tables/`` and ``cache/``."""
        out_dir = Path(out_dir)
        for sub in ("figures", "tables", "cache"):
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        return cls(scale=scale, out_dir=out_dir, results=StoreResults(out_dir / "store"),
                   families=tuple(families) or tuple(scale.families), envelopes=envelopes,
                   envelopes_error=envelopes_error, certified_checks=tuple(certified_checks),
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

    def family(self, name: str) -> Plan:
        return self.scale.families[name]

    def ran(self, name: str) -> bool:
        return name in self.families

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``key`` (in memory)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def oracle_bound(self, family: Plan, a: float, b: float) -> dict:
        """``HeadBound.to_dict()`` of the oracle bound at the family's sizes
        (the regime study's cache entry: one value per bound)."""
        from numerics.experiments.bounds import head_bounds

        key = self._bound_key(family, a, b)
        return self.memo(("bound", tuple(sorted(key.items()))),
                         lambda: head_bounds([key], self.cache_dir)[0].to_dict())

    def _bound_key(self, family: Plan, a: float, b: float) -> dict:
        from numerics.experiments.bounds import bound_key

        return bound_key(a, b, family.d, family.P, family.k, n_contexts=self.scale.bound_contexts)

    def _floor_key(self, family: Plan, a: float, b: float, d: int | None = None, P: int | None = None,
                   samples: int | None = None) -> dict:
        exact = float(a) == 0.0  # isotropic input spectrum: cosine ranking is exact semi-analytically
        return {"a": float(a), "b": float(b), "d": family.d if d is None else d, "P": family.P if P is None else P,
                "k": family.k, "depth": int(max(family.depths)),
                "method": "semi_analytic" if exact else "monte_carlo",
                "samples": 0 if exact else int(samples or self.scale.floor_samples), "seed": THEORY_SEED}

    def linear_floor(self, family: Plan, a: float, b: float, *, d: int | None = None, P: int | None = None,
                     samples: int | None = None) -> dict:
        """Linear floor by degree at the family's sizes (or ``d``, ``P``):
        exact for an isotropic input, Monte Carlo otherwise."""
        return self._theory("linear-floor", self._floor_key(family, a, b, d, P, samples), _linear_floor_value)

    def _finite_p_key(self, family: Plan, a: float, b: float, depth: int | None = None) -> dict:
        return {"a": float(a), "b": float(b), "d": family.d, "P": family.P, "k": family.k,
                "depth": int(max(family.depths) if depth is None else depth),
                "n_contexts": int(self.scale.floor_samples), "n_seeds": FINITE_P_SEEDS}

    def finite_p_floor(self, family: Plan, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of the finite-P floor of degree ``depth``, seeded
        by its own key (:func:`theory.floor.linear_floor_finite_p`)."""
        value = self._theory("linear-floor-finite-p", self._finite_p_key(family, a, b, depth), _finite_p_floor_value)
        return value["floor"], value["standard_error"]

    def _theory(self, kind: str, key: dict, compute: Callable[[dict], dict]) -> dict:
        """``compute(key)`` once: in memory, and in ``cache/`` under ``kind``, keyed on ``key`` and on the code of
        ``compute`` (the entries :meth:`prefetch` fills)."""
        return self.memo((kind, tuple(sorted(key.items()))),
                         lambda: cached(self.cache_dir, kind, key, lambda: compute(key), code=function_digest(compute)))

    def prefetch(self, workers: int = 1) -> int:
        """Compute the Monte Carlo the artefacts will read, in ``workers`` processes; the number of values.

        The oracle bound of every spectrum of the softmax families run on the top-k task, and the
        floors (population and finite-P, at the deepest depth) of the linear ones, into the cache
        (values already there are read, not recomputed): the artefacts then find them, so the
        Monte Carlo runs in parallel instead of one value at a time in the main process.

        References
        ----------
        Paper eqs. (47)-(54) (floors), (60) (bounds).

        Examples
        --------
        >>> import tempfile
        >>> from numerics.experiments.reproduce.scales import get_scale
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     ctx = ReproductionContext.open(get_scale("smoke"), tmp, families=("linear_difficult",))
        ...     n = ctx.prefetch()
        ...     n, len(list(ctx.cache_dir.rglob("*.json")))
        (2, 2)
        """
        from numerics.experiments.bounds import head_bounds

        from ..cache import cached_many

        bounds, floors, finite = [], [], []
        for name in self.families:
            family = self.family(name)
            if family.task != "difficult":
                continue
            for a, b in family.spectra:
                if family.model == "linear":
                    floors.append(self._floor_key(family, a, b))
                    finite.append(self._finite_p_key(family, a, b))
                else:
                    bounds.append(self._bound_key(family, a, b))
        head_bounds(bounds, self.cache_dir, workers=workers)
        cached_many(self.cache_dir, "linear-floor", floors, _linear_floor_value, workers=workers)
        cached_many(self.cache_dir, "linear-floor-finite-p", finite, _finite_p_floor_value, workers=workers)
        return len(bounds) + len(floors) + len(finite)

    def floor_at(self, family: Plan, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of degree ``depth`` (default: the family's largest depth)."""
        floor = self.linear_floor(family, a, b)
        degree = int(max(family.depths) if depth is None else depth)
        index = min(degree, len(floor["floor_by_degree"])) - 1
        se = floor["standard_error_by_degree"][index]
        return float(floor["floor_by_degree"][index]), (0.0 if se is None or math.isnan(se) else float(se))


def _linear_floor_value(key: dict) -> dict:
    """The linear floor by degree (eqs. 47-54) of a :meth:`ReproductionContext.linear_floor` key, JSON-able."""
    from theory import PowerLawSpectrum
    from theory.floor import linear_floor_monte_carlo, linear_floor_semi_analytic

    spectrum = PowerLawSpectrum(key["a"], key["b"], key["d"])
    if key["method"] == "semi_analytic":
        est = linear_floor_semi_analytic(spectrum, key["P"], key["k"], key["depth"], ranking="cosine")
    else:
        est = linear_floor_monte_carlo(spectrum, key["P"], key["k"], key["depth"], key["samples"], key["seed"],
                                       queries_per_context=4, variance_reduction="control_variates")
    return {"floor_by_degree": [float(v) for v in est.floor_by_degree],
            "standard_error_by_degree": [float(v) for v in est.standard_error_by_degree],
            "method": est.method, "ranking": est.ranking, "d": key["d"], "P": key["P"], "k": key["k"],
            "n_samples": est.n_samples}


def _finite_p_floor_value(key: dict) -> dict:
    """The finite-P floor (:func:`theory.floor.linear_floor_finite_p`) of a
    :meth:`ReproductionContext.finite_p_floor` key, seeded by the key itself, JSON-able."""
    import hashlib

    from theory import PowerLawSpectrum
    from theory.floor import linear_floor_finite_p

    seed = int.from_bytes(hashlib.sha256(repr(sorted(key.items())).encode()).digest()[:4], "big")
    est = linear_floor_finite_p(PowerLawSpectrum(key["a"], key["b"], key["d"]), key["P"], key["k"], key["depth"],
                                rng=seed, n_contexts=key["n_contexts"], n_seeds=key["n_seeds"])
    return {"floor": float(est.floor_by_degree[-1]), "standard_error": float(est.standard_error_by_degree[-1]),
            "method": est.method, "seed": seed}
