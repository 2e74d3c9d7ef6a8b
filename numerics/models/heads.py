"""Averages of heads (cosine heads, any forms) as weights of the controlled softmax models (paper eqs. 59-60).

The controlled model of depth L is a mixture of heads: ``ŷ_L = (1/L) Σ_ℓ g p_ℓ·y`` with
``g = W_o W_v W_y`` and ``p_ℓ`` the test row of layer ℓ's softmax (eq. 60). A head of
inverse temperature ``τ`` over the exact cosine, ``u_τ = softmax(τ cos(x_j, x_test))·y``, is
one such layer when

* ``W_x = c U`` with ``U`` (N × d) orthonormal columns orthogonal to the all-ones vector:
  LayerNorm's centring is then a no-op and ``ĥ_j = x_j / sqrt(c²|x_j|²/N + eps) · c``,
  i.e. ``ĥ_j ≈ sqrt(N) x_j / |x_j|`` (exactly so as ``eps/c² → 0``); RMSNorm does the same
  without the orthogonality;
* ``W_q^ℓ = W_k^ℓ = sqrt(τ_ℓ / N) I``, so the logit ``ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j = τ_ℓ cos``.

So the average of heads behind the bound ``B_L`` of :mod:`theory.softmax_bounds`
(:class:`theory.softmax_bounds.HeadAllocation`) is a depth-L model of the class, and ``B_L``
is a loss the model reaches, not only a ceiling. With LayerNorm this needs ``N > d``: at
``N = d`` every ``d`` orthonormal columns span all of ``R^N`` and cannot avoid the all-ones
direction, so the centring removes a direction of ``x`` and no weights give the exact cosine.

Any head is a form (:mod:`theory.head_families`): a ``d × d`` matrix ``D`` with
``u_D = softmax_j(x̂_testᵀ D x̂_j)·y``, ``x̂ = x/|x|``, the cosine head being ``D = τ I``.
With the same ``W_x = c U`` the pre-normed tokens are ``ĥ ≈ sqrt(N) U x̂``, and the test
token is the query of eq. (10), so the logit is ``N x̂_testᵀ Uᵀ (W_q^ℓ)ᵀ W_k^ℓ U x̂_j``;

* ``W_q^ℓ = I / sqrt(N)``, ``W_k^ℓ = U D_ℓ Uᵀ / sqrt(N)`` make it ``x̂_testᵀ D_ℓ x̂_j``
  for any ``D_ℓ`` (not only ``τ I``, not only symmetric; no transpose is needed)
  (:func:`form_average_params`).

So every average of heads of :mod:`theory.head_families` (atoms, random and fitted forms, and
their combinations) is a depth-L model of the class at ``N > d``.

The LayerNorm's ``eps`` (:data:`numerics.models.LAYER_NORM_EPS`) makes the logits
``τ cos · (1 + O(eps N / (c² |x|²)))`` (``x̂_testᵀ D x̂_j`` times the same factor for a form);
``x_scale = c`` pushes that below round-off (``tests/test_heads.py`` checks both the exact-eps
equality and the cosine limit, ``tests/test_form_heads.py`` the forms).
"""

from __future__ import annotations

import numpy as np

from theory.validation import (
    check_choice,
    check_dtype,
    check_finite_array,
    check_generator,
    check_positive,
    check_positive_int,
    check_real,
)

__all__ = ["HEAD_MODELS", "form_average_params", "head_average_params", "orthonormal_centred"]

#: the models whose layers are softmax heads over the pre-normed input stream, with their pre-norm
HEAD_MODELS = {"nonlinear": "layer", "nonlinear_rms": "rms"}


def orthonormal_centred(N: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``d`` orthonormal columns in ``R^N`` orthogonal to the all-ones vector (needs ``N > d``), shape ``(N, d)``.

    References
    ----------
    Paper eq. (9) (the pre-norm whose centring these columns make a no-op).

    Examples
    --------
    >>> U = orthonormal_centred(5, 3, np.random.default_rng(0))
    >>> bool(np.allclose(U.T @ U, np.eye(3))), bool(np.allclose(U.sum(axis=0), 0))
    (True, True)
    """
    N = check_positive_int("N", N)
    d = check_positive_int("d", d)
    if N <= d:
        raise ValueError(f"N must be > d for d columns orthogonal to the all-ones vector; got N={N}, d={d}")
    rng = check_generator(rng)
    start = np.column_stack([np.ones(N) / np.sqrt(N), rng.standard_normal((N, d))])
    q, r = np.linalg.qr(start)
    q = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    return q[:, 1:]


def head_average_params(allocation, d: int, N: int, rng: np.random.Generator, *, model: str = "nonlinear",
                        dtype=np.float64, x_scale: float = 1.0) -> dict:
    """Weights of ``model`` that compute ``allocation``'s average of cosine heads (paper eq. 60).

    Parameters
    ----------
    allocation : theory.softmax_bounds.HeadAllocation
        Temperatures, layer counts (``Σ counts = L``) and the common gain ``g``.
    d, N : int
        Input dimension and hidden width: ``N > d`` for ``model='nonlinear'`` (LayerNorm,
        see the module docstring), ``N >= d`` for ``'nonlinear_rms'``.
    rng : numpy.random.Generator
        Draws ``W_x``'s orthonormal basis and the unit vector ``W_y``.
    model : {'nonlinear', 'nonlinear_rms'}
    dtype : {numpy.float64, numpy.float32}
    x_scale : float, default 1
        ``c`` in ``W_x = c U``: the pre-norm is scale-free but for its ``eps``; a large ``c``
        makes the logits exact cosines to round-off (training from such weights moves
        ``W_x`` by a relative ``lr / c`` per step, so the study keeps ``c = 1``).

    Returns
    -------
    dict
        ``W_x, W_y, W_q, W_k, W_v, W_o`` with ``W_q^ℓ = W_k^ℓ = sqrt(τ_ℓ/N) I``, ``W_v = I``,
        ``W_o = g W_yᵀ``.

    Raises
    ------
    ValueError
        ``N <= d`` with LayerNorm, ``N < d``, an allocation with cosine similarity missing, an unknown model.

    References
    ----------
    Paper eqs. (8)-(10), (59)-(60).

    Examples
    --------
    >>> from theory.softmax_bounds import HeadAllocation
    >>> heads = HeadAllocation(depth=3, temperatures=(4.0, 16.0), counts=(1, 2), gain=1.2)
    >>> p = head_average_params(heads, 2, 4, np.random.default_rng(0))
    >>> p["W_q"].shape, round(float((p["W_o"] @ p["W_v"] @ p["W_y"]).item()), 12)
    ((3, 4, 4), 1.2)
    """
    model = check_choice("model", model, HEAD_MODELS)
    d = check_positive_int("d", d)
    N = check_positive_int("N", N)
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    x_scale = check_positive("x_scale", x_scale)
    _check_width(model, d, N)
    if getattr(allocation, "similarity", "cosine") != "cosine":
        raise ValueError(f"allocation must be of cosine heads; got similarity={allocation.similarity!r}")
    taus = allocation.layer_temperatures()
    basis, W_y = _input_basis_and_readout(model, N, d, rng)
    qk = np.sqrt(taus / N)[:, None, None] * np.eye(N)
    params = {"W_x": x_scale * basis, "W_y": W_y, "W_q": qk, "W_k": qk.copy(), "W_v": np.eye(N),
              "W_o": allocation.gain * W_y.T}
    return {key: np.require(value, dtype=dtype, requirements="C") for key, value in params.items()}


def form_average_params(forms, gain: float, d: int, N: int, rng: np.random.Generator, *, model: str = "nonlinear",
                        dtype=np.float64, x_scale: float = 1.0) -> dict:
    """Weights of ``model`` computing ``g (1/L) Σ_ℓ softmax_j(x̂_testᵀ D_ℓ x̂_j)·y`` for any forms ``D_ℓ``.

    The average of heads of :mod:`theory.head_families` (:func:`theory.head_families.form_reads`)
    as a depth-L model: ``W_x = c U`` (``U`` orthonormal, orthogonal to the all-ones vector for
    LayerNorm), ``W_q^ℓ = I/sqrt(N)``, ``W_k^ℓ = U D_ℓ Uᵀ/sqrt(N)``, so the logit of eq. (10),
    ``ĥ_testᵀ (W_q^ℓ)ᵀ W_k^ℓ ĥ_j`` with ``ĥ ≈ sqrt(N) U x̂``, is ``x̂_testᵀ D_ℓ x̂_j`` (see the
    module docstring).

    Parameters
    ----------
    forms : array_like, shape (L, d, d)
        One finite form per layer, any real matrices (``τ I`` is the cosine head of temperature ``τ``).
    gain : float
        The common gain ``g = W_o W_v W_y`` (eq. 60), any finite real.
    d, N : int
        Input dimension and hidden width: ``N > d`` for ``model='nonlinear'`` (LayerNorm),
        ``N >= d`` for ``'nonlinear_rms'``.
    rng : numpy.random.Generator
        Draws ``W_x``'s orthonormal basis and the unit vector ``W_y``.
    model : {'nonlinear', 'nonlinear_rms'}
    dtype : {numpy.float64, numpy.float32}
    x_scale : float, default 1
        ``c`` in ``W_x = c U``; a large ``c`` makes the logits exact to round-off despite the
        norm's ``eps`` (as in :func:`head_average_params`).

    Returns
    -------
    dict
        ``W_x, W_y, W_q, W_k, W_v, W_o`` with ``W_v = I`` and ``W_o = g W_yᵀ``.

    Raises
    ------
    ValueError
        ``forms`` not of shape ``(L, d, d)`` with ``L >= 1`` or not finite, a non-finite ``gain``,
        ``N <= d`` with LayerNorm, ``N < d``, an unknown model.

    References
    ----------
    Paper eqs. (8)-(10), (59)-(60).

    Examples
    --------
    >>> forms = np.array([[[2.0, 1.0], [0.0, 3.0]], 4.0 * np.eye(2)])   # a non-symmetric form and a cosine head
    >>> p = form_average_params(forms, 1.5, 2, 4, np.random.default_rng(0))
    >>> U = p["W_x"]                                                       # x_scale = 1: W_x = U
    >>> bool(np.allclose(4 * U.T @ p["W_q"][0].T @ p["W_k"][0] @ U, forms[0]))   # N Uᵀ W_qᵀ W_k U = D
    True
    >>> p["W_q"].shape, round(float((p["W_o"] @ p["W_v"] @ p["W_y"]).item()), 12)
    ((2, 4, 4), 1.5)
    """
    model = check_choice("model", model, HEAD_MODELS)
    d = check_positive_int("d", d)
    N = check_positive_int("N", N)
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    x_scale = check_positive("x_scale", x_scale)
    gain = check_real("gain", gain)
    forms = check_finite_array("forms", forms, ndim=3)
    if forms.shape[1:] != (d, d):
        raise ValueError(f"forms must have shape (L, {d}, {d}) for inputs of dimension d = {d}; got {forms.shape}")
    _check_width(model, d, N)
    basis, W_y = _input_basis_and_readout(model, N, d, rng)
    W_q = np.repeat(np.eye(N)[None] / np.sqrt(N), forms.shape[0], axis=0)
    W_k = basis @ forms @ basis.T / np.sqrt(N)  # (L, N, N): U D_ℓ Uᵀ / sqrt(N)
    params = {"W_x": x_scale * basis, "W_y": W_y, "W_q": W_q, "W_k": W_k, "W_v": np.eye(N), "W_o": gain * W_y.T}
    return {key: np.require(value, dtype=dtype, requirements="C") for key, value in params.items()}


def _check_width(model: str, d: int, N: int) -> None:
    """Refuse a width ``N`` at which ``model``'s pre-norm cannot keep the ``d`` input directions."""
    if HEAD_MODELS[model] == "layer" and N <= d:
        raise ValueError(f"N must be > d = {d} for LayerNorm heads over the exact cosine (at N = d the centring "
                         f"removes one direction of x); got N={N}")
    if N < d:
        raise ValueError(f"N must be >= d = {d}; got N={N}")


def _input_basis_and_readout(model: str, N: int, d: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``U`` (N, d), orthonormal columns (orthogonal to the ones vector for LayerNorm), and a unit ``W_y`` (N, 1)."""
    if HEAD_MODELS[model] == "layer":
        basis = orthonormal_centred(N, d, rng)
    else:
        q, r = np.linalg.qr(rng.standard_normal((N, d)))
        basis = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    W_y = rng.standard_normal((N, 1))
    W_y /= np.linalg.norm(W_y)
    return basis, W_y
