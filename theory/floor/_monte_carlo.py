"""The Monte Carlo route to the floor (paper eq. (54)); part of :mod:`theory.floor`.

``T`` and ``h`` by Monte Carlo over contexts drawn by the data law of
eqs. (3)-(6) (:mod:`theory.data_law`), ``G`` exact; a delta-method standard
error; optional control variates in the query.
"""

from __future__ import annotations

import math

import numpy as np

from ..data_law import RANKINGS, eigenbasis_normal, haar_rotations, ranking_scores, rotate, select_top_k, top_k_mean
from ..spectra import SpectrumLike, as_spectrum
from ..validation import check_choice, check_generator, check_positive_int
from ._basis import FloorEstimate, _floor_basis, _FloorBasis, _floors_by_degree, _query_ratio_moments
from ._order_statistics import _check_P_k

#: coordinates of the Monte Carlo: ``'eigen'`` (Σ, Ω diagonal) or ``'haar'`` (a fresh Haar O per context, eq. 3)
FRAMES = ("eigen", "haar")
#: ``'none'`` (plain eq. 54) or ``'control_variates'`` (regression on query features with exact means)
VARIANCE_REDUCTIONS = ("none", "control_variates")


def _select_mean(x: np.ndarray, q: np.ndarray, k: int, ranking: str) -> np.ndarray:
    """t = mean of the top-k tokens by cosine or inner product; x (B, P, d), q (B, m, d) -> (B, m, d)."""
    if k == x.shape[1]:
        return np.broadcast_to(x.mean(axis=1)[:, None, :], q.shape).copy()
    return top_k_mean(x, select_top_k(ranking_scores(x, q, ranking), k, ordered=False))


def sample_top_k_targets(
    spectrum: SpectrumLike,
    P: int,
    k: int,
    size: int,
    rng: np.random.Generator | int,
    *,
    ranking: str = "cosine",
    query: object = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw queries ``q`` and top-k means ``t`` of the difficult task (eqs. 4, 6) in the eigenbasis.

    ``x_1..x_P, q ~ N(0, diag λ)`` iid; ``t`` is the mean of the k tokens
    with the largest cosine similarity (or inner product) to ``q``. The
    eigenbasis is exact for every rotation-invariant statistic (module
    docstring).

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
    P, k : int
        Context size and number of selected tokens.
    size : int
        Number of contexts.
    rng : numpy.random.Generator or int
        Source of randomness (or a seed).
    ranking : {'cosine', 'inner_product'}
        Selection rule: the task's cosine (eq. 6) or the inner product of eq. (44).
    query : array_like, shape (d,), optional
        Hold the query fixed (for conditional expectations given q).

    Returns
    -------
    (q, t) : tuple of numpy.ndarray, each shape (size, d)

    References
    ----------
    Paper eqs. (3)-(6).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> q, t = sample_top_k_targets(PowerLawSpectrum(0.5, 0.5, d=4), 16, 2, 3, np.random.default_rng(0))
    >>> q.shape, t.shape
    ((3, 4), (3, 4))
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    size = check_positive_int("size", size)
    ranking = check_choice("ranking", ranking, RANKINGS)
    rng = check_generator(rng, allow_seed=True)
    if query is None:
        q = eigenbasis_normal(rng, (size, spectrum.d), spectrum.eigenvalues)
    else:
        fixed = np.asarray(query, dtype=np.float64)
        if fixed.shape != (spectrum.d,) or not np.all(np.isfinite(fixed)):
            raise ValueError(f"query must be a finite array of shape ({spectrum.d},); got {fixed.shape}")
        q = np.broadcast_to(fixed, (size, spectrum.d)).copy()
    x = eigenbasis_normal(rng, (size, P, spectrum.d), spectrum.eigenvalues)
    return q, _select_mean(x, q[:, None, :], k, ranking)[:, 0, :]


def _context_statistics(q, t, lam, omega, basis: _FloorBasis, sigma=None, omega_matrix=None):
    """Per-query a = tᵀΩt, b_j = (π_j(Σ)q)ᵀΩt and the query features φ_0, φ_j; q, t of shape (B, m, d).

    Eigen frame (``sigma is None``): Σ, Ω diagonal, π_j(λ_k) from the basis.
    Rotated frame: Σ, Ω full, shape (B, d, d); π_j(Σ)q by the Lanczos three-term recurrence.
    """
    if sigma is None:
        omega_t = omega * t
        variance = np.sum(lam * q * q, axis=-1)
        a = np.sum(t * omega_t, axis=-1)
        b = (q * omega_t) @ basis.values
        phi0 = np.sum(omega * (lam * q) ** 2, axis=-1) / variance
        phi = (omega * lam * q * q) @ basis.values / np.sqrt(variance)[..., None]
        return a, b, phi0, phi

    def apply(matrix, vectors):  # (B, d, d) acting on (B, m, d)
        return np.matmul(vectors, np.swapaxes(matrix, -1, -2))

    omega_t = apply(omega_matrix, t)
    sigma_q = apply(sigma, q)
    omega_sigma_q = apply(omega_matrix, sigma_q)
    variance = np.sum(q * sigma_q, axis=-1)
    a = np.sum(t * omega_t, axis=-1)
    phi0 = np.sum(sigma_q * omega_sigma_q, axis=-1) / variance
    b = np.empty(q.shape[:-1] + (basis.degree,))
    phi = np.empty_like(b)
    previous, current = np.zeros_like(q), basis.psi0 * q  # ψ_{-1}(Σ)q, ψ_0(Σ)q
    for j in range(basis.degree):
        pi_q = apply(sigma, current)  # π_{j+1}(Σ)q = Σ ψ_j(Σ) q
        b[..., j] = np.sum(pi_q * omega_t, axis=-1)
        phi[..., j] = np.sum(pi_q * omega_sigma_q, axis=-1)
        if j + 1 < basis.degree:
            nxt = pi_q - basis.alpha[j] * current - (basis.beta[j - 1] * previous if j > 0 else 0.0)
            previous, current = current, nxt / basis.beta[j]
    return a, b, phi0, phi / np.sqrt(variance)[..., None]


def _control_variate(values: np.ndarray, feature: np.ndarray, feature_mean) -> np.ndarray:
    """``values - β (feature - E feature)`` per trailing coordinate, β the least-squares slope.

    The adjusted values have the same expectation and a smaller variance; the
    estimated β costs an O(1/n) bias. Features without spread are left out.
    """
    centred = feature - feature_mean
    flat_values = values.reshape(-1, *values.shape[2:])
    flat_feature = centred.reshape(-1, *centred.shape[2:])
    f_dev = flat_feature - flat_feature.mean(axis=0)
    v_dev = flat_values - flat_values.mean(axis=0)
    spread = np.sum(f_dev**2, axis=0)
    # a feature that is constant up to round-off (e.g. φ_0 when ΩΣ² ∝ Σ) carries no information
    scale = np.max(np.abs(feature.reshape(flat_feature.shape)), axis=0) + np.abs(feature_mean)
    usable = spread > (1e-10 * scale) ** 2 * flat_feature.shape[0]
    slope = np.where(usable, np.sum(f_dev * v_dev, axis=0) / np.where(usable, spread, 1.0), 0.0)
    return values - slope * centred


def _floor_statistics(a, b, phi0, phi, feature_means, depth):
    """Plug-in floor T - Σ b̄_j² per L, its delta-method SE and the plug-in bias.

    Arrays are grouped by context: ``a``, ``phi0`` of shape (G, m) and ``b``, ``phi`` of
    shape (G, m, L'), m queries per sampled context. With ``feature_means`` given,
    ``a`` and each ``b_j`` are first replaced by their control-variate versions
    (features ``φ_0`` and ``φ_j``). Contexts are iid, so standard errors come from
    the G context means (queries sharing a context may correlate).
    """
    if feature_means is not None:
        a = _control_variate(a, phi0, feature_means[0])
        b = _control_variate(b, phi, feature_means[1])
    groups = a.shape[0]
    b_mean = b.mean(axis=(0, 1))
    floors = _floors_by_degree(float(a.mean()), b_mean, depth)
    # delta method: R̂ - R ≈ mean(z_L) - E z_L with z_L = a - 2 Σ_{j<=L} b̄_j b_j
    z = a[..., None] - 2.0 * np.cumsum(b * b_mean, axis=-1)
    errors = z.mean(axis=1).std(axis=0, ddof=1) / math.sqrt(groups)
    bias = np.cumsum(b.mean(axis=1).var(axis=0, ddof=1) / groups)
    if errors.size < depth:
        errors = np.concatenate([errors, np.full(depth - errors.size, errors[-1])])
        bias = np.concatenate([bias, np.full(depth - bias.size, bias[-1])])
    return floors, errors, bias, float(a.mean()), b_mean


def linear_floor_monte_carlo(
    spectrum: SpectrumLike,
    P: int,
    k: int,
    depth: int,
    n_samples: int,
    rng: np.random.Generator | int,
    *,
    queries_per_context: int = 1,
    batch: int = 16,
    ranking: str = "cosine",
    frame: str = "eigen",
    variance_reduction: str = "none",
) -> FloorEstimate:
    """Monte Carlo estimate of the linear-attention floor ``T - hᵀG†h`` (eq. 54).

    Samples ``n_samples`` contexts (P tokens), queries each with
    ``queries_per_context`` independent queries, forms the top-k target mean t
    per query, averages ``tᵀΩt`` and ``(π_j(Σ)q)ᵀΩt`` and uses the exact G
    (the identity in the G-orthonormal basis, :func:`floor_polynomial_basis`);
    vectorised over batches of contexts. The standard error is the delta
    method on the linearisation ``z_L = tᵀΩt - 2 Σ_j b̄_j (π_j(Σ)q)ᵀΩt``,
    computed from per-context means (contexts are iid; queries of one context
    share its tokens, so they may correlate).

    ``queries_per_context = 1`` is eq. (54) literally. Larger values reuse the
    costly part of a sample (P·d normal draws) for several queries: every
    (context, query) pair is still exactly distributed as in eqs. (4)-(6), the
    estimate stays unbiased, and as two independent queries rarely pick the
    same tokens the variance per unit time drops roughly in proportion.

    ``variance_reduction='control_variates'`` replaces ``tᵀΩt`` and each
    ``(π_j(Σ)q)ᵀΩt`` by its residual after a least-squares fit on one query
    feature whose mean is known exactly (one-dimensional quadratures):
    ``φ_0 = (Σq)ᵀΩΣq/qᵀΣq`` and ``φ_j = (π_j(Σ)q)ᵀΩΣq/sqrt(qᵀΣq)``, to which
    ``E[tᵀΩt | q]`` and ``E[b_j | q]`` are exactly affine under
    inner-product ranking (eq. 44). This removes most of the query-to-query
    noise (unbiased up to O(1/n)) and keeps the floor non-increasing in L.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
        Input (λ) and teacher (ω) spectra, eq. (2).
    P : int
        Context size.
    k : int
        Tokens averaged by the target (top-k), ``1 <= k <= P``.
    depth : int
        Polynomial degree L (number of layers), ``>= 1``; the result also
        holds every L' < depth.
    n_samples : int
        Number of contexts, ``>= 4``.
    rng : numpy.random.Generator or int
        Source of randomness (or a seed).
    queries_per_context : int, default 1
        Independent queries per sampled context.
    batch : int, default 16
        Contexts per vectorised batch (memory ~ 2·batch·P·(d + queries)·8 bytes).
    ranking : {'cosine', 'inner_product'}, default 'cosine'
        Token selection: the task's cosine similarity (eq. 6) or the inner
        product of eq. (44).
    frame : {'eigen', 'haar'}, default 'eigen'
        ``'eigen'`` samples with Σ, Ω diagonal (exact by rotation invariance);
        ``'haar'`` draws a Haar rotation per context (eq. 3) from a separate
        stream, so the two frames see the same data and must agree to round-off.
    variance_reduction : {'none', 'control_variates'}, default 'none'

    Returns
    -------
    FloorEstimate

    References
    ----------
    Paper eqs. (3)-(6), (47)-(54).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> est = linear_floor_monte_carlo(PowerLawSpectrum(0.5, 0.5, d=8), 32, 2, 3, 200, np.random.default_rng(0))
    >>> bool(est.estimate > 0), est.floor_by_degree.shape, est.effective_degree
    (True, (3,), 3)
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    depth = check_positive_int("depth", depth)
    n_samples = check_positive_int("n_samples", n_samples, minimum=4)
    queries = check_positive_int("queries_per_context", queries_per_context)
    batch = check_positive_int("batch", batch)
    ranking = check_choice("ranking", ranking, RANKINGS)
    frame = check_choice("frame", frame, FRAMES)
    variance_reduction = check_choice("variance_reduction", variance_reduction, VARIANCE_REDUCTIONS)
    rng = check_generator(rng, allow_seed=True)
    data_rng, rotation_rng = rng.spawn(2)

    lam, omega, d = spectrum.eigenvalues, spectrum.teacher_eigenvalues, spectrum.d
    basis = _floor_basis(spectrum, depth)
    a = np.empty((n_samples, queries))
    b = np.empty((n_samples, queries, basis.degree))
    phi0 = np.empty((n_samples, queries))
    phi = np.empty((n_samples, queries, basis.degree))
    for start in range(0, n_samples, batch):
        m = min(batch, n_samples - start)
        q = eigenbasis_normal(data_rng, (m, queries, d), lam)  # the queries first, then the tokens
        x = eigenbasis_normal(data_rng, (m, P, d), lam)
        if frame == "eigen":
            t = _select_mean(x, q, k, ranking)
            per_query = _context_statistics(q, t, lam, omega, basis)
        else:
            rotation = haar_rotations(d, m, rotation_rng)
            sigma, omega_matrix = spectrum.covariances(rotation)
            q_rot, x_rot = rotate(rotation, q), rotate(rotation, x)
            t = _select_mean(x_rot, q_rot, k, ranking)
            per_query = _context_statistics(q_rot, t, lam, omega, basis, sigma=sigma, omega_matrix=omega_matrix)
        rows = slice(start, start + m)
        a[rows], b[rows], phi0[rows], phi[rows] = per_query

    feature_means = None
    if variance_reduction == "control_variates":
        e1, e_half = _query_ratio_moments(spectrum)
        feature_means = (float(np.sum(omega * lam**3 * e1)), (omega * lam**2 * e_half) @ basis.values)
    floors, errors, bias, total, b_mean = _floor_statistics(a, b, phi0, phi, feature_means, depth)
    return FloorEstimate(
        estimate=float(floors[-1]),
        standard_error=float(errors[-1]),
        floor_by_degree=floors,
        standard_error_by_degree=errors,
        total_second_moment=total,
        projections=b_mean,
        plug_in_bias=bias,
        effective_degree=basis.degree,
        P=P,
        k=k,
        depth=depth,
        n_samples=n_samples,
        queries_per_context=queries,
        method="monte_carlo",
        ranking=ranking,
        variance_reduction=variance_reduction,
        spectrum=spectrum,
    )
