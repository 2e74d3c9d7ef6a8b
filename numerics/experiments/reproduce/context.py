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

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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
    scale : Scale
    out_dir : Path
        The reproduction's output directory.
    results : StoreResults
        Finished runs of ``out_dir/store``.
    families : tuple of str
        Families run for this reproduction (others read as empty).
    converged : ConvergedTable or None
        The converged-study table the nonlinear verdicts and Tables 1, 4, 5 read
        (:mod:`numerics.experiments.reproduce.converged`); None with ``converged_error`` saying why.
    converged_checks : tuple of (row, TrainConfig)
        Runs of that table re-trained by this reproduction.

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
    _memo: dict = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, scale: Scale, out_dir, families: tuple = (), *, converged=None, converged_error: str = "not loaded",
             converged_checks: tuple = (), certified_verdicts=None) -> "ReproductionContext":
        """Read ``out_dir/store`` and create ``figures/``, ``tables/`` and ``cache/``.

        ``converged`` is the converged-study table
        (:class:`numerics.experiments.reproduce.converged.ConvergedTable`, or None with
        ``converged_error`` saying why), ``converged_checks`` its re-trained runs ``(row, config)``.
        ``certified_verdicts``: the certified study's verdicts file the central claim reads (None: the
        shipped one, :data:`numerics.experiments.study.certified.page.SHIPPED_VERDICTS`).
        """
        out_dir = Path(out_dir)
        for sub in ("figures", "tables", "cache"):
            (out_dir / sub).mkdir(parents=True, exist_ok=True)
        return cls(scale=scale, out_dir=out_dir, results=StoreResults(out_dir / "store"),
                   families=tuple(families) or tuple(scale.families), converged=converged,
                   converged_error=converged_error, converged_checks=tuple(converged_checks),
                   certified_verdicts=certified_verdicts)

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
        (``single_head_loss``, ``single_head_standard_error``, ``mixture_loss``, ...): the
        same entry of the cache as the regime study's cosine bound at these sizes, so the
        report shows one value per bound.
        """
        from numerics.experiments.bounds import bound_key, head_bounds

        key = bound_key(a, b, family.d, family.P, family.k, n_contexts=self.scale.bound_contexts)
        return self.memo(("bound", tuple(sorted(key.items()))),
                         lambda: head_bounds([key], self.cache_dir)[0].to_dict())

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
                         lambda: cached(self.cache_dir, "linear-floor", key, compute))

    def finite_p_floor(self, family: Family, a: float, b: float, depth: int | None = None) -> tuple[float, float]:
        """``(floor, se)`` of the finite-P floor (:func:`theory.floor.linear_floor_finite_p`: the best polynomial in
        the context's empirical covariance S, not Σ) of degree ``depth`` at the family's ``(d, P, k)``.

        Its Monte-Carlo seed is derived from its own key (independent of every other quantity).
        """
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
