"""The one joint bootstrap of the certified study: seeds and report contexts redrawn together.

Every interval of the study's pages (certificates, envelopes, fit-free contrasts, the expressible checks)
comes from replicates of weighted means over the shared report contexts, the weights a multinomial redraw
of the contexts (:func:`context_weights`), the seeds redrawn with replacement (:func:`seed_counts`). Two
estimators read the one resampling: :func:`replicates`, the mean over seeds and contexts of fixed rows (the
certificates, the envelope, the gains), and :func:`contrast_bootstrap`, the per-depth optimum, whose winner is
also redrawn (the candidate selection). Each keeps the order of its draws: the shipped pages' numbers are
those draws.

The sums are computed **exactly** (:func:`weighted_sums`): each row of values is rounded to a dyadic grid fine
enough that every partial sum is a float64 integer multiple of the grid, so the order in which BLAS adds (it
differs between CPU kernels and thread counts) cannot change a bit. Before, a float32 product made the third
decimal of some intervals differ from one machine to the next; now a page regenerates byte-identical anywhere.
"""

from __future__ import annotations

import numpy as np

__all__ = ["context_weights", "contrast_bootstrap", "replicates", "seed_counts", "weighted_sums"]

def context_weights(rng: np.random.Generator, contexts: int, n: int) -> np.ndarray:
    """``(contexts, n)`` multinomial counts: replicate ``r`` draws ``contexts`` contexts with replacement.

    Examples
    --------
    >>> w = context_weights(np.random.default_rng(0), 8, 3)
    >>> w.shape, w.sum(axis=0).tolist()
    ((8, 3), [8.0, 8.0, 8.0])
    """
    return np.stack([np.bincount(rng.integers(contexts, size=contexts), minlength=contexts) for _ in range(n)],
                    axis=1).astype(np.float64)


def seed_counts(rng: np.random.Generator, seeds: int, n: int) -> np.ndarray:
    """``(seeds, n)`` counts: replicate ``r`` draws ``seeds`` seeds with replacement.

    Examples
    --------
    >>> seed_counts(np.random.default_rng(0), 3, 4).sum(axis=0).tolist()
    [3.0, 3.0, 3.0, 3.0]
    """
    draws = rng.integers(seeds, size=(n, seeds))
    return np.stack([np.bincount(d, minlength=seeds) for d in draws], axis=1).astype(np.float64)


def weighted_sums(values: np.ndarray, weights: np.ndarray, *, headroom: int = 1, block: int = 1) -> np.ndarray:
    """``values @ weights`` (rows, n), exact: the same bits whatever the order of the additions.

    Each finite row is rounded to the grid ``2**-e`` with ``e`` the largest that keeps
    ``max|row| · max column sum of weights · headroom`` below ``2**53``: every product and partial sum is then
    an integer multiple of ``2**-e`` that float64 holds exactly, so BLAS's order of summation is immaterial.
    ``headroom`` leaves room for a further exact sum of the results (e.g. over ``headroom`` seeds), of rows that
    share a grid: each run of ``block`` consecutive rows shares the grid of its largest value. The rounding
    moves a value by at most ``2**-(e+1)``, so a sum by at most ``W · 2**-(e+1) ≈ W · headroom · 2**-53`` times
    its largest possible value (``W`` the weights' largest column sum: 2^16 contexts give a relative 1e-11, far
    below any SE the pages print). A row with a non-finite value keeps its plain product. ``weights`` must hold
    non-negative integers.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> values, weights = rng.random((3, 1000)), context_weights(rng, 1000, 4)
    >>> order = rng.permutation(1000)
    >>> np.array_equal(weighted_sums(values, weights), weighted_sums(values[:, order], weights[order]))
    True
    >>> bool(np.allclose(weighted_sums(values, weights), values @ weights, rtol=1e-14))
    True
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    out = np.empty((values.shape[0], weights.shape[1]))
    finite = np.all(np.isfinite(values), axis=1)
    if (~finite).any():
        with np.errstate(invalid="ignore", over="ignore"):
            out[~finite] = values[~finite] @ weights
    if finite.any():
        total = float(weights.sum(axis=0).max()) * int(headroom)
        largest = np.where(finite, np.abs(np.where(np.isfinite(values), values, 0.0)).max(axis=1), 0.0)
        largest = np.repeat(largest.reshape(-1, block).max(axis=1), block)[finite]
        exact = 2.0 ** (np.finfo(np.float64).nmant + 1)  # float64 holds every integer up to 2**53
        room = np.floor(np.log2(exact / (np.maximum(largest, np.finfo(float).tiny) * max(total, 1.0))))
        scale = np.exp2(np.minimum(room, 1000.0))[:, None]
        out[finite] = (np.rint(values[finite] * scale) @ weights) / scale
    return out


def replicates(cube: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """Bootstrap means of ``cube`` (items, seeds, contexts) over seeds and contexts: (n, items).

    Each replicate draws its seeds, then its contexts (with replacement), in that order (the draws of the
    shipped pages); the weighted sums are exact (:func:`weighted_sums`).

    Examples
    --------
    >>> cube = np.random.default_rng(1).random((2, 3, 50))
    >>> boot = replicates(cube, np.random.default_rng(0), 200)
    >>> boot.shape, bool(abs(boot.mean(axis=0) - cube.mean(axis=(1, 2))).max() < 0.05)
    ((200, 2), True)
    """
    items, seeds, contexts = cube.shape
    drawn = np.empty((seeds, n))
    weights = np.empty((contexts, n))
    for r in range(n):
        drawn[:, r] = np.bincount(rng.integers(seeds, size=seeds), minlength=seeds)
        weights[:, r] = np.bincount(rng.integers(contexts, size=contexts), minlength=contexts)
    # float64 throughout: a certificate between two equal functions has an SE of round-off size
    per_seed = weighted_sums(cube.reshape(items * seeds, contexts), weights, headroom=seeds,
                             block=seeds).reshape(items, seeds, n)
    return np.einsum("isn,sn->ni", per_seed, drawn) / (seeds * contexts)


def contrast_bootstrap(cells: dict, depths, seeds, rng: np.random.Generator, n: int) -> dict:
    """Point values and bootstrap replicates of the per-depth optimum, as the mean over seeds and the best seed.

    ``cells[(depth, seed)] = (errors, select, select_se, winner)``: the report-set squared errors of the cell's
    eligible candidates (candidates × contexts), their selection-set losses and SEs, and the stored winner.
    Each replicate redraws **the report contexts** (one multinomial draw, shared by every depth and seed: the
    report set is shared, so depths stay paired), **the seeds** (with replacement, the same draw at every
    depth) and **the candidate selection**: the cells store only the selection set's mean per candidate, not
    its per-context errors, so the candidates' selection losses are redrawn jointly normal around their stored
    means, with the covariance of the same models' per-context errors on the report set (an independent set of
    the same size and distribution: candidates evaluated on one set are strongly correlated, and their
    differences, not their levels, decide the choice), and the winner is the least. The best seed of a depth
    is the drawn seed whose winner has the least (redrawn) selection loss: it is chosen on the selection set,
    independent of the report set it is measured on.

    Returns ``{"mean over seeds": (point (depths,), replicates (n, depths)), "best seed": (...),
    "best seeds": seeds chosen at each depth (point)}``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> cells = {(L, s): (rng.random((2, 16)) / L, np.array([1.0 / L, 2.0]), np.array([0.01, 0.01]), 0)
    ...          for L in (1, 2) for s in (0, 1)}
    >>> out = contrast_bootstrap(cells, (1, 2), (0, 1), rng, 50)
    >>> out["mean over seeds"][1].shape, len(out["best seeds"])
    ((50, 2), 2)
    """
    depths, seeds = tuple(depths), tuple(seeds)
    keys = [(L, s) for L in depths for s in seeds]
    blocks = [np.asarray(cells[key][0], dtype=np.float64) for key in keys]
    contexts = blocks[0].shape[1]
    weights = context_weights(rng, contexts, n)
    # every candidate's report loss in every replicate (exact sums: the same bits on every machine)
    report = weighted_sums(np.concatenate(blocks), weights) / contexts
    value = np.empty((len(depths), len(seeds), n))
    selected = np.empty_like(value)
    point = np.empty((len(depths), len(seeds)))
    point_select = np.empty_like(point)
    row = 0
    for key, block in zip(keys, blocks):
        _, select, select_se, winner = cells[key]
        i, j = depths.index(key[0]), seeds.index(key[1])
        select = np.where(np.isfinite(select), select, np.inf)
        drawn = select[:, None] + _correlated_noise(block, rng, n)
        choice = np.argmin(drawn, axis=0)
        value[i, j] = report[row + choice, np.arange(n)]
        selected[i, j] = drawn[choice, np.arange(n)]
        point[i, j] = block[winner].mean()
        point_select[i, j] = select[winner]
        row += len(block)
    counts = seed_counts(rng, len(seeds), n)
    mean = np.einsum("dsn,sn->nd", value, counts / len(seeds))
    masked = np.where(counts[None] > 0, selected, np.inf)
    best = np.take_along_axis(value, np.argmin(masked, axis=1)[:, None, :], axis=1)[:, 0, :].T
    chosen = np.argmin(point_select, axis=1)
    return {"mean over seeds": (point.mean(axis=1), mean),
            "best seed": (point[np.arange(len(depths)), chosen], best),
            "best seeds": tuple(seeds[c] for c in chosen)}


def _correlated_noise(block: np.ndarray, rng: np.random.Generator, n: int) -> np.ndarray:
    """``n`` draws (candidates × n) of the sampling error of the candidates' mean losses on a set like ``block``'s.

    Normal with the covariance of the candidates' per-context errors ``block`` over its contexts, divided by
    their number (the covariance of means); a candidate with non-finite errors gets none.
    """
    finite = np.all(np.isfinite(block), axis=1)
    out = np.zeros((block.shape[0], n))
    if finite.sum() == 0:
        return out
    cov = np.atleast_2d(np.cov(block[finite])) / block.shape[1]
    values, vectors = np.linalg.eigh(cov)
    # an eigenvector's sign is LAPACK's choice, which differs between CPU kernels: fix it (largest entry > 0) so
    # that a seed gives the same noise on every machine
    vectors = vectors * np.where(vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])] < 0, -1.0, 1.0)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    out[finite] = root @ rng.standard_normal((root.shape[1], n))
    return out
