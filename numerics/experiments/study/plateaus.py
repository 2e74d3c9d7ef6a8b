"""The paper's nonlinear plateaus (Tables 1 and 4) against the oracle bounds of softmax heads, and the sizes they imply.

Two checks of one set of paper numbers (:func:`paper_plateaus`), both against Monte-Carlo bounds
(:mod:`numerics.experiments.bounds`):

* **consistency** (:func:`paper_consistency`): at given sizes, is each plateau attainable at all? A value more
  than :data:`~numerics.experiments.criteria.BOUND_SIGMAS` SEs below the best mixture of cosine heads (eq. 60) is not.
* **sizes** (:func:`infer_sizes`): the paper gives its nonlinear plateaus but not their sizes (inferred, as Table
  3's P was). A converged model cannot go below ``B_∞`` (the best mixture of cosine heads) and a deep one should
  come close; so over a ``(d, P)`` grid, ``B_∞`` and ``B_1`` of the 14 cells (:mod:`theory.softmax_bounds`) give

      χ²(d, P) = Σ_rows (paper − B(d, P))² / SE_B(d, P)²

  (the MC error is the only one: the paper's values carry none). The best ``(d, P)`` minimises χ²; the data allow
  ``χ² ≤ χ²_min + Δ · max(1, χ²_min / dof)`` (``Δ`` = :data:`~numerics.experiments.criteria.SIZE_REGION_DELTA`: two
  fitted sizes at 95 %, widened by the Birge ratio; ``dof`` = rows − 2).

This module computes; their pages (and each row's sentence) are rendered by
:mod:`~numerics.experiments.study.page`, the χ² map by :mod:`~numerics.experiments.study.figures`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from numerics.io import json_text, write_together
from theory.validation import check_positive_int

from .. import criteria
from ..bounds import BOUND_SEED, bound_key, cached_softmax_bounds, head_bounds, softmax_bounds_key
from ..execution import Execution, as_execution
from .plan import SIZE_GRID_D, SIZE_GRID_P

__all__ = ["paper_plateaus", "ConsistencyRow", "ConsistencyReport", "paper_consistency", "SizeInference",
           "chi_square", "infer_sizes", "write_size_inference"]


def paper_plateaus() -> list[dict]:
    """The paper's 14 nonlinear plateaus: Table 1 (nonlinear L0, top-2) and Table 4 (L0, top-2 and top-16).

    Each row: ``source``, ``a``, ``b``, ``k``, ``value`` (float) and ``verbatim`` (as printed).

    Examples
    --------
    >>> rows = paper_plateaus()
    >>> len(rows), rows[0]["verbatim"], sorted({r["k"] for r in rows})
    (14, '2.007', [2, 16])
    """
    from theory.paper import paper_table

    rows = []
    for table, column in (("table1", "nonlinear_L0"), ("table4", "L0")):
        for raw, row in zip(paper_table(table, as_float=False), paper_table(table)):
            k = int(row.get("k", 2))  # Table 1 is top-2
            source = "Table 1 (nonlinear L0)" if table == "table1" else f"Table 4 (top-{k} L0)"
            rows.append(dict(source=source, a=row["a"], b=row["b"], k=k, value=row[column],
                             verbatim=str(raw[column])))
    return rows


@dataclass(frozen=True)
class ConsistencyRow:
    """One paper number confronted with the oracle bounds at given sizes.

    Attributes
    ----------
    source, paper_value : str
        E.g. ``'Table 1 (nonlinear L0)'``; the value as the paper prints it.
    single_head, single_head_se, mixture, mixture_se, target_second_moment : float
        The bounds and their SEs at (d, P, k); ``E y*²`` (the loss of predicting 0).
    package_value : float or None
        The study's lowest measured ``R_L`` at these sizes and spectrum, if it ran them.
    below_bound : bool
        More than ``criteria.BOUND_SIGMAS`` SEs below the mixture bound.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`paper_consistency`.

    References
    ----------
    Paper Tables 1 and 4; eqs. (16), (60).
    """

    source: str
    a: float
    b: float
    k: int
    d: int
    P: int
    paper_value: str
    single_head: float
    single_head_se: float
    mixture: float
    mixture_se: float
    target_second_moment: float
    package_value: float | None
    package_label: str
    below_bound: bool
    n_contexts: int = 0

    @property
    def statement(self) -> str:
        """The plain sentence for the report (:func:`~numerics.experiments.study.page.consistency_statement`)."""
        from .page import consistency_statement

        return consistency_statement(self)


@dataclass(frozen=True)
class ConsistencyReport:
    """Result of :func:`paper_consistency`: its rows; its report section and the rows below the bound follow.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`paper_consistency`.

    References
    ----------
    Paper Tables 1 and 4.
    """

    rows: tuple

    @property
    def markdown(self) -> str:
        """The report section (:func:`~numerics.experiments.study.page.consistency_markdown`)."""
        from .page import consistency_markdown

        return consistency_markdown(self.rows)

    @property
    def n_below(self) -> int:
        """How many paper values lie below the bound."""
        return sum(r.below_bound for r in self.rows)


def paper_consistency(
    *,
    study=None,
    d: int = 128,
    P_values: Sequence[int] = (1024, 2048),
    n_contexts: int = 8192,
    seed: int = BOUND_SEED,
    execution: Execution | None = None,
    bound: Callable | None = None,
    extra_sizes: Sequence[tuple] = (),
    paper_size_contexts: int | None = None,
) -> ConsistencyReport:
    """Each paper plateau the package cannot reach: the L0 of Tables 1 and 4 against the oracle bounds.

    The bound is the best non-negative mixture of softmax heads over exact cosine
    similarity (what an average of layers, eq. 60, can express); a paper value more than
    ``criteria.BOUND_SIGMAS`` SEs below it is unattainable at those sizes: ``d``
    with each of ``P_values`` (where the linear Table 3 is reproduced), the ``study``'s (a
    :class:`~numerics.experiments.study.regimes.RegimeStudy`, with its measured plateaus) and ``extra_sizes``. Each bound has ``n_contexts`` (those at
    ``d`` x ``P_values``: ``paper_size_contexts`` if given, where a few thousand contexts already
    put the paper's values many SEs below the bound) and its own stream from ``seed``, cached in
    the execution's ``cache_dir`` (none by default), computed by its ``workers`` (default 1);
    ``bound(a, b, d, P, k)`` replaces it (tests).

    References
    ----------
    Paper Tables 1, 3, 4; eqs. (6), (16), (60).

    Examples
    --------
    >>> from numerics.experiments.bounds import HeadBound
    >>> fake = lambda a, b, d, P, k: HeadBound(5.0, 0.1, 10.0, 1.0, 4.0, 0.1, (), (), 60.0, "", P, k, "cosine", 64, 64, d)
    >>> report = paper_consistency(P_values=(1024,), bound=fake)
    >>> report.rows[0].paper_value, report.rows[0].below_bound
    ('2.007', True)
    """
    d = check_positive_int("d", d)
    P_values = tuple(check_positive_int("P", P) for P in P_values)
    n_contexts = check_positive_int("n_contexts", n_contexts)
    paper_size_contexts = (n_contexts if paper_size_contexts is None
                           else check_positive_int("paper_size_contexts", paper_size_contexts))
    paper = paper_plateaus()
    sizes = [(d, P) for P in P_values]
    contexts = {size: paper_size_contexts for size in sizes}  # the study's sizes share the study's bounds
    if study is not None:
        sizes += [(sd, sP) for (sd, sP, _) in study.scale.sizes if (sd, sP) not in sizes]
    for extra in extra_sizes:
        sd, sP = (check_positive_int(name, value) for name, value in zip(("d", "P"), extra))
        if (sd, sP) not in sizes:
            sizes.append((sd, sP))
    if bound is None:
        cells = [(r["a"], r["b"], sd, sP, r["k"]) for (sd, sP) in sizes for r in paper if r["k"] <= sP]
        keys = [bound_key(*cell, n_contexts=contexts.get(cell[2:4], n_contexts), seed=seed) for cell in cells]
        execution = as_execution(execution)
        values = head_bounds(keys, execution.cache_dir, workers=execution.pool_size(default=1),
                             progress=execution.progress)
        computed = dict(zip(cells, values))

        def bound(a, b, d_, P_, k_):  # noqa: F811 - the default provider
            return computed[(a, b, d_, P_, k_)]

    rows = []
    for (sd, sP) in sizes:
        for r in paper:
            if r["k"] > sP:
                continue
            hb = bound(r["a"], r["b"], sd, sP, r["k"])
            package_value, package_label = None, ""
            pts = [p for p in (study.points if study is not None else ())
                   if (p.d, p.P, p.a, p.b, p.k) == (sd, sP, r["a"], r["b"], r["k"])]
            if pts:
                p = min(pts, key=lambda p: np.nanmin(p.R.mean))
                package_value = float(np.nanmin(p.R.mean))
                where = f"{p.name.replace('_', ' ')}, N={p.N}, L={p.depths[int(np.nanargmin(p.R.mean))]}"
                package_label = f"lowest measured R_L ({where})"
            below, _ = criteria.below_bound(r["value"], hb.mixture_loss, hb.mixture_standard_error)
            rows.append(ConsistencyRow(
                source=r["source"], a=float(r["a"]), b=float(r["b"]), k=int(r["k"]), d=sd, P=sP,
                paper_value=r["verbatim"], single_head=hb.single_head_loss,
                single_head_se=hb.single_head_standard_error, mixture=hb.mixture_loss,
                mixture_se=hb.mixture_standard_error, target_second_moment=hb.target_second_moment,
                package_value=package_value, package_label=package_label, below_bound=below,
                n_contexts=int(hb.n_contexts),
            ))
    return ConsistencyReport(rows=tuple(rows))


@dataclass(frozen=True)
class SizeInference:
    """Result of :func:`infer_sizes`.

    Attributes
    ----------
    rows : tuple of dict
        The paper's plateaus (:func:`paper_plateaus`).
    mixture, mixture_se, single, single_se : ndarray, shape (len(d_values), len(P_values), rows)
        ``B_∞`` and ``B_1`` of every row at every size, with their SEs.
    chi2_mixture, chi2_single : ndarray, shape (len(d_values), len(P_values))
    best_mixture, best_single, region_mixture, region_single : tuple
        Where each χ² is smallest, and the sizes the data allow (module docstring).

    Notes
    -----
    No example: it needs hundreds of Monte-Carlo bounds (minutes); see :func:`infer_sizes`.
    """

    d_values: tuple
    P_values: tuple
    rows: tuple
    mixture: np.ndarray
    mixture_se: np.ndarray
    single: np.ndarray
    single_se: np.ndarray
    chi2_mixture: np.ndarray
    chi2_single: np.ndarray
    best_mixture: tuple
    best_single: tuple
    region_mixture: tuple
    region_single: tuple
    n_contexts: int
    n_seeds: int

    def to_dict(self) -> dict:
        """A JSON-able dict."""
        return {key: value.tolist() if isinstance(value, np.ndarray) else value
                for key, value in self.__dict__.items()}


def chi_square(paper: np.ndarray, bound: np.ndarray, se: np.ndarray) -> np.ndarray:
    """``Σ (paper − bound)² / se²`` over the last axis (rows without a finite bound are skipped).

    Examples
    --------
    >>> round(float(chi_square(np.array([1.0, 2.0]), np.array([[1.1, 2.0]]), np.array([[0.1, 0.5]]))[0]), 12)
    1.0
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = (paper - bound) ** 2 / se**2
    return np.nansum(np.where(np.isfinite(terms), terms, np.nan), axis=-1)


def _allowed_region(chi2: np.ndarray, dof: int, d_values, P_values) -> tuple[tuple, tuple]:
    i, j = np.unravel_index(int(np.nanargmin(chi2)), chi2.shape)
    best = float(chi2[i, j])
    limit = best + criteria.SIZE_REGION_DELTA * max(1.0, best / max(dof, 1))
    allowed = tuple((int(d_values[a]), int(P_values[b])) for a, b in zip(*np.nonzero(chi2 <= limit)))
    return (int(d_values[i]), int(P_values[j])), allowed


def infer_sizes(d_values=SIZE_GRID_D, P_values=SIZE_GRID_P, *, n_contexts: int = 2048, n_seeds: int = 4,
                execution: Execution | None = None) -> SizeInference:
    """χ² of ``B_∞`` and ``B_1`` against the paper's 14 nonlinear plateaus over a ``(d, P)`` grid.

    Cells with ``P < k`` are skipped; ``n_contexts``, ``n_seeds``: the Monte Carlo of each
    bound (:func:`theory.softmax_bounds.softmax_bounds`), cached in the execution's
    ``cache_dir`` (none by default) and computed by its ``workers`` (default 1).

    Notes
    -----
    No example: it needs hundreds of Monte-Carlo bounds (minutes); ``idepth study sizes`` runs it.
    """
    rows = tuple(paper_plateaus())
    d_values, P_values = tuple(int(d) for d in d_values), tuple(int(P) for P in P_values)
    cells = [(d, P, r) for d in d_values for P in P_values for r in rows if r["k"] <= P]
    keys = [softmax_bounds_key(r["a"], r["b"], d, P, r["k"], n_contexts=n_contexts, n_seeds=n_seeds)
            for d, P, r in cells]
    execution = as_execution(execution)
    values = cached_softmax_bounds(keys, execution.cache_dir,
                                   workers=execution.pool_size(default=1),
                                   progress=execution.progress)
    shape = (len(d_values), len(P_values), len(rows))
    mixture, mixture_se, single, single_se = (np.full(shape, np.nan) for _ in range(4))
    for (d, P, r), bound in zip(cells, values):
        idx = (d_values.index(d), P_values.index(P), rows.index(r))
        mixture[idx], mixture_se[idx] = bound.mixture, bound.mixture_se
        single[idx], single_se[idx] = bound.single, bound.single_se
    paper = np.array([r["value"] for r in rows])
    chi2_mix, chi2_single = chi_square(paper, mixture, mixture_se), chi_square(paper, single, single_se)
    dof = len(rows) - 2
    best_mix, region_mix = _allowed_region(chi2_mix, dof, d_values, P_values)
    best_single, region_single = _allowed_region(chi2_single, dof, d_values, P_values)
    return SizeInference(d_values=d_values, P_values=P_values, rows=rows, mixture=mixture, mixture_se=mixture_se,
                         single=single, single_se=single_se, chi2_mixture=chi2_mix, chi2_single=chi2_single,
                         best_mixture=best_mix, best_single=best_single, region_mixture=region_mix,
                         region_single=region_single, n_contexts=n_contexts, n_seeds=n_seeds)


def write_size_inference(result: SizeInference, out_dir) -> str:
    """Write ``OUT/sizes.md``, ``OUT/sizes.json`` and ``OUT/figures/sizes_chi2.png`` of :func:`infer_sizes`'s result.

    What ``idepth study sizes`` calls after :func:`infer_sizes` (it computes nothing); returns the Markdown.

    Notes
    -----
    No example: it needs a size inference (hundreds of Monte-Carlo bounds, minutes).
    """
    from .figures import draw_size_map
    from .page import sizes_markdown

    markdown = sizes_markdown(result, "figures/sizes_chi2.png")
    write_together(out_dir, {"figures/sizes_chi2.png": lambda path: draw_size_map(result, path),
                             "sizes.md": markdown, "sizes.json": json_text(result.to_dict())})
    return markdown
