"""The paper's nonlinear plateaus (Tables 1 and 4) against the oracle bounds of softmax heads."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from theory.validation import check_positive_int

from .. import criteria
from .._markdown import markdown_table
from ..bounds import BOUND_SEED, bound_key, head_bounds
from ..execution import Execution, as_execution
from .regimes import RegimeStudy

__all__ = ["ConsistencyRow", "ConsistencyReport", "consistency_markdown", "paper_consistency", "paper_plateaus"]


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
    statement : str
        The plain sentence for the report.

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
    statement: str
    n_contexts: int = 0


@dataclass(frozen=True)
class ConsistencyReport:
    """Result of :func:`paper_consistency`: its rows, report section and rows below the bound.

    Notes
    -----
    No example: it needs trained runs or Monte-Carlo bounds (minutes); see :func:`paper_consistency`.

    References
    ----------
    Paper Tables 1 and 4.
    """

    rows: tuple
    markdown: str
    n_below: int


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


def paper_consistency(
    *,
    study: RegimeStudy | None = None,
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
    with each of ``P_values`` (where the linear Table 3 is reproduced), the ``study``'s
    (with its measured plateaus) and ``extra_sizes``. Each bound has ``n_contexts`` (those at
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
            below, margin = criteria.below_bound(r["value"], hb.mixture_loss, hb.mixture_standard_error)
            ratio = hb.mixture_loss / r["value"]
            if below:
                statement = (
                    f"The paper's {r['source']} = {r['verbatim']} at (a, b) = ({r['a']:g}, {r['b']:g}) is below what any "
                    f"non-negative mixture of softmax heads over exact cosine similarity (optimal temperatures and gains) "
                    f"can reach at d = {sd}, P = {sP}: the best mixture "
                    f"reaches {hb.mixture_loss:.4g} ± {hb.mixture_standard_error:.2g} ({ratio:.3g}× the paper's value, "
                    f"{margin:.0f} SE above it; best single head {hb.single_head_loss:.4g}). Unattainable at these sizes."
                )
            else:
                statement = (
                    f"The paper's {r['source']} = {r['verbatim']} at (a, b) = ({r['a']:g}, {r['b']:g}) is not below the "
                    f"bound at d = {sd}, P = {sP} (best mixture {hb.mixture_loss:.4g} ± {hb.mixture_standard_error:.2g})."
                )
            rows.append(ConsistencyRow(
                source=r["source"], a=float(r["a"]), b=float(r["b"]), k=int(r["k"]), d=sd, P=sP,
                paper_value=r["verbatim"], single_head=hb.single_head_loss,
                single_head_se=hb.single_head_standard_error, mixture=hb.mixture_loss,
                mixture_se=hb.mixture_standard_error, target_second_moment=hb.target_second_moment,
                package_value=package_value, package_label=package_label, below_bound=below, statement=statement,
                n_contexts=int(hb.n_contexts),
            ))
    markdown = consistency_markdown(rows)
    return ConsistencyReport(rows=tuple(rows), markdown=markdown, n_below=sum(r.below_bound for r in rows))


def consistency_markdown(rows: Sequence[ConsistencyRow], *, below_as_table: bool = False) -> str:
    """The section "Consistency with the paper": every paper plateau against the oracle bounds, per row and per size.

    The values more than :data:`~numerics.experiments.criteria.BOUND_SIGMAS` SE below the bound close the section:
    one sentence each (the study's page), or, with ``below_as_table``, one table (``REPORT.md``).

    References
    ----------
    Paper Tables 1 and 4 (nonlinear L0) against the bound of eq. (60).

    Examples
    --------
    >>> from numerics.experiments.bounds import HeadBound
    >>> fake = lambda a, b, d, P, k: HeadBound(5.0, 0.1, 10.0, 1.0, 4.0, 0.1, (), (), 60.0, "", P, k, "cosine", 64, 64, d)
    >>> rows = paper_consistency(P_values=(1024,), bound=fake).rows
    >>> text = consistency_markdown(rows, below_as_table=True)
    >>> "\\n- The paper's" in text, "| paper value | best mixture ± SE |" in text, "\\n- The paper's" in consistency_markdown(rows)
    (False, True, True)
    """
    n_below = sum(r.below_bound for r in rows)
    counts = sorted({r.n_contexts for r in rows})
    contexts = (f"{counts[0]} per bound" if len(counts) == 1
                else "per bound: " + " or ".join(map(str, counts)) + ", by size in the second table")
    lines = [
        "## Consistency with the paper",
        "",
        "Each nonlinear plateau the paper reports (Table 1, nonlinear L0; Table 4, L0) against the oracle bound: the "
        "best loss of one softmax head over exact cosine similarity with optimal temperature and gain, and of a "
        "non-negative mixture of such heads (what the average of layers of the paper's parallel model, eq. 60, can "
        f"express), Monte Carlo over contexts ({contexts}, ± one SE). 'below bound' = the paper's value is "
        f"more than {criteria.BOUND_SIGMAS:g} SE below the mixture bound at those sizes. "
        "d = 128, P ≈ 1024 are the sizes at which the package reproduces the paper's linear Table 3.",
        "",
        f"**{n_below} of {len(rows)} paper values are below the bound at the sizes stated.**",
        "",
    ]
    lines += markdown_table(
        ("source", "(a, b)", "k", "d", "P", "paper", "best single head", "best mixture", "mixture / paper", "E y*²",
         "package", "below bound"),
        [(r.source, f"({r.a:g}, {r.b:g})", r.k, r.d, r.P, r.paper_value, f"{r.single_head:.4g} ± {r.single_head_se:.2g}",
          f"{r.mixture:.4g} ± {r.mixture_se:.2g}", f"{r.mixture / float(r.paper_value):.3g}",
          f"{r.target_second_moment:.4g}",
          "—" if r.package_value is None else f"{r.package_value:.4g} ({r.package_label})",
          "**yes**" if r.below_bound else "no") for r in rows])
    lines += ["", "Per size: how far the best mixture of cosine heads lies from the paper's values.", ""]
    ratios = {}
    for r in rows:
        ratios.setdefault((r.d, r.P), []).append(r.mixture / float(r.paper_value))
    lines += markdown_table(
        ("d", "P", "contexts", "rows", "below bound", "mixture / paper: median", "min", "max"),
        [(d, P, "/".join(map(str, sorted({r.n_contexts for r in rows if (r.d, r.P) == (d, P)}))), len(sub),
          sum(r.below_bound for r in rows if (r.d, r.P) == (d, P)), f"{np.median(sub):.3g}",
          f"{np.min(sub):.3g}", f"{np.max(sub):.3g}") for (d, P), sub in ratios.items()])
    medians = {size: float(np.median(sub)) for size, sub in ratios.items()}
    closest = min(medians, key=lambda size: abs(math.log(medians[size])))
    sub = ratios[closest]
    lines += ["", f"Of the sizes checked, the paper's values are closest to the bound at d = {closest[0]}, P = {closest[1]} "
              f"(mixture / paper: median {medians[closest]:.3g}, range {min(sub):.3g}-{max(sub):.3g}).", ""]
    below = [r for r in rows if r.below_bound]
    if below and below_as_table:
        lines += [f"The {len(below)} paper values below what any non-negative mixture of softmax heads over exact "
                  "cosine similarity (optimal temperatures and gains) reaches at the sizes stated — unattainable "
                  "there:", ""]
        lines += markdown_table(("source", "(a, b)", "d", "P", "paper value", "best mixture ± SE", "× paper",
                                 "SE above the paper", "best single head"),
                                [(r.source, f"({r.a:g}, {r.b:g})", r.d, r.P, r.paper_value,
                                  f"{r.mixture:.4g} ± {r.mixture_se:.2g}", f"{r.mixture / float(r.paper_value):.3g}",
                                  f"{criteria.below_bound(float(r.paper_value), r.mixture, r.mixture_se)[1]:.0f}",
                                  f"{r.single_head:.4g}") for r in below])
    else:
        lines += [f"- {r.statement}" for r in below]
    return "\n".join(lines + [""])
