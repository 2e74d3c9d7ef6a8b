"""The oracle bounds of softmax heads as the experiments layer uses them: keyed, independently seeded, cached.

The Monte Carlo lives in :mod:`theory.softmax_bounds`; this module fixes one key per
quantity (:func:`bound_key`), derives each bound's own random stream from its key
(:func:`bound_stream`), and caches the values (:mod:`numerics.experiments.cache`), so that
every section of a report shows one value per bound.
"""

from __future__ import annotations

import numpy as np

from theory.softmax_bounds import (  # noqa: F401 (re-exported: the names the experiments layer uses)
    SIMILARITIES,
    HeadBound,
    default_temperatures,
    head_outputs,
    softmax_head_bound,
)

__all__ = [
    "HeadBound", "SIMILARITIES", "BOUND_HEADS", "BOUND_SEED", "softmax_head_bound", "head_outputs",
    "default_temperatures", "bound_key", "bound_stream", "compute_bound", "head_bounds", "softmax_bounds_key",
    "compute_softmax_bounds", "cached_softmax_bounds",
]


#: heads of the mixture bound wherever the experiments layer asks for one (one value per quantity)
BOUND_HEADS = 64
#: seed from which every bound's own stream is derived (with the bound's key, so bounds are independent draws)
BOUND_SEED = 20261015


def bound_key(a: float, b: float, d: int, P: int, k: int, *, n_contexts: int, similarity: str = "cosine",
              width: int | None = None, heads: int = BOUND_HEADS, seed: int = BOUND_SEED) -> dict:
    """The cache key of one oracle bound of a power-law spectrum (eq. 2): every input that changes its value.

    References
    ----------
    Paper eqs. (2), (6), (60).

    Examples
    --------
    >>> sorted(bound_key(0, 0, 16, 64, 2, n_contexts=1024))[:4]
    ['P', 'a', 'b', 'd']
    """
    return {"a": float(a), "b": float(b), "d": int(d), "P": int(P), "k": int(k), "similarity": similarity,
            "width": None if width is None else int(width), "heads": int(heads), "n_contexts": int(n_contexts),
            "seed": int(seed)}


def bound_stream(key: dict) -> np.random.Generator:
    """The random stream of the bound with ``key``, derived from the whole key: the same quantity
    gets the same draws, two different ones (spectrum, size, similarity) independent draws.

    Examples
    --------
    >>> k1, k2 = bound_key(0, 0, 8, 16, 2, n_contexts=64), bound_key(0, 0.5, 8, 16, 2, n_contexts=64)
    >>> bound_stream(k1).random() == bound_stream(k1).random() != bound_stream(k2).random()
    True
    """
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode("utf-8")).digest()
    return np.random.default_rng(np.random.SeedSequence([int(key["seed"]), int.from_bytes(digest[:8], "little")]))


def compute_bound(key: dict) -> dict:
    """:func:`softmax_head_bound` of ``key`` (from :func:`bound_key`) as a JSON-able dict.

    References
    ----------
    Paper eqs. (6), (12), (60).

    Examples
    --------
    >>> out = compute_bound(bound_key(0, 0, 4, 8, 2, n_contexts=64, heads=4))
    >>> out["single_head_loss"] >= out["mixture_loss"] - 4 * out["mixture_standard_error"]
    True
    """
    from theory import PowerLawSpectrum

    bound = softmax_head_bound(PowerLawSpectrum(key["a"], key["b"], key["d"]), key["P"], key["k"],
                               similarity=key["similarity"], width=key["width"], heads=key["heads"],
                               n_contexts=key["n_contexts"], rng=bound_stream(key))
    return bound.to_dict()


def head_bounds(keys, cache_dir=None, *, workers: int = 1, progress: bool | None = False) -> list[HeadBound]:
    """The bounds of ``keys`` (from :func:`bound_key`), cached in ``cache_dir`` (:mod:`numerics.experiments.cache`).

    References
    ----------
    Paper eqs. (6), (12), (60).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     key = bound_key(0, 0, 4, 8, 2, n_contexts=64, heads=4)
    ...     first, again = head_bounds([key], tmp)[0], head_bounds([key], tmp)[0]
    >>> first == again
    True
    """
    return _cached("oracle-bound", compute_bound, HeadBound.from_dict, keys, cache_dir, workers, progress,
                   "oracle bounds")


def _cached(kind, compute, from_dict, keys, cache_dir, workers, progress, desc) -> list:
    from .cache import cached_many

    values = cached_many(cache_dir, kind, list(keys), compute, workers=workers, progress=progress, desc=desc)
    return [from_dict(v) for v in values]


def softmax_bounds_key(a: float, b: float, d: int, P: int, k: int, *, depths=(1,), n_contexts: int, n_seeds: int = 4,
                       similarity: str = "cosine", width: int | None = None, norm: str = "layer",
                       seed: int = BOUND_SEED) -> dict:
    """The cache key of one :func:`theory.softmax_bounds.softmax_bounds` evaluation (every input of its value).

    Examples
    --------
    >>> softmax_bounds_key(0, 0, 16, 64, 2, n_contexts=1024)["depths"]
    [1]
    """
    return {"a": float(a), "b": float(b), "d": int(d), "P": int(P), "k": int(k),
            "depths": sorted({1, *(int(L) for L in depths)}), "n_contexts": int(n_contexts), "n_seeds": int(n_seeds),
            "similarity": similarity, "width": None if width is None else int(width), "norm": norm, "seed": int(seed),
            "se": "max(between, within)"}


def compute_softmax_bounds(key: dict) -> dict:
    """:func:`theory.softmax_bounds.softmax_bounds` of ``key`` (own stream, :func:`bound_stream`) as a dict.

    Examples
    --------
    >>> out = compute_softmax_bounds(softmax_bounds_key(0, 0, 4, 8, 2, n_contexts=64, n_seeds=2))
    >>> sorted(out)[:3]
    ['P', 'average', 'average_se']
    """
    from theory import PowerLawSpectrum
    from theory.softmax_bounds import softmax_bounds

    return softmax_bounds(PowerLawSpectrum(key["a"], key["b"], key["d"]), key["P"], key["k"], depths=key["depths"],
                          similarity=key["similarity"], width=key["width"], norm=key["norm"],
                          n_contexts=key["n_contexts"], n_seeds=key["n_seeds"], rng=bound_stream(key)).to_dict()


def cached_softmax_bounds(keys, cache_dir=None, *, workers: int = 1, progress: bool | None = False) -> list:
    """:class:`theory.softmax_bounds.SoftmaxBounds` of ``keys`` (from :func:`softmax_bounds_key`), cached.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     key = softmax_bounds_key(0, 0, 4, 8, 2, n_contexts=64, n_seeds=2)
    ...     cached_softmax_bounds([key], tmp)[0] == cached_softmax_bounds([key], tmp)[0]
    True
    """
    from theory.softmax_bounds import SoftmaxBounds

    return _cached("softmax-bounds", compute_softmax_bounds, SoftmaxBounds.from_dict, keys, cache_dir, workers,
                   progress, "softmax bounds")
