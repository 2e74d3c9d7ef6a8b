"""The Frank–Wolfe oracle of :mod:`theory.mixture_limit`: the form ``D`` that best answers a residual.

One iteration of Frank–Wolfe over measures of forms asks for ``argmin_D E[r u_D]`` against the current
residual ``r = g E_μ u − y*``. :func:`best_response` searches for it by batched Adam from many restarts
(cosine heads ``τ I``, random general forms, perturbed atoms of the current measure), with the analytic
gradient of :func:`read_gradient`; :func:`slide_atoms` moves all atoms of a measure at fixed weights (the
optional *sliding* step). Split from :mod:`theory.mixture_limit` because the search is its own job: the
module there runs Frank–Wolfe, brackets ``R*_∞`` and ships the results.
"""

from __future__ import annotations

import numpy as np

from theory.head_families import Contexts, draw_contexts, form_reads  # noqa: F401 (draw_contexts: the examples)
from theory.validation import check_dtype, check_generator

__all__ = ["read_gradient", "best_response", "slide_atoms"]

#: starting temperatures of the oracle's cosine restarts (the range the shipped U_L's heads use)
_RESTART_TAUS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0)

#: floats of the (chunk, restarts, P) softmax held at a time in the oracle
_CHUNK_FLOATS = 1 << 22


def read_gradient(forms, contexts: Contexts, residual, *, rows=None, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """``φ(D) = mean_n r_n u_D(n)`` for a batch of forms, and its analytic gradient with respect to ``D``.

    ``∂u_D/∂D = x̂_test (Σ_j p_j (y_j − u_D) x̂_j)ᵀ`` with ``p = softmax_j(x̂_testᵀ D x̂_j)``, so
    ``∇φ = mean_n r_n x̂_test (Σ_j p_j (y_j − u_D) x̂_j)ᵀ``. Logits and softmax in float32, the
    means accumulated in float64.

    Parameters
    ----------
    forms : array_like, shape (B, d, d)
    contexts : Contexts
    residual : array_like, shape (n,)
        ``r``, one value per context.
    rows : array_like of int, optional
        Use only these contexts (a minibatch).
    dtype : {numpy.float32, numpy.float64}
        Precision of the logits and the softmax (float64 for the finite-difference check).

    Returns
    -------
    (phi, grad) : ndarray (B,) float64, ndarray (B, d, d) float64

    References
    ----------
    Paper eqs. (9)-(10), (60) (the head and its logits).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 64, 0)
    >>> phi, grad = read_gradient(3 * np.eye(4)[None], c, np.ones(64))
    >>> bool(np.isclose(phi[0], form_reads(3 * np.eye(4)[None], c, dtype=np.float64).mean(), rtol=1e-5))
    True
    """
    dtype = check_dtype(dtype)
    D = np.asarray(forms, dtype=dtype)
    n_all, P, d = contexts.context_unit.shape
    if D.ndim != 3 or D.shape[1:] != (d, d):
        raise ValueError(f"forms must have shape (B, {d}, {d}); got {D.shape}")
    r = np.asarray(residual, dtype=np.float64)
    if r.shape != (n_all,):
        raise ValueError(f"residual must have shape ({n_all},) (one value per context); got {r.shape}")
    idx = np.arange(n_all) if rows is None else np.asarray(rows)
    B = D.shape[0]
    phi = np.zeros(B)
    grad = np.zeros((B, d, d))
    chunk = max(1, _CHUNK_FLOATS // (B * P))
    for start in range(0, idx.size, chunk):
        sel = idx[start:start + chunk]
        X = contexts.context_unit[sel].astype(dtype)
        T = contexts.test_unit[sel].astype(dtype)
        Y = contexts.labels[sel].astype(dtype)
        rr = r[sel].astype(dtype)
        S = np.matmul(np.einsum("nd,bde->nbe", T, D), X.transpose(0, 2, 1))  # (n, B, P) logits x̂_testᵀ D x̂_j
        S -= S.max(axis=2, keepdims=True)
        np.exp(S, out=S)
        S /= S.sum(axis=2, keepdims=True)
        u = np.einsum("nbp,np->nb", S, Y)
        phi += r[sel] @ u.astype(np.float64)
        S *= Y[:, None, :] - u[:, :, None]
        S *= rr[:, None, None]
        V = np.matmul(S, X)  # (n, B, d): r Σ_j p_j (y_j − u) x̂_j
        grad += np.einsum("nd,nbe->bde", T.astype(np.float64), V.astype(np.float64))
    return phi / idx.size, grad / idx.size


def _adam(D0: np.ndarray, contexts: Contexts, residual: np.ndarray, steps: int, lr: np.ndarray, batch: int | None,
          rng: np.random.Generator) -> np.ndarray:
    """Batched Adam on ``φ`` from each start (per-start step sizes ``lr``, cosine-decayed to lr/20)."""
    D = D0.astype(np.float64).copy()
    m = np.zeros_like(D)
    v = np.zeros_like(D)
    b1, b2, eps = 0.9, 0.999, 1e-12
    n = contexts.n
    for t in range(1, steps + 1):
        rows = None if batch is None or batch >= n else rng.choice(n, size=batch, replace=False)
        _, g = read_gradient(D, contexts, residual, rows=rows)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        rate = lr * (0.05 + 0.95 * 0.5 * (1 + np.cos(np.pi * (t - 1) / steps)))
        D -= rate[:, None, None] * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return D


def _restarts(atoms: np.ndarray, weights: np.ndarray, d: int, n_random: int, n_perturbed: int,
              rng: np.random.Generator) -> np.ndarray:
    """Starting forms: cosine heads τ I, random general forms τ(I + σ Z/√d), perturbed heavy atoms."""
    starts = [tau * np.eye(d) for tau in _RESTART_TAUS]
    for _ in range(n_random):
        tau = float(np.exp(rng.uniform(np.log(2.0), np.log(256.0))))
        sigma = float(rng.uniform(0.1, 1.0))
        starts.append(tau * (np.eye(d) + sigma * rng.standard_normal((d, d)) / np.sqrt(d)))
    if atoms.shape[0]:
        order = np.argsort(-weights)
        for i in range(n_perturbed):
            A = atoms[order[i % order.size]]
            scale = np.linalg.norm(A) / d
            starts.append(A + float(rng.uniform(0.05, 0.5)) * scale * rng.standard_normal((d, d)))
    return np.stack(starts)


def best_response(contexts: Contexts, residual, *, select=None, atoms=None, weights=None, rng=0,
                  n_random: int = 8, n_perturbed: int = 8, steps: int = 64, batch: int = 1024, polish: int = 3,
                  polish_steps: int = 16) -> tuple[np.ndarray, float]:
    """The form ``D`` minimising ``φ(D) = E[r u_D]`` found by a batched multi-restart Adam search.

    Restarts: cosine heads ``τ I`` at the temperatures ``2 … 256``, ``n_random`` random general forms
    ``τ(I + σ Z/√d)``, ``n_perturbed`` perturbations of the heaviest ``atoms``. All restarts run ``steps``
    Adam steps together on minibatches of ``batch`` of ``contexts`` (the search pool); the ``polish``
    best then run ``polish_steps`` steps on minibatches of ``4 batch``; the candidate with the lowest
    ``φ`` on ``select`` (an independent set, e.g. the Frank–Wolfe fit set; default the pool) is returned
    with that ``φ``. A heuristic: the returned ``φ`` is an upper bound on ``min_D φ``, so a gap computed
    from it is a lower bound on the true gap.

    Parameters
    ----------
    contexts : Contexts
        The search pool.
    residual : array_like, shape (n,)
        ``r`` on the pool.
    select : (Contexts, array_like), optional
        Contexts and residual on which the candidates are compared and ``φ`` is returned.
    atoms : ndarray (m, d, d), optional
    weights : ndarray (m,), optional
    rng : numpy.random.Generator or int
    n_random, n_perturbed, steps, batch, polish, polish_steps : int

    Returns
    -------
    (form, phi) : ndarray (d, d), float

    References
    ----------
    Paper eqs. (9)-(10), (60); derivation page ``bracket``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 128, 0)
    >>> D, phi = best_response(c, -c.target, steps=5, polish_steps=2, n_random=1, n_perturbed=0)
    >>> D.shape, phi < 0
    ((4, 4), True)
    """
    rng = check_generator(rng, "rng", allow_seed=True)
    d = contexts.test_unit.shape[1]
    r = np.asarray(residual, dtype=np.float64)
    atoms = np.zeros((0, d, d)) if atoms is None else np.asarray(atoms, dtype=np.float64)
    weights = np.zeros(0) if weights is None else np.asarray(weights, dtype=np.float64)
    starts = _restarts(atoms, weights, d, n_random, n_perturbed, rng)
    lr = 0.03 * np.maximum(np.linalg.norm(starts, axis=(1, 2)) / np.sqrt(d), 1.0)
    D = _adam(starts, contexts, r, steps, lr, batch, rng)
    phi, _ = read_gradient(D, contexts, r)
    top = np.argsort(phi)[:polish]
    D2 = _adam(D[top], contexts, r, polish_steps, lr[top] / 5, 4 * batch, rng)
    candidates = np.concatenate([D[top], D2])
    sel_contexts, sel_residual = (contexts, r) if select is None else select
    values, _ = read_gradient(candidates, sel_contexts, sel_residual)
    best = int(np.argmin(values))
    return candidates[best], float(values[best])


def _subset(contexts: Contexts, rows) -> Contexts:
    return Contexts(contexts.context_unit[rows], contexts.test_unit[rows], contexts.labels[rows], contexts.target[rows])


def slide_atoms(forms: np.ndarray, coef: np.ndarray, contexts: Contexts, steps: int, batch: int,
                rng: np.random.Generator) -> np.ndarray:
    """Adam on all atoms' forms at fixed coefficients ``c`` (the sliding step of Frank–Wolfe).

    The loss ``F = E(Σ_j c_j u_{D_j} − y*)²`` has ``∇_{D_j} F = 2 c_j E[r ∂u_j]`` with ``r`` the residual; each
    step uses a minibatch of ``batch`` contexts.

    Parameters
    ----------
    forms : ndarray, shape (m, d, d)
    coef : ndarray, shape (m,)
        ``c = g w``, held fixed.
    contexts : Contexts
    steps, batch : int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray, shape (m, d, d)
        The moved forms (``forms`` is not changed).

    References
    ----------
    Paper eq. (60) (the mixture read through ``g E_μ u_D``).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 128, 0)
    >>> moved = slide_atoms(4 * np.eye(4)[None], np.ones(1), c, 2, 64, np.random.default_rng(0))
    >>> moved.shape, bool(np.isfinite(moved).all())
    ((1, 4, 4), True)
    """
    D = forms.astype(np.float64).copy()
    m = np.zeros_like(D)
    v = np.zeros_like(D)
    b1, b2, eps = 0.9, 0.999, 1e-12
    lr = 0.005 * np.maximum(np.linalg.norm(D, axis=(1, 2)) / np.sqrt(D.shape[1]), 1.0)
    for t in range(1, steps + 1):
        sub = _subset(contexts, rng.choice(contexts.n, size=min(batch, contexts.n), replace=False))
        r = form_reads(D, sub) @ coef - sub.target
        _, g = read_gradient(D, sub, r)
        g *= coef[:, None, None]
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        D -= lr[:, None, None] * (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    return D
