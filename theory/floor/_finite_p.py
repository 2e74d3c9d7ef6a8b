"""The finite-P floor: the best scalar polynomial in the EMPIRICAL covariance; part of :mod:`theory.floor`.

A depth-L linear-attention model predicts ``βᵀ 𝒫_L(S) q`` with ``S = UUᵀ/P``
the empirical context covariance (eq. 24, exact for every finite P). The
population floor of eqs. (43), (47)-(53) replaces S by Σ. At finite P the
vector ``Sq = (1/P) Σ_j x_j (x_jᵀq)`` weights each token by its similarity to
the query and so carries information about which tokens are the top k, which
no function of Σ and q has. Here the polynomial acts on the empirical S and
its coefficients are fitted by Monte Carlo least squares on one set of contexts
and scored on an independent one, so the estimate is not optimistically biased.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..data_law import RANKINGS, eigenbasis_normal
from ..spectra import SpectrumLike, as_spectrum
from ..validation import check_choice, check_generator, check_positive_int
from ._basis import FloorEstimate
from ._monte_carlo import _select_mean
from ._order_statistics import _check_P_k

#: which covariance the polynomial acts on: the context's ``'empirical'`` S = UUᵀ/P (eq. 24) or the ``'population'`` Σ (eq. 43)
COVARIANCES = ("empirical", "population")

_BREAKDOWN = 1e-10  # relative size of a new Krylov direction below which the space is exhausted
_PILOT_CONTEXTS = 64  # contexts of the pilot that fixes the well-conditioned polynomial basis


def _sample(rng, lam, P, k, m, queries, ranking):
    """Queries (m, Q, d), tokens (m, P, d) and top-k means (m, Q, d); the order of linear_floor_monte_carlo."""
    q = eigenbasis_normal(rng, (m, queries, lam.size), lam)
    x = eigenbasis_normal(rng, (m, P, lam.size), lam)
    return q, x, _select_mean(x, q, k, ranking)


def _operator(x, lam, covariance):
    """``v -> S v`` (``S = xᵀx/P`` per context, never formed) or ``v -> Σ v``, for v of shape (m, Q, d)."""
    if covariance == "population":
        return lambda v: lam * v
    P = x.shape[1]
    return lambda v: np.matmul(np.matmul(v, np.swapaxes(x, -1, -2)), x) / P


def _pilot_recurrence(q, apply, omega, depth):
    """Arnoldi coefficients of polynomials ``π_1..π_L'`` (``π_j(0) = 0``) orthonormal on the pilot.

    The inner product is ``<u, v> = mean over pilot (context, query) of uᵀΩv``
    (the loss's). ``π_1(S)q = Sq / h_{1,0}``, ``h_{j+1,j} π_{j+1}(S)q = S π_j(S)q -
    Σ_{i<=j} h_{i,j} π_i(S)q`` with full re-orthogonalisation (twice). Returns
    ``(first_norm, H)``, H of shape (L'+1, L'); fewer than ``depth`` columns when
    the Krylov space is exhausted (e.g. Σ = λ₀ I for the population operator).
    """

    def inner(u, v):
        return float(np.mean(np.sum(u * omega * v, axis=-1)))

    w = apply(q)
    first = math.sqrt(inner(w, w))
    vectors = [w / first]
    H = np.zeros((depth + 1, depth))
    for j in range(depth - 1):
        w = apply(vectors[-1])
        scale = math.sqrt(inner(w, w))
        for _ in range(2):
            for i, v in enumerate(vectors):
                c = inner(v, w)
                H[i, j] += c
                w = w - c * v
        size = math.sqrt(inner(w, w))
        if size <= _BREAKDOWN * scale:
            return first, H[: len(vectors) + 1, : len(vectors)]
        H[j + 1, j] = size
        vectors.append(w / size)
    return first, H[: len(vectors) + 1, : len(vectors)]


def _features(q, apply, first, H):
    """``π_1(S)q, ..., π_L'(S)q`` by the pilot's recurrence: shape (m, Q, d, L')."""
    degree = H.shape[1]
    vectors = [apply(q) / first]
    for j in range(degree - 1):
        w = apply(vectors[-1])
        for i in range(j + 1):
            w = w - H[i, j] * vectors[i]
        vectors.append(w / H[j + 1, j])
    return np.stack(vectors, axis=-1)


def _moments(rng, lam, omega, P, k, n_contexts, queries, batch, ranking, covariance, first, H):
    """Mean ``T = tᵀΩt``, ``b = Fᵀ Ω t`` and ``A = FᵀΩF`` over ``n_contexts`` fresh contexts (F the features)."""
    degree = H.shape[1]
    total, b, A = 0.0, np.zeros(degree), np.zeros((degree, degree))
    for start in range(0, n_contexts, batch):
        m = min(batch, n_contexts - start)
        q, x, t = _sample(rng, lam, P, k, m, queries, ranking)
        F = _features(q, _operator(x, lam, covariance), first, H).reshape(-1, lam.size, degree)
        t = t.reshape(-1, lam.size)
        omega_t = omega * t
        total += float(np.sum(t * omega_t))
        b += np.einsum("ndj,nd->j", F, omega_t)
        A += np.einsum("ndi,d,ndj->ij", F, omega, F)
    count = n_contexts * queries
    return total / count, b / count, A / count


def _losses_by_degree(total, b, A, coefficients):
    """``E‖t - Σ_j c_j π_j(S)q‖²_Ω`` from the moments, for each degree's coefficient vector."""
    out = []
    for c in coefficients:
        n = c.size
        out.append(total - 2.0 * c @ b[:n] + c @ A[:n, :n] @ c)
    return np.array(out)

@dataclass(frozen=True, eq=False)
class _SeedFit:
    """One seed of :func:`linear_floor_finite_p`: the fitted polynomials and their losses."""

    first_and_recurrence: tuple  # (h_{1,0}, H) of _pilot_recurrence: the basis π_1..π_L'
    coefficients: list  # least-squares coefficients on π_1..π_n for n = 1..L'
    held_out: np.ndarray  # (L',) loss on the evaluation set
    in_sample: np.ndarray  # (L',) loss on the fitting set
    total: float  # T = E[tᵀΩt] on the evaluation set
    projections: np.ndarray  # (L',) z = R^(-T) b on the fitting set

    def predict_direction(self, q, apply, degree=None):
        """``Σ_j c_j π_j(S) q`` for q of shape (m, Q, d) and ``apply: v -> S v``, at ``degree`` (default L')."""
        first, H = self.first_and_recurrence
        c = self.coefficients[(H.shape[1] if degree is None else min(degree, H.shape[1])) - 1]
        return _features(q, apply, first, H[: c.size + 1, : c.size]) @ c


def _fit_seed(seed_rng, lam, omega, P, k, depth, n_contexts, queries, batch, ranking, covariance) -> _SeedFit:
    """Pilot basis, least squares on a fitting set, losses on an independent evaluation set."""
    pilot_rng, fit_rng, eval_rng = seed_rng.spawn(3)
    q, x, _ = _sample(pilot_rng, lam, P, k, _PILOT_CONTEXTS, queries, ranking)
    first, H = _pilot_recurrence(q, _operator(x, lam, covariance), omega, depth)
    args = (lam, omega, P, k, n_contexts, queries, batch, ranking, covariance, first, H)
    fit_total, fit_b, fit_A = _moments(fit_rng, *args)
    eval_total, eval_b, eval_A = _moments(eval_rng, *args)
    # nested least squares for every degree at once: A = RᵀR, z = R^(-T) b, in-sample loss T - Σ_{j<=n} z_j²
    R = np.linalg.cholesky(fit_A).T
    z = np.linalg.solve(R.T, fit_b)
    coefficients = [np.linalg.solve(R[:n, :n], z[:n]) for n in range(1, H.shape[1] + 1)]
    return _SeedFit(
        first_and_recurrence=(first, H),
        coefficients=coefficients,
        held_out=_losses_by_degree(eval_total, eval_b, eval_A, coefficients),
        in_sample=fit_total - np.cumsum(z**2),
        total=eval_total,
        projections=z,
    )


def linear_floor_finite_p(
    spectrum: SpectrumLike,
    P: int,
    k: int,
    depth: int,
    *,
    rng: np.random.Generator | int,
    n_contexts: int = 2048,
    n_seeds: int = 8,
    queries_per_context: int = 1,
    batch: int = 32,
    ranking: str = "cosine",
    covariance: str = "empirical",
) -> FloorEstimate:
    """Finite-P floor: the best predictor ``Σ_r c_r S^r q`` with S the context's EMPIRICAL covariance.

    Estimates ``min_{c_1..c_L} E‖t - Σ_{r=1..L} c_r S^r q‖²_Ω`` with
    ``S = UUᵀ/P`` -- the model class of eq. (24) with scalar ``B_ℓ`` (any
    coefficients ``c_r`` are reached through ``m_r = W_o W_v^r W_y``) -- where
    the population floor of eqs. (43), (47)-(53) (:func:`linear_floor_monte_carlo`)
    has ``Σ^r q``. With a Haar rotation per context (eq. 3) a fixed ``B_ℓ``
    cannot follow Σ's eigenbasis; for L = 1 a scalar B is optimal among all
    fixed B (the loss is convex in B and invariant under ``B -> RBRᵀ``). The
    class is a sub-class of what a depth-L model expresses, so the value is an
    upper bound on the model's best finite-P loss in that sense.

    Per seed: a pilot of 64 contexts fixes polynomials ``π_1..π_L`` with
    ``π_j(0) = 0`` that are orthonormal for ``<u, v> = E[uᵀΩv]`` on the pilot
    (an Arnoldi run with averaged inner products and full re-orthogonalisation;
    a stable basis of ``span{Sq, ..., S^L q}`` where the monomials are not);
    the coefficients for every degree L' <= L are the least-squares solution
    on ``n_contexts`` fitting contexts; the loss is evaluated on ``n_contexts``
    independent contexts. ``estimate`` is the mean of the held-out losses over
    ``n_seeds`` independent seeds and ``standard_error`` their spread divided
    by ``sqrt(n_seeds)``. The held-out loss is biased HIGH by about
    ``plug_in_bias`` (half the held-out minus in-sample gap, an O(L/n) effect)
    -- the opposite direction to :func:`linear_floor_monte_carlo`'s plug-in.

    Contexts are drawn in the eigenbasis by the package's data law
    (:mod:`theory.data_law`, the same draws and the same cosine top-k rule as
    :func:`linear_floor_monte_carlo`): ``t``, ``S``, ``q`` and ``Ω`` rotate
    together and ``‖t - p(S)q‖²_Ω`` is rotation invariant, so this is exact.
    ``covariance='population'`` runs the same fit/held-out machinery with Σ in
    place of S: a consistency check against the population floor.

    Parameters
    ----------
    spectrum : Spectrum or PowerLawSpectrum
        Input (λ) and teacher (ω) spectra, eq. (2); Ω = diag(ω).
    P : int
        Context size.
    k : int
        Tokens averaged by the target (top-k), ``1 <= k <= P``.
    depth : int
        Polynomial degree L >= 1; the result holds every L' <= depth.
    rng : numpy.random.Generator or int
        Source of randomness (or a seed); split into one stream per seed.
    n_contexts : int, default 2048
        Contexts per fitting set and per evaluation set, ``>= 4``.
    n_seeds : int, default 8
        Independent repetitions (pilot, fit, evaluation), ``>= 2``.
    queries_per_context : int, default 1
        Independent queries per context (they share the context's S).
    batch : int, default 32
        Contexts per vectorised batch.
    ranking : {'cosine', 'inner_product'}, default 'cosine'
        The task's cosine top-k (eq. 6) or the inner product of eq. (44).
    covariance : {'empirical', 'population'}, default 'empirical'
        Polynomial in ``S = UUᵀ/P`` (eq. 24) or in Σ (eq. 43).

    Returns
    -------
    FloorEstimate
        ``method = 'finite_p'`` (empirical) or ``'population_least_squares'``;
        ``projections`` are the fitted ``E[(φ_j)ᵀΩt]`` in the basis orthonormal
        on the fitting set (so the in-sample loss is ``T - Σ_j b_j²``);
        ``n_samples`` counts the evaluation contexts over all seeds.

    Raises
    ------
    ValueError
        An argument out of range (``k > P``, ``depth < 1``, ``n_seeds < 2``, an
        unknown ``ranking`` or ``covariance``), naming it.

    References
    ----------
    Paper eqs. (24), (43), (47)-(54).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(0.5, 0.5, d=8)
    >>> est = linear_floor_finite_p(spec, 32, 2, 3, rng=0, n_contexts=200, n_seeds=2)
    >>> est.method, est.floor_by_degree.shape, bool(est.estimate > 0)
    ('finite_p', (3,), True)
    """
    spectrum = as_spectrum(spectrum)
    P, k = _check_P_k(P, k)
    depth = check_positive_int("depth", depth)
    n_contexts = check_positive_int("n_contexts", n_contexts, minimum=4)
    n_seeds = check_positive_int("n_seeds", n_seeds, minimum=2)
    queries = check_positive_int("queries_per_context", queries_per_context)
    batch = check_positive_int("batch", batch)
    ranking = check_choice("ranking", ranking, RANKINGS)
    covariance = check_choice("covariance", covariance, COVARIANCES)
    rng = check_generator(rng, allow_seed=True)
    lam, omega = spectrum.eigenvalues, spectrum.teacher_eigenvalues

    fits = [_fit_seed(seed_rng, lam, omega, P, k, depth, n_contexts, queries, batch, ranking, covariance)
            for seed_rng in rng.spawn(n_seeds)]
    held_out = [f.held_out for f in fits]
    in_sample = [f.in_sample for f in fits]
    totals = [f.total for f in fits]
    projections = [f.projections for f in fits]
    degrees = [f.first_and_recurrence[1].shape[1] for f in fits]

    degree = min(degrees)  # the pilots agree unless the Krylov space is exhausted at round-off level

    def pad(values):  # constant beyond the Krylov dimension
        values = np.array([v[:degree] for v in values])
        return np.concatenate([values, np.repeat(values[:, -1:], depth - degree, axis=1)], axis=1)

    held_out, in_sample = pad(held_out), pad(in_sample)
    floors = held_out.mean(axis=0)
    errors = held_out.std(axis=0, ddof=1) / math.sqrt(n_seeds)
    return FloorEstimate(
        estimate=float(floors[-1]),
        standard_error=float(errors[-1]),
        floor_by_degree=floors,
        standard_error_by_degree=errors,
        total_second_moment=float(np.mean(totals)),
        projections=np.mean([p[:degree] for p in projections], axis=0),
        plug_in_bias=0.5 * (held_out - in_sample).mean(axis=0),
        effective_degree=degree,
        P=P,
        k=k,
        depth=depth,
        n_samples=n_contexts * n_seeds,
        queries_per_context=queries,
        method="finite_p" if covariance == "empirical" else "population_least_squares",
        ranking=ranking,
        variance_reduction="none",
        spectrum=spectrum,
    )
