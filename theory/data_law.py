"""The data law of the paper, written once (eqs. (1)-(6)).

Per context:

1. a Haar-random rotation ``O`` (eq. 3), ``Σ = O diag(λ) Oᵀ``, ``Ω = O diag(ω) Oᵀ``;
2. a teacher ``β ~ N(0, Ω)`` and inputs ``x_1..x_P, x_test ~ iid N(0, Σ)`` (eq. 4),
   drawn in the eigenbasis as ``x = O (√λ ⊙ z)``, ``β = O (√ω ⊙ w)`` with z, w
   standard normal (:func:`eigenbasis_normal`, :func:`rotate`);
3. labels ``y_i = βᵀx_i`` without noise (eq. 1, :func:`teacher_labels`);
4. the top-k set ``S_k`` of the context inputs most similar to the query -- by
   cosine (the task, eq. 6) or by inner product (eq. 44) -- and the mean over it
   (:func:`top_k_indices`, :func:`select_top_k`, :func:`top_k_mean`).

The samplers built on these primitives -- :func:`numerics.tasks.sample` (training
batches), :func:`numerics.experiments.bounds.softmax_head_bound` (oracle heads) and
:func:`theory.floor.linear_floor_monte_carlo` (the linear floor) -- each consume
their generator in their own documented order; the primitives draw exactly what
they are asked for, so a sampler's stream does not depend on how it is factored.
Cosines and inner products are invariant under the common rotation ``O``, which
is why the last two sample in the eigenbasis (``O = I``) without loss.

Haar rotations are drawn by a QR decomposition of iid Gaussian matrices,
``G = Q R``, with the columns of ``Q`` multiplied by ``sign(diag R)``; that sign
fix makes ``Q`` exactly Haar distributed (Mezzadri 2007), which a plain QR is
not. This is the cheapest exact method available in numpy: one LAPACK
``geqrf`` + ``orgqr`` per matrix, ``O(d³)``, batched over contexts.
"""

from __future__ import annotations

import numpy as np

from .validation import check_choice, check_dtype, check_generator, check_positive_int, check_top_k

__all__ = [
    "RANKINGS",
    "STREAMS",
    "check_stream",
    "householder_haar",
    "haar_orthonormal",
    "standard_normal",
    "haar_rotations",
    "eigenbasis_normal",
    "rotate",
    "teacher_labels",
    "similarity_terms",
    "cosine_similarity",
    "ranking_scores",
    "select_top_k",
    "top_k_indices",
    "top_k_mask",
    "top_k_mean",
]

#: how context tokens are ranked against the query: ``'cosine'`` (the task, eq. 6) or ``'inner_product'`` (eq. 44)
RANKINGS = ("cosine", "inner_product")


def haar_orthonormal(n: int, d: int, rng: np.random.Generator, *, batch_size: int | None = None, dtype=np.float64) -> np.ndarray:
    """Haar-distributed ``n x d`` matrices with orthonormal columns (``n >= d``), by QR with the sign fix.

    ``Q`` of ``G = Q R``, ``G`` with iid N(0, 1) entries, times ``diag(sign(diag R))``
    (a zero diagonal entry, of probability zero, keeps its column). For ``n = d``
    this is the Haar measure on O(d) (eq. 3); for ``n > d`` the uniform law on
    orthonormal d-frames in R^n (an orthonormal ``W_x``, eq. 8).

    Parameters
    ----------
    n, d : int
        Rows and columns, ``n >= d >= 1``.
    rng : numpy.random.Generator
        Consumed: one ``standard_normal`` draw of shape ``(batch_size, n, d)`` (or ``(n, d)``).
    batch_size : int, optional
        Number of independent matrices; ``None`` for a single ``(n, d)`` matrix.
    dtype : {numpy.float64, numpy.float32}

    Returns
    -------
    numpy.ndarray, shape (batch_size, n, d) or (n, d)

    References
    ----------
    Paper eqs. (3), (8); F. Mezzadri, "How to generate random matrices from the
    classical compact groups", Notices AMS 54 (2007).

    Examples
    --------
    >>> W = haar_orthonormal(5, 3, np.random.default_rng(0))
    >>> W.shape, bool(np.allclose(W.T @ W, np.eye(3)))
    ((5, 3), True)
    """
    n = check_positive_int("n", n)
    d = check_positive_int("d", d)
    if n < d:
        raise ValueError(f"n must be >= d (orthonormal columns); got n={n}, d={d}")
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    shape = (n, d) if batch_size is None else (check_positive_int("batch_size", batch_size), n, d)
    q, r = np.linalg.qr(rng.standard_normal(shape, dtype=dtype))
    signs = np.where(np.diagonal(r, axis1=-2, axis2=-1) < 0, -1.0, 1.0).astype(dtype)
    return q * signs[..., None, :]


#: from this d on, :func:`haar_rotations` calls LAPACK's geqrf/orgqr once per matrix (measured on one core:
#: 33 against 71 ms for 128 float32 matrices of 128 x 128, 2.2 against 4.9 ms at 32 x 32; numpy's stacked
#: ``qr`` is faster only for small matrices, 0.27 against 0.42 ms for 64 of 16 x 16)
LAPACK_QR_MIN_D = 32


def haar_rotations(d: int, batch_size: int, rng: np.random.Generator, dtype=np.float64, *, stream: int = 1) -> np.ndarray:
    """Draw ``batch_size`` independent Haar-random orthogonal ``d x d`` matrices (one per context).

    QR of iid Gaussian matrices with the sign fix ``Q ← Q diag(sign(diag R))``,
    which makes the law of ``Q`` exactly the Haar measure on O(d)
    (:func:`~theory.data_law.haar_orthonormal` with ``n = d``). For ``d <`` ``theory.data_law.LAPACK_QR_MIN_D`` (32)
    this is ``haar_orthonormal(d, d, rng, batch_size=batch_size)``; from there on LAPACK's
    ``geqrf``/``orgqr`` factor each drawn matrix in place (its transpose, a Gaussian matrix too),
    which is faster than numpy's stacked ``qr`` at these sizes. Both are exactly Haar.

    ``stream=2`` or ``3`` (the sampler streams 2 and 3 of :func:`numerics.tasks.sample`): Stewart's product of
    Householder reflections of fresh Gaussian vectors (:func:`householder_haar`), which is the
    sign-fixed Householder QR of a Gaussian matrix with the factorisation skipped -- exactly Haar too,
    written over the whole batch at once; the law is the same, the numbers are not.

    Parameters
    ----------
    d, batch_size : int
    rng : numpy.random.Generator
        Consumed: one ``standard_normal`` draw of shape ``(batch_size, d, d)`` (stream 1) or
        ``(d(d+1)/2, batch_size)`` with ``stream=2`` or ``3`` (of that stream's :func:`standard_normal`).
    dtype : {numpy.float64, numpy.float32}
    stream : {1, 2, 3}, default 1
        Which construction (both exactly Haar; see above).

    Returns
    -------
    numpy.ndarray, shape (batch_size, d, d)

    References
    ----------
    Paper eq. (3); F. Mezzadri, "How to generate random matrices from the classical
    compact groups", Notices AMS 54 (2007).

    Examples
    --------
    >>> O = haar_rotations(3, 2, np.random.default_rng(0))
    >>> np.allclose(O @ np.swapaxes(O, 1, 2), np.eye(3))
    True
    >>> O = haar_rotations(40, 2, np.random.default_rng(0), dtype=np.float32)
    >>> O.dtype, bool(np.allclose(O @ np.swapaxes(O, 1, 2), np.eye(40), atol=1e-5))
    (dtype('float32'), True)
    """
    d = check_positive_int("d", d)
    stream = check_stream(stream)
    if stream >= 2:
        batch_size = check_positive_int("batch_size", batch_size)
        dtype = check_dtype(dtype)
        return householder_haar(standard_normal(rng, (d * (d + 1) // 2, batch_size), dtype, stream=stream), d)
    if d < LAPACK_QR_MIN_D:
        return haar_orthonormal(d, d, rng, batch_size=batch_size, dtype=dtype)
    from scipy.linalg import lapack

    batch_size = check_positive_int("batch_size", batch_size)
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    gaussian = rng.standard_normal((batch_size, d, d), dtype=dtype)
    geqrf, orgqr = lapack.get_lapack_funcs(("geqrf", "orgqr"), (gaussian,))
    lwork = int(max(geqrf(gaussian[0].T, lwork=-1)[-2][0], orgqr(gaussian[0].T, np.ones(d, dtype), lwork=-1)[-2][0]))
    out = np.empty((batch_size, d, d), dtype=dtype)
    for b in range(batch_size):
        # gaussian[b].T is Fortran-ordered: LAPACK factors it in place, without a copy
        factors, tau, _, info = geqrf(gaussian[b].T, lwork=lwork, overwrite_a=True)
        signs = np.where(np.diagonal(factors) < 0, -1.0, 1.0).astype(dtype)
        q, _, info2 = orgqr(factors, tau, lwork=lwork, overwrite_a=True)
        if info != 0 or info2 != 0:  # pragma: no cover - LAPACK reports only bad arguments here
            raise RuntimeError(f"LAPACK QR failed (geqrf info={info}, orgqr info={info2})")
        np.multiply(q, signs, out=out[b])
    return out


#: the sampler streams: 1 = the original draws (bit-for-bit), 2 = the faster draws of the same law,
#: 3 = stream 2 with the Box–Muller logarithm in float32 and one Gaussian draw per batch
STREAMS = (1, 2, 3)


def check_stream(stream: object) -> int:
    """``stream`` as an int in :data:`STREAMS`, else ``ValueError`` naming it.

    References
    ----------
    Paper eqs. (1)-(6) (the law every stream draws).

    Examples
    --------
    >>> check_stream(2)
    2
    >>> check_stream(4)
    Traceback (most recent call last):
    ...
    ValueError: stream must be one of (1, 2, 3); got 4
    """
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or int(stream) not in STREAMS:
        raise ValueError(f"stream must be one of {STREAMS}; got {stream!r}")
    return int(stream)


def householder_haar(columns: np.ndarray, d: int) -> np.ndarray:
    """Haar-random orthogonal ``d x d`` matrices as products of Householder reflections (Stewart 1980).

    ``columns`` holds, for every context, iid N(0, 1) vectors ``x_j`` of lengths ``d, d−1, …, 1``
    stacked (``d(d+1)/2`` numbers). With ``H_j`` the reflection of ``R^{d−j}`` (embedded in the
    last ``d − j`` coordinates) taking ``x_j`` to ``s_j |x_j| e_1``, ``s_j = −sign(x_j[0])``, and
    ``s_{d−1} = sign(x_{d−1})``, the result is ``Q = H_0 H_1 … H_{d−2} diag(s)``.

    Why this is exactly Haar: it is the Householder QR of a Gaussian matrix ``G`` with the sign fix
    ``Q diag(sign(diag R))`` (:func:`haar_orthonormal`, Mezzadri 2007) with one step skipped. In that QR
    the part of column ``j`` of ``H_{j−1} … H_0 G`` on and below the diagonal is ``x_j``; since the
    ``H_i`` (i < j) are orthogonal and depend only on the earlier columns, ``x_j`` is iid N(0, 1) and
    independent of them. So drawing the ``x_j`` directly gives the same joint law of reflections and
    signs, hence of ``Q``, without ever factorising ``G`` (half the work, ``d(d+1)/2`` instead of
    ``d²`` Gaussian numbers). The batch is the last (contiguous) axis: each of the ``d − 1`` steps is
    a few vectorised passes over all contexts instead of LAPACK calls per matrix.

    Parameters
    ----------
    columns : numpy.ndarray, shape (d(d+1)/2, batch_size)
        iid N(0, 1): rows ``[o_j, o_j + d − j)`` with ``o_j = j d − j(j−1)/2`` are ``x_j``.
    d : int

    Returns
    -------
    numpy.ndarray, shape (batch_size, d, d), C-contiguous, of ``columns``' dtype

    References
    ----------
    Paper eq. (3); G. W. Stewart, "The efficient generation of random orthogonal matrices with an
    application to condition estimators", SIAM J. Numer. Anal. 17 (1980); F. Mezzadri, Notices AMS 54 (2007).

    Examples
    --------
    >>> q = householder_haar(np.random.default_rng(0).standard_normal((10, 3)), 4)
    >>> q.shape, bool(np.allclose(q @ np.swapaxes(q, 1, 2), np.eye(4)))
    ((3, 4, 4), True)
    """
    d = check_positive_int("d", d)
    if columns.ndim != 2 or columns.shape[0] != d * (d + 1) // 2:
        raise ValueError(f"columns must have shape (d(d+1)/2, batch_size) = ({d * (d + 1) // 2}, B); got {columns.shape}")
    batch_size = columns.shape[1]
    one = columns.dtype.type(1)
    q = np.zeros((d, d, batch_size), dtype=columns.dtype)
    last = columns[-1]
    q[d - 1, d - 1] = np.where(last < 0, -one, one)
    for j in range(d - 2, -1, -1):  # Q ← H_j Q, innermost first; Q is nonzero only in [j:, j:]
        offset = j * d - j * (j - 1) // 2
        x = columns[offset : offset + d - j]
        norm = np.sqrt(np.einsum("ib,ib->b", x, x))
        s = np.where(x[0] < 0, one, -one)  # the sign LAPACK picks (no cancellation in v)
        v = x.copy()
        v[0] -= s * norm
        v *= 1.0 / np.sqrt(2.0 * norm * (norm + np.abs(x[0])))  # |x − s|x| e_1|² = 2|x|(|x| + |x_0|)
        q[j, j] = s
        sub = q[j:, j:, :]
        w = (v[:, None, :] * sub).sum(axis=0)
        w *= 2
        sub -= v[:, None, :] * w[None, :, :]
    return np.ascontiguousarray(np.moveaxis(q, 2, 0))


def eigenbasis_normal(rng: np.random.Generator, shape: tuple, variances: object, dtype=np.float64) -> np.ndarray:
    """Draw ``√variances ⊙ z``, z iid standard normal of ``shape``: N(0, diag(variances)) in the eigenbasis.

    With ``variances = λ`` these are inputs ``x ~ N(0, Σ)`` before the rotation
    (``x = O (√λ ⊙ z)``), with ``variances = ω`` the teacher ``β`` (eq. 4). The
    draw is made in ``dtype`` and scaled in ``dtype``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Consumed: one :func:`standard_normal` draw of ``shape`` in ``dtype``.
    shape : tuple of int
        Output shape; its last axis has the length of ``variances``.
    variances : array_like, shape (d,)
        Eigenvalues (λ or ω).
    dtype : {numpy.float64, numpy.float32}

    Returns
    -------
    numpy.ndarray of ``shape``

    References
    ----------
    Paper eqs. (2)-(4).

    Examples
    --------
    >>> x = eigenbasis_normal(np.random.default_rng(0), (20000, 2), [4.0, 1.0])
    >>> x.var(axis=0).round(1).tolist()
    [4.0, 1.0]
    """
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    draws = standard_normal(rng, shape, dtype)
    scale = np.sqrt(np.asarray(variances, dtype=np.float64))
    if not np.all(scale == 1.0):  # unit variances (flat spectra at c = 1): nothing to scale
        draws *= scale.astype(dtype)
    return draws


#: pairs per block of the float32 Box–Muller draws
_NORMAL_BLOCK = 32768


def standard_normal(rng: np.random.Generator, shape: tuple, dtype=np.float64, *, stream: int = 1) -> np.ndarray:
    """iid N(0, 1) draws of ``shape`` in ``dtype``: numpy's ziggurat in float64, Box–Muller in float32.

    float64 (the Monte Carlo of bounds and floors): ``rng.standard_normal(shape)``. float32 (the
    training data): the Box–Muller transform ``(R cos Θ, R sin Θ)``, ``R = sqrt(−2 log(1 − U))``
    with ``U`` a float64 uniform (53 bits: the radius is exact to 8.5σ), ``Θ = 2π V`` with ``V``
    a float32 uniform — 2.6× faster than numpy's float32 ziggurat on one core (3.0 against 7.9
    ms per 10⁶ draws, measured), which made the sampler half of a training step. Drawn in
    blocks of ``2 · 32768`` numbers (cache-sized); each block consumes its float64 then its
    float32 uniforms of ``rng``.

    ``stream=2`` (float32 only; float64 is the ziggurat in every stream): the same transform with the
    same uniforms, computed in place with reused buffers and the square root taken in float32
    after ``−2 log(1 − U)`` is rounded to float32 — the same law, different low bits.

    ``stream=3``: as stream 2, but ``1 − U`` (exact in float64, at least ``2⁻⁵³``) is rounded to float32
    before the logarithm, which is then taken in float32. Floating point keeps its relative precision
    near 0, so the radius is still exact to 8.5σ and ``R²`` is off by float32 round-off only; the float64
    logarithm was the dearest pass of the transform.

    Parameters
    ----------
    rng : numpy.random.Generator
    shape : tuple of int
    dtype : {numpy.float64, numpy.float32}
    stream : {1, 2, 3}, default 1

    Returns
    -------
    numpy.ndarray of ``shape``, C-contiguous, writeable

    References
    ----------
    Paper eqs. (2)-(4) (the Gaussian law drawn); G. E. P. Box & M. E. Muller, "A note on the
    generation of random normal deviates", Ann. Math. Statist. 29 (1958).

    Examples
    --------
    >>> z = standard_normal(np.random.default_rng(0), (200000,), np.float32)
    >>> z.dtype, round(float(z.mean()), 2), round(float(z.var()), 2)
    (dtype('float32'), 0.0, 1.0)
    """
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    stream = check_stream(stream)
    if dtype is not np.float32:
        return rng.standard_normal(shape, dtype=dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if stream >= 2:
        return _box_muller_in_place(rng, n, float32_log=stream == 3).reshape(shape)
    out = np.empty(n + (n & 1), dtype=np.float32)
    for start in range(0, out.size, 2 * _NORMAL_BLOCK):  # blocks that stay in cache
        block = out[start : start + 2 * _NORMAL_BLOCK]
        half = block.size // 2
        radius = np.sqrt(-2.0 * np.log1p(-rng.random(half))).astype(np.float32)
        angle = rng.random(half, dtype=np.float32)
        angle *= np.float32(2.0 * np.pi)
        np.cos(angle, out=block[:half])
        np.sin(angle, out=block[half:])
        block[:half] *= radius
        block[half:] *= radius
    return out[:n].reshape(shape)


def _box_muller_in_place(rng: np.random.Generator, n: int, *, float32_log: bool = False) -> np.ndarray:
    """``n`` float32 N(0, 1) draws, stream 2 (or, ``float32_log``, 3) of :func:`standard_normal` (no temporaries)."""
    out = np.empty(n + (n & 1), dtype=np.float32)
    uniform = np.empty(min(_NORMAL_BLOCK, out.size // 2))
    radius = np.empty(uniform.size, dtype=np.float32)
    for start in range(0, out.size, 2 * _NORMAL_BLOCK):
        block = out[start : start + 2 * _NORMAL_BLOCK]
        half = block.size // 2
        u, r, angle = uniform[:half], radius[:half], block[half:]
        rng.random(out=u)
        if float32_log:
            np.subtract(1.0, u, out=r, casting="same_kind")  # 1 − U rounded to float32: relative error 2⁻²⁴
            np.log(r, out=r)
            r *= np.float32(-2.0)
        else:
            np.negative(u, out=u)
            np.log1p(u, out=u)
            np.multiply(u, -2.0, out=r, casting="same_kind")
        np.sqrt(r, out=r)  # R = sqrt(−2 log(1 − U)), U float64
        rng.random(out=angle, dtype=np.float32)
        angle *= np.float32(2.0 * np.pi)
        np.cos(angle, out=block[:half])
        np.sin(angle, out=angle)
        block[:half] *= r
        angle *= r
    return out[:n]


def rotate(rotation: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """``O v`` for every vector of each context: ``vectors`` of shape (B, d) or (B, n, d), ``rotation`` (B, d, d).

    Takes eigenbasis draws to the rotated frame of eq. (3) (``x = O (√λ ⊙ z)``).

    References
    ----------
    Paper eqs. (3)-(4).

    Examples
    --------
    >>> quarter = np.array([[[0.0, -1.0], [1.0, 0.0]]])
    >>> rotate(quarter, np.array([[1.0, 0.0]])).tolist(), rotate(quarter, np.array([[[1.0, 0.0]]])).tolist()
    ([[0.0, 1.0]], [[[0.0, 1.0]]])
    """
    if vectors.ndim == 2:
        return (rotation @ vectors[:, :, None])[..., 0]
    return vectors @ np.swapaxes(rotation, -1, -2)


def teacher_labels(context_x: np.ndarray, teacher: np.ndarray) -> np.ndarray:
    """Noise-free labels ``y_i = βᵀx_i``: ``context_x`` (B, P, d), ``teacher`` (B, d) -> (B, P).

    References
    ----------
    Paper eq. (1).

    Examples
    --------
    >>> teacher_labels(np.array([[[1.0, 2.0], [0.0, 1.0]]]), np.array([[3.0, -1.0]])).tolist()
    [[1.0, -1.0]]
    """
    return (context_x @ teacher[:, :, None])[..., 0]


def similarity_terms(context_x: np.ndarray, test_x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inner products ``x_iᵀx_test`` (B, P), squared norms ``|x_i|²`` (B, P) and ``|x_test|²`` (B,).

    Every similarity of the package is formed from these, in the input dtype.

    References
    ----------
    Paper eqs. (6), (44).

    Examples
    --------
    >>> dots, context_sq, test_sq = similarity_terms(np.array([[[3.0, 4.0]]]), np.array([[1.0, 0.0]]))
    >>> dots.tolist(), context_sq.tolist(), test_sq.tolist()
    ([[3.0]], [[25.0]], [1.0])
    """
    dots = (context_x @ test_x[:, :, None])[..., 0]
    context_sq = np.einsum("bpd,bpd->bp", context_x, context_x)
    test_sq = np.einsum("bd,bd->b", test_x, test_x)
    return dots, context_sq, test_sq


def cosine_similarity(context_x: np.ndarray, test_x: np.ndarray) -> np.ndarray:
    """``cos(x_i, x_test)`` for every context input, shape (B, P).

    References
    ----------
    Paper eq. (6).

    Examples
    --------
    >>> cosine_similarity(np.array([[[1.0, 0.0], [1.0, 1.0]]]), np.array([[2.0, 0.0]])).round(4).tolist()
    [[1.0, 0.7071]]
    """
    dots, context_sq, test_sq = similarity_terms(context_x, test_x)
    return dots / np.sqrt(context_sq * test_sq[:, None])


def ranking_scores(context_x: np.ndarray, queries: np.ndarray, ranking: str = "cosine") -> np.ndarray:
    """Scores that order the context tokens as the ranking does, for m queries per context: (B, m, P).

    ``x_iᵀq`` for ``'inner_product'`` (eq. 44); ``x_iᵀq / |x_i|`` for
    ``'cosine'`` -- the cosine times ``|q|``, which is common to a query's
    scores and so leaves its ranking (eq. 6) unchanged.

    Parameters
    ----------
    context_x : numpy.ndarray, shape (B, P, d)
    queries : numpy.ndarray, shape (B, m, d)
    ranking : {'cosine', 'inner_product'}

    Returns
    -------
    numpy.ndarray, shape (B, m, P)

    References
    ----------
    Paper eqs. (6), (44).

    Examples
    --------
    >>> x = np.array([[[1.0, 0.0], [0.0, 3.0]]])
    >>> q = np.array([[[1.0, 1.0]]])
    >>> ranking_scores(x, q).tolist(), ranking_scores(x, q, "inner_product").tolist()
    ([[[1.0, 1.0]]], [[[1.0, 3.0]]])
    """
    ranking = check_choice("ranking", ranking, RANKINGS)
    scores = np.matmul(queries, np.swapaxes(context_x, -1, -2))
    if ranking == "cosine":
        scores /= np.sqrt(np.einsum("bpd,bpd->bp", context_x, context_x))[:, None, :]
    return scores


def select_top_k(scores: np.ndarray, k: int, *, ordered: bool = True) -> np.ndarray:
    """Indices of the k largest scores along the last axis: (..., P) -> (..., k).

    ``ordered=True``: in decreasing order of the score, exactly k per row, ties
    (probability zero for ``d >= 2``, certain for ``d = 1`` where every cosine is
    ±1) broken in favour of the lower index. ``ordered=False``: the k indices in
    the (unspecified but deterministic) order of ``numpy.argpartition``, which is
    all a mean over ``S_k`` needs. ``O(P)`` per row either way (a partition, no full sort).

    Parameters
    ----------
    scores : numpy.ndarray, shape (..., P)
    k : int
        ``1 <= k <= P``.
    ordered : bool, default True

    Returns
    -------
    numpy.ndarray of int, shape (..., k)

    References
    ----------
    Paper eq. (6).

    Examples
    --------
    >>> select_top_k(np.array([[0.1, 0.9, 0.5, 0.9]]), 2).tolist()   # tie: lower index first
    [[1, 3]]
    >>> sorted(select_top_k(np.array([[0.1, 0.9, 0.5]]), 2, ordered=False)[0].tolist())
    [1, 2]
    """
    k = check_top_k(k, scores.shape[-1])
    if not ordered:
        return np.argpartition(-scores, k - 1, axis=-1)[..., :k]
    rows = scores.reshape(-1, scores.shape[-1])
    chosen = _top_k_rows(rows, k)
    candidates = np.nonzero(chosen)[1].reshape(rows.shape[0], k)  # ascending index within each row
    order = np.argsort(-np.take_along_axis(rows, candidates, axis=1), axis=1, kind="stable")
    return np.take_along_axis(candidates, order, axis=1).reshape(scores.shape[:-1] + (k,))


def top_k_mask(scores: np.ndarray, k: int) -> np.ndarray:
    """The set ``S_k`` as a mask: ``True`` at the k largest scores of each row, shape of ``scores``.

    Exactly the positions :func:`select_top_k` returns (ties broken in favour of the lower index),
    without ordering them: all a mean over ``S_k`` (eq. 6) needs.

    Parameters
    ----------
    scores : numpy.ndarray, shape (..., P)
    k : int
        ``1 <= k <= P``.

    Returns
    -------
    numpy.ndarray of bool, shape (..., P)

    References
    ----------
    Paper eq. (6).

    Examples
    --------
    >>> top_k_mask(np.array([[0.1, 0.9, 0.5, 0.9]]), 2).tolist()
    [[False, True, False, True]]
    >>> top_k_mask(np.array([1.0, 1.0, 1.0]), 2).tolist()
    [True, True, False]
    """
    k = check_top_k(k, scores.shape[-1])
    return _top_k_rows(scores.reshape(-1, scores.shape[-1]), k).reshape(scores.shape)


def _top_k_rows(rows: np.ndarray, k: int) -> np.ndarray:
    """:func:`top_k_mask` of a 2-D ``rows`` (k checked)."""
    kth = -np.partition(-rows, k - 1, axis=1)[:, k - 1 : k]  # k-th largest score
    at_least = rows >= kth
    if np.count_nonzero(at_least) == at_least.shape[0] * k:  # no row has a tie at its k-th score
        return at_least
    above = rows > kth
    tied = rows == kth
    still_needed = k - above.sum(axis=1, keepdims=True)
    return above | (tied & (np.cumsum(tied, axis=1) <= still_needed))  # exactly k per row


def top_k_indices(context_x: np.ndarray, test_x: np.ndarray, k: int, *, ranking: str = "cosine") -> np.ndarray:
    """Indices ``S_k`` of the ``k`` context inputs most similar to ``x_test``, shape (B, k).

    Returned in decreasing order of similarity (cosine, eq. 6, or inner
    product, eq. 44); ties are broken in favour of the lower context index
    (:func:`~theory.data_law.select_top_k`).

    Parameters
    ----------
    context_x : numpy.ndarray, shape (B, P, d)
    test_x : numpy.ndarray, shape (B, d)
    k : int
        ``1 <= k <= P``.
    ranking : {'cosine', 'inner_product'}, default 'cosine'

    Returns
    -------
    numpy.ndarray of int, shape (B, k)

    References
    ----------
    Paper eqs. (6), (44).

    Examples
    --------
    >>> cx = np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 0.2]]])
    >>> top_k_indices(cx, np.array([[1.0, 0.1]]), 2).tolist()
    [[2, 0]]
    >>> top_k_indices(np.array([[[1.0], [-2.0], [3.0]]]), np.array([[1.0]]), 1).tolist()  # tie: lowest index
    [[0]]
    >>> top_k_indices(np.array([[[1.0], [-2.0], [3.0]]]), np.array([[1.0]]), 1, ranking="inner_product").tolist()
    [[2]]
    """
    ranking = check_choice("ranking", ranking, RANKINGS)
    if ranking == "cosine":
        scores = cosine_similarity(context_x, test_x)
    else:
        scores = similarity_terms(context_x, test_x)[0]
    return select_top_k(scores, k)


def top_k_mean(values: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Mean of ``values`` over the selected context positions of each context (the target of eq. 6).

    ``values`` has the contexts on axis 0 and the P positions on axis 1 --
    labels (B, P) or tokens (B, P, d); ``indices`` (B, ..., k) holds k positions
    per row (:func:`select_top_k`). The result has shape
    ``indices.shape[:-1] + values.shape[2:]``: ``y* = (1/k) Σ_{i∈S_k} y_i`` for
    labels, ``t = (1/k) Σ_{i∈S_k} x_i`` (eq. 41) for tokens.

    References
    ----------
    Paper eqs. (6), (41).

    Examples
    --------
    >>> top_k_mean(np.array([[1.0, 2.0, 4.0]]), np.array([[2, 0]])).tolist()
    [2.5]
    >>> top_k_mean(np.array([[[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]]]), np.array([[[0, 2], [1, 2]]])).tolist()
    [[[2.0, 1.5], [1.5, 2.0]]]
    """
    contexts = np.arange(values.shape[0]).reshape((-1,) + (1,) * (indices.ndim - 1))
    return values[contexts, indices].mean(axis=indices.ndim - 1)
