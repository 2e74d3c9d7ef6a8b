"""The linear-attention floor on the top-k task (paper eqs. (41)-(54), Table 3).

On the difficult task the target is ``y* = βᵀt`` with ``t = (1/k) Σ_{i∈S_k} x_i``
and ``S_k`` the top k context tokens by cosine similarity to the query ``q``
(eq. 6). A depth-L linear-attention model predicts ``βᵀ p_L(S) q`` with a
polynomial ``p_L`` of degree <= L and ``p_L(0) = 0`` (eq. 24); in the population
limit ``S -> Σ`` the best such polynomial leaves the floor (eqs. 43, 47-53)

    R_irr(L) = T - hᵀ G† h,   T = E[tᵀΩt],   h_r = E[(Σ^r q)ᵀ Ω t],
    G_rs = tr(Ω Σ^(r+s+1)),   r, s = 1..L.

How the degree enters. ``hᵀG†h`` is the squared length of the projection of
``t`` onto the span of ``{Σq, ..., Σ^L q}`` in the inner product
``<u, v> = E[uᵀΩv]``; in the eigenbasis that span is ``{p(λ) ⊙ q : p(0) = 0,
deg p <= L}``, so ``R_irr(L)`` is non-increasing in L and constant once L
reaches the number of distinct eigenvalues (the Krylov dimension). We never
form the ill-conditioned monomial ``G``: the polynomials ``π_1..π_L`` with
``π_j(0) = 0`` orthonormal for ``<π_i, π_j> = Σ_k ω_k λ_k π_i(λ_k) π_j(λ_k)``
(which is G's inner product) come from a Lanczos run with full
re-orthogonalisation on the discrete measure ``ω_k λ_k^3`` at the nodes
``λ_k``; in that basis G is the identity, ``b_j = E[(π_j(Σ)q)ᵀΩt]`` and
``R_irr(L) = T - Σ_{j<=L} b_j²`` for every L at once.

Why the eigenbasis suffices. Cosine similarity and inner products are
invariant under ``x -> Ox``, and ``tᵀΩt``, ``(Σ^r q)ᵀΩt`` and
``tr(ΩΣ^(r+s+1))`` are invariant under ``(x, Σ, Ω) -> (Ox, OΣOᵀ, OΩOᵀ)``.
The data of eq. (3)-(4) are ``x = O Λ^(1/2) z`` with z standard normal
independent of O, so every per-context quantity equals its value at
``O = I``: the Haar average over O is trivial and all sampling is done with
``Σ = diag(λ)``, ``Ω = diag(ω)``. (``frame='haar'`` re-does the computation
with a fresh Haar rotation per context, to check this.)

Two routes to that floor, and a finite-P variant of it:

* :func:`linear_floor_monte_carlo` -- eq. (54): T and h by Monte Carlo over
  contexts, G exact; a delta-method standard error; optional control
  variates in the query (exact means from one-dimensional quadratures).
* :func:`linear_floor_semi_analytic` -- not in the paper: with inner-product
  ranking the Gaussian conditioning of eq. (44) gives ``E[t | q]`` and
  ``E[ttᵀ | q]`` in closed form given moments of the top-k order statistics
  of P standard normals (:func:`top_k_moments`), and the remaining average
  over ``q`` reduces to one-dimensional integrals -- a deterministic result.
  For an isotropic input spectrum the cosine ranking of the task is also
  exact (cosines are iid, independent of the token norms).
* :func:`linear_floor_finite_p` -- not in the paper: the same polynomial
  class acting on the context's EMPIRICAL covariance ``S = UUᵀ/P``, which is
  what the model's eq. (24) has at finite P. ``Sq = (1/P) Σ_j x_j (x_jᵀq)``
  weights each token by its similarity to q, so it carries information on
  which tokens are the top k beyond ``E[t | q]``; the floor above is then not
  a lower bound on a model's loss at finite P, and this one is lower (e.g.
  12.39 vs 13.37 for top-2, Σ = I, d = 32, P = 128, L = 8). Least squares
  fitted on one set of contexts and scored on an independent one, SE from seeds.

Layout (one module per method, all re-exported here): order statistics of the
top k (``_order_statistics``: :func:`gamma_top_k`, :func:`top_k_moments`,
:func:`conditional_top_k_mean`), what both routes share (``_basis``: the
G-orthonormal basis, :func:`floor_from_moments`, :class:`FloorEstimate`), the
Monte Carlo (``_monte_carlo``), the semi-analytic route (``_semi_analytic``)
and the finite-P floor (``_finite_p``). The data law itself is :mod:`theory.data_law`.
"""

from __future__ import annotations

from . import _finite_p, _monte_carlo, _order_statistics, _semi_analytic
from ._basis import FloorEstimate, floor_from_moments, floor_polynomial_basis
from ._finite_p import linear_floor_finite_p
from ._monte_carlo import linear_floor_monte_carlo, sample_top_k_targets
from ._order_statistics import TopKMoments, conditional_top_k_mean, gamma_top_k, mean_direction_coefficient, top_k_moments
from ._semi_analytic import linear_floor_semi_analytic

# the placeholder symbols of the expressions below, as derivations/ renders them (not in __all__)
from ._order_statistics import P_sym, gamma_sym, trace_sigma2_sym, x_sym  # noqa: F401
from ._semi_analytic import (  # noqa: F401
    aligned_sym,
    chi_mean_sym,
    d_sym,
    lambda0_sym,
    m1_sym,
    m2_sym,
    m11_sym,
    second_moment_sym,
    trace_omega_sigma_sym,
    trace_omega_sym,
)

__all__ = [
    "RANKINGS",
    "FRAMES",
    "COVARIANCES",
    "VARIANCE_REDUCTIONS",
    "ORDER_STATISTIC_DENSITY",
    "NORMAL_TAIL_MEAN",
    "MEAN_DIRECTION_COEFFICIENT",
    "INNER_PRODUCT_TOTAL",
    "ISOTROPIC_COSINE_TOTAL",
    "ISOTROPIC_COSINE_PROJECTION",
    "ISOTROPIC_COSINE_FLOOR",
    "TopKMoments",
    "top_k_moments",
    "gamma_top_k",
    "mean_direction_coefficient",
    "conditional_top_k_mean",
    "floor_polynomial_basis",
    "floor_from_moments",
    "sample_top_k_targets",
    "FloorEstimate",
    "linear_floor_monte_carlo",
    "linear_floor_semi_analytic",
    "linear_floor_finite_p",
]

# The re-exported constants, as assignments so that their ``#:`` lines document them here.
#: how the task ranks context tokens: ``'cosine'`` (the task, eq. 6) or ``'inner_product'`` (eq. 44)
RANKINGS = _monte_carlo.RANKINGS
#: coordinates of the Monte Carlo: ``'eigen'`` (Σ, Ω diagonal) or ``'haar'`` (a fresh Haar O per context, eq. 3)
FRAMES = _monte_carlo.FRAMES
#: ``'none'`` (plain eq. 54) or ``'control_variates'`` (regression on query features with exact means)
VARIANCE_REDUCTIONS = _monte_carlo.VARIANCE_REDUCTIONS
#: which covariance the finite-P floor's polynomial acts on: ``'empirical'`` S = UUᵀ/P (eq. 24) or ``'population'`` Σ
COVARIANCES = _finite_p.COVARIANCES
#: density of the k-th largest of P iid N(0, 1) (defines γ_{P,k} of eq. 45)
ORDER_STATISTIC_DENSITY = _order_statistics.ORDER_STATISTIC_DENSITY
#: E[X | X > x] for X ~ N(0, 1) (inverse Mills ratio); E[X² | X > x] = 1 + x·(this)
NORMAL_TAIL_MEAN = _order_statistics.NORMAL_TAIL_MEAN
#: eq. (46): c = γ_{P,k} / sqrt(tr Σ²) in t̄ ≈ c Σq
MEAN_DIRECTION_COEFFICIENT = _order_statistics.MEAN_DIRECTION_COEFFICIENT
#: T = E[tᵀΩt] under inner-product ranking (eq. 44): E[M²] A + (tr ΩΣ - A)/k, A = E[(Σq)ᵀΩΣq / qᵀΣq]
INNER_PRODUCT_TOTAL = _semi_analytic.INNER_PRODUCT_TOTAL
#: T for Σ = λ₀ I with cosine ranking: λ₀ tr Ω [d k + χ̄² (m11 - m2)] / (d k²) (see linear_floor_semi_analytic)
ISOTROPIC_COSINE_TOTAL = _semi_analytic.ISOTROPIC_COSINE_TOTAL
#: b_1 for Σ = λ₀ I with cosine ranking: sqrt(λ₀ tr Ω) χ̄² m1 / (d k)
ISOTROPIC_COSINE_PROJECTION = _semi_analytic.ISOTROPIC_COSINE_PROJECTION
#: the floor for Σ = λ₀ I with cosine ranking, T - b_1², the same for every depth L
ISOTROPIC_COSINE_FLOOR = _semi_analytic.ISOTROPIC_COSINE_FLOOR
