"""What every figure and table builder of a reproduction receives: results, sizes and cached theory.

:class:`ReproductionContext` bundles the scale, the output directories, the
store's finished runs (:class:`numerics.experiments.reproduce.results.StoreResults`) and the
theory the artefacts compare against, computed once and cached as JSON under
``OUT/cache/`` (keyed by every input and the package version, written
atomically) so a re-run does not redo the Monte Carlo:

* :meth:`ReproductionContext.oracle_bound` -- the best single softmax head and
  the best non-negative mixture of heads at a family's sizes
  (:func:`numerics.experiments.bounds.softmax_head_bound`), drawn on every nonlinear depth plot;
* :meth:`ReproductionContext.linear_floor` -- the linear-attention floor of the
  top-k task by degree (paper eqs. 47-54): exact for an isotropic input
  spectrum (:func:`theory.floor.linear_floor_semi_analytic`, cosine ranking),
  Monte Carlo with control variates otherwise
  (:func:`theory.floor.linear_floor_monte_carlo`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .results import StoreResults
from .scales import Family, Scale

__all__ = ["ReproductionContext", "cached_json"]

#: seed of every Monte-Carlo theory evaluation of a reproduction (bounds, floors)
THEORY_SEED = 20261015


def cached_json(cache_dir: Path, kind: str, key: dict, compute: Callable[[], dict]) -> dict:
    """``compute()`` cached as ``cache_dir/<kind>-<hash>.json`` (hash of ``key`` and the package version).

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = cached_json(Path(tmp), "demo", {"x": 1}, lambda: {"value": 2.0})
    ...     again = cached_json(Path(tmp), "demo", {"x": 1}, lambda: {"value": -1.0})
    >>> first == again == {"value": 2.0}
    True
    """
    from numerics.io import atomic_write
    from theory import __version__

    payload = json.dumps({"kind": kind, "key": key, "package_version": __version__}, sort_keys=True)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:20]
    path = Path(cache_dir) / f"{kind}-{digest}.json"
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("key") == key:
                return stored["value"]
        except (ValueError, KeyError):
            pass  # a damaged cache entry is recomputed
    value = compute()
    text = json.dumps({"kind": kind, "key": key, "package_version": __version__, "value": value},
                      sort_keys=True, indent=1, allow_nan=True).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda fh: fh.write(text))
    return value


@dataclass
class ReproductionContext:
    """Inputs of the artefact builders (see the module docstring).

    Attributes
    ----------
    scale : Scale
    out_dir : Path
        The reproduction's output directory.
    results : StoreResults
        Finished runs of ``out_dir/store``.
    families : tuple of str
        Families run for this reproduction (others read as empty).

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
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, scale: Scale, out_dir, families: tuple = ()) -> "ReproductionContext":
        """Read ``out_dir/store`` and create ``figures/``, ``tables/`` and ``cache/``."""
        out_dir = Path(out_dir)
        for sub in ("figures", "tables", "cache"):
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        return cls(scale=scale, out_dir=out_dir, results=StoreResults(out_dir / "store"),
                   families=tuple(families) or tuple(scale.families))

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
        """The scale's family ``name``."""
        return self.scale.families[name]

    def ran(self, name: str) -> bool:
        """Whether family ``name`` was part of this reproduction's plan."""
        return name in self.families

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``key`` within this reproduction (in memory)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # ---------------------------------------------------------------- theory, cached on disk

    def oracle_bound(self, family: Family, a: float, b: float) -> dict:
        """Oracle softmax-head bound at the family's ``(d, P, k)`` for spectrum ``(a, b)``.

        Returns the :meth:`numerics.experiments.bounds.HeadBound.to_dict` fields
        (``single_head_loss``, ``single_head_standard_error``, ``mixture_loss``, ...).
        """
        key = {"a": float(a), "b": float(b), "d": family.d, "P": family.P, "k": family.k,
               "heads": int(max(family.depths)), "n_contexts": self.scale.bound_contexts, "seed": THEORY_SEED}

        def compute() -> dict:
            from numerics.experiments.bounds import softmax_head_bound
            from theory import PowerLawSpectrum

            bound = softmax_head_bound(PowerLawSpectrum(a, b, family.d), family.P, family.k,
                                       heads=key["heads"], n_contexts=key["n_contexts"], rng=THEORY_SEED)
            return bound.to_dict()

        return self.memo(("bound", tuple(sorted(key.items()))),
                         lambda: cached_json(self.cache_dir, "oracle-bound", key, compute))

    def linear_floor(self, family: Family, a: float, b: float, *, d: int | None = None, P: int | None = None,
                     samples: int | None = None) -> dict:
        """Linear-attention floor of the top-k task at the family's sizes (or ``d``, ``P`` given), by degree.

        Returns ``floor_by_degree`` and ``standard_error_by_degree`` (lists,
        degree 1 .. the family's largest depth), ``method`` and the sizes.
        """
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
                         lambda: cached_json(self.cache_dir, "linear-floor", key, compute))

    def floor_at(self, family: Family, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of degree ``depth`` (default: the family's largest depth)."""
        floor = self.linear_floor(family, a, b)
        degree = int(max(family.depths) if depth is None else depth)
        index = min(degree, len(floor["floor_by_degree"])) - 1
        se = floor["standard_error_by_degree"][index]
        return float(floor["floor_by_degree"][index]), (0.0 if se is None or math.isnan(se) else float(se))
