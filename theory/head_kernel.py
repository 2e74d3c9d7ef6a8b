"""The head kernel ``K(D, D') = E[ũ_D ũ_D']`` of a measure of forms: its spectrum and the depth exponent it predicts.

A measure ``μ = Σ_j w_j δ_{D_j}`` of heads (e.g. the Frank–Wolfe measure of :mod:`theory.mixture_limit`)
defines the integral operator ``(T f)(D) = ∫ K(D, D') f(D') dμ(D')`` on ``L²(μ)`` with the kernel
``K(D, D') = E[ũ_D ũ_D']``, ``ũ_D = u_D − E_μ u`` (the head's read centred on the measure's mean
prediction, expectations over contexts). On ``m`` atoms ``T`` is the matrix ``W^{1/2} K W^{1/2}``
(``W = diag(w)``); its eigenvalues ``λ_m`` sum to the i.i.d. variance ``V = E Var_μ(u)``.

* ``L`` i.i.d. heads from ``μ`` at a fixed gain ``g`` cost exactly ``g² V / L`` above ``R(μ)`` (α = 1).
* Equal-weight points chosen well (kernel herding, balanced heads) cost ``g²`` times the squared
  quadrature error of ``μ`` in ``K``, which for ``λ_m ~ m^{-s}`` falls like ``L^{-s}`` (``1 < s ≤ 2``) and
  never faster than ``L^{-2}`` with equal weights; a finite effective rank ``r_eff = (Σλ)²/Σλ²`` gives
  ``L^{-2}`` beyond a crossover depth of about ``r_eff``.

Hence ``alpha_predicted = clip(s, 1, 2)`` (:func:`kernel_spectrum`), and :func:`herding_excess` measures
the balanced-points excess directly. Derivation page ``bracket`` (steps iii-iv).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from theory.validation import check_positive_int

__all__ = ["KernelSpectrum", "kernel_spectrum", "herding_excess"]


@dataclass(frozen=True)
class KernelSpectrum:
    """Eigenvalues of the centred head kernel on ``L²(μ)`` and the depth exponent they predict.

    Attributes
    ----------
    eigenvalues : ndarray
        ``λ_1 ≥ λ_2 ≥ …`` of ``W^{1/2} K W^{1/2}`` (their sum is the i.i.d. variance ``V``).
    decay, decay_se : float
        ``s`` of ``λ_m ~ m^{-s}`` fitted by least squares in log–log on ``m ∈ fit_range`` and its
        jackknife SE over blocks of contexts.
    decay_interval : tuple of float
        ``s ± 1.96 SE``.
    fit_range : tuple of int
        The first and last ``m`` of the fit.
    effective_rank : float
        ``(Σλ)² / Σλ²``: the crossover depth beyond which balanced points reach ``L^{-2}``.
    alpha_predicted : float
        ``clip(s, 1, 2)``: the exponent of ``R*_L − R*_∞`` for balanced points below the crossover.
    alpha_interval : tuple of float
        ``clip`` of the decay interval.

    References
    ----------
    Paper eqs. (16), (60)-(63); derivation page ``bracket`` (steps iii-iv).

    Examples
    --------
    >>> ks = kernel_spectrum(np.random.default_rng(0).standard_normal((512, 3)), np.ones(3) / 3)
    >>> ks.eigenvalues.size, ks.alpha_interval[0] <= ks.alpha_predicted <= ks.alpha_interval[1]
    (3, True)
    """

    eigenvalues: np.ndarray
    decay: float
    decay_se: float
    decay_interval: tuple
    fit_range: tuple
    effective_rank: float
    alpha_predicted: float
    alpha_interval: tuple


def _decay_fit(eigenvalues: np.ndarray, first: int, last: int) -> float:
    m = np.arange(first, last + 1)
    lam = np.maximum(eigenvalues[first - 1:last], 1e-300)
    slope = np.polyfit(np.log(m), np.log(lam), 1)[0]
    return float(-slope)


def _operator_eigenvalues(reads: np.ndarray, weights: np.ndarray) -> np.ndarray:
    mean = reads @ weights
    centred = reads - mean[:, None]
    K = centred.T @ centred / reads.shape[0]
    root = np.sqrt(weights)
    lam = np.linalg.eigvalsh(root[:, None] * K * root[None, :])[::-1]
    return np.maximum(lam, 0.0)


def kernel_spectrum(reads, weights, *, blocks: int = 16, fit_range=None, floor: float = 1e-3) -> KernelSpectrum:
    """Eigenvalues of the centred head kernel on ``L²(μ)``, their decay exponent and the α it predicts.

    Parameters
    ----------
    reads : array_like, shape (n, m)
        ``u_{D_j}`` of the ``m`` atoms on ``n`` contexts (independent of the fit: the report set).
    weights : array_like, shape (m,)
        ``μ``'s weights (normalised here).
    blocks : int
        Jackknife groups of contexts for the decay's SE.
    fit_range : (int, int), optional
        The ``m`` range of the log–log fit; default from ``m = 2`` (``1`` if fewer than 4 eigenvalues
        qualify) to the last ``m`` with ``λ_m ≥ floor λ_1``, at most half the atoms and at least 3.
    floor : float
        The relative eigenvalue floor of the default range.

    Returns
    -------
    KernelSpectrum

    References
    ----------
    Paper eqs. (16), (60)-(63); derivation page ``bracket`` (steps iii-iv).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> scales = np.arange(1, 41) ** -1.0          # λ_m ∝ m^{-2}: features with amplitudes m^{-1}
    >>> reads = rng.standard_normal((20000, 40)) * scales
    >>> ks = kernel_spectrum(reads, np.ones(40))
    >>> 1.6 < ks.decay < 2.4, ks.alpha_predicted <= 2.0
    (True, True)
    """
    U = np.asarray(reads, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if U.ndim != 2 or w.shape != (U.shape[1],):
        raise ValueError(f"reads must be (n, m) and weights (m,); got {U.shape} and {w.shape}")
    if np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative and not all 0; got {w!r}")
    blocks = check_positive_int("blocks", blocks, minimum=2)
    if U.shape[0] < 2 * blocks:
        raise ValueError(f"reads must have at least 2 * blocks = {2 * blocks} contexts; got {U.shape[0]}")
    w = w / w.sum()
    lam = _operator_eigenvalues(U, w)
    m = lam.size
    if fit_range is None:
        above = int(np.sum(lam >= floor * lam[0])) if lam[0] > 0 else 1
        last = max(min(above, m // 2), min(3, m))
        first = 2 if last >= 4 else 1
    else:
        first, last = (int(v) for v in fit_range)
        if not 1 <= first < last <= m:
            raise ValueError(f"fit_range must satisfy 1 <= first < last <= {m}; got {fit_range!r}")
    if last <= first:  # one or two atoms: no decay to fit
        s, se = float("inf"), 0.0
    else:
        s = _decay_fit(lam, first, last)
        group = np.arange(U.shape[0]) % blocks
        jack = np.array([_decay_fit(_operator_eigenvalues(U[group != b], w), first, last) for b in range(blocks)])
        se = float(np.sqrt((blocks - 1) / blocks * np.sum((jack - jack.mean()) ** 2)))
    interval = (s - 1.96 * se, s + 1.96 * se)
    total, squares = float(lam.sum()), float(np.sum(lam**2))
    eff = total * total / squares if squares > 0 else 0.0
    clip = lambda x: float(min(max(x, 1.0), 2.0))  # noqa: E731 -- i.i.d. reaches α = 1; equal weights at most 2
    return KernelSpectrum(eigenvalues=lam, decay=s, decay_se=se, decay_interval=interval,
                          fit_range=(first, last), effective_rank=eff, alpha_predicted=clip(s),
                          alpha_interval=(clip(interval[0]), clip(interval[1])))


def herding_excess(reads, weights, depths, gain: float = 1.0) -> np.ndarray:
    """``g²`` times the squared equal-weight quadrature error of kernel herding of ``μ`` at each depth.

    Herding picks, one point at a time, the atom that minimises the squared distance
    ``E(ū_L − E_μ u)²`` of the running equal-weight average (points may repeat): the balanced-points
    excess of step (iii) of the derivation, computed on the contexts given.

    Parameters
    ----------
    reads : array_like, shape (n, m)
    weights : array_like, shape (m,)
    depths : sequence of int
        Increasing depths ``L`` at which the error is recorded.
    gain : float

    Returns
    -------
    ndarray, one value per depth

    References
    ----------
    Paper eq. (60); derivation page ``bracket`` (steps iii-iv).

    Examples
    --------
    >>> reads = np.array([[1.0, -1.0], [2.0, 0.0]])
    >>> herding_excess(reads, [0.5, 0.5], [1, 2]).tolist()    # two points reach the mean exactly
    [1.0, 0.0]
    """
    U = np.asarray(reads, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    w = w / w.sum()
    depths = [check_positive_int("depths", int(L)) for L in depths]
    K = U.T @ U / U.shape[0]
    target = K @ w            # E[u_j m_μ]
    mm = float(w @ K @ w)     # E m_μ²
    cross = np.zeros(K.shape[0])  # Σ_ℓ K(j, D_ℓ)
    total_kk, total_t = 0.0, 0.0  # Σ_ℓℓ' K, Σ_ℓ target
    out, L = [], 0
    for depth in sorted(depths):
        while L < depth:
            L += 1
            # ‖(S + u_j)/L − m‖² as a function of j, for the running sum S of chosen reads
            err = (total_kk + 2 * cross + np.diag(K)) / L**2 - 2 * (total_t + target) / L + mm
            j = int(np.argmin(err))
            total_kk += 2 * cross[j] + K[j, j]
            total_t += target[j]
            cross += K[:, j]
        out.append(gain**2 * max(total_kk / L**2 - 2 * total_t / L + mm, 0.0))
    return np.array(out)
