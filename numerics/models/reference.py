"""The five models as the paper writes them: eqs. (7)-(12), masks (75)-(77), appendix C.1-C.3.

Slow, literal transcriptions with the full ``(P+1) x (P+1)`` attention, one line per
equation, for checking the fast engines (``forward`` of each model module equals the
function here to round-off). The norm and the masked softmax are written here plainly
-- a textbook LayerNorm and a textbook masked softmax -- independently of the engines'
:mod:`numerics.models._common`, so that check covers them too. Only the modelling
choices are shared: the norm has no gain or bias and ``eps =`` :data:`LAYER_NORM_EPS`.

Tokens are columns (eq. 7): ``X = [x_1..x_P, x_test] ∈ R^{d×(P+1)}``,
``y_in = (y_1..y_P, 0)``; rows of a mask are receiving tokens, its last row and column the
test token (eqs. 75-77):

    M_linear = [[−1_P 1_Pᵀ, 0], [1_Pᵀ, 0]],   M(0) = [[0, 0], [1_Pᵀ, 0]],   M(m) = [[m 1_P 1_Pᵀ, 0], [1_Pᵀ, 0]].

==========================  ====================================================================
:func:`linear`              ``H_x = W_x X`` fixed, ``A^ℓ = (1/(P N)) M_linear ⊙ ((Q^ℓ)ᵀK^ℓ)`` (eq. 11)
:func:`nonlinear`           ``Ĥ_x = norm(H_x)``, ``A^ℓ = M(0) ⊙ softmax((Q^ℓ)ᵀK^ℓ)`` (eqs. 9-10)
:func:`single_stream`       one stream ``H^0 = W_x X + W_y y_in``, Q, K, V from ``norm(H^{ℓ−1})`` (C.1)
:func:`untied_values`       as nonlinear with ``V^ℓ = W_v^ℓ H_y^{ℓ−1}`` (C.2, eq. 71)
:func:`context_updates`     as nonlinear with ``M(m)``, a learned scalar ``m`` (C.3, eq. 77)
==========================  ====================================================================

Every layer is the residual update ``H_y^ℓ = H_y^{ℓ−1} + (1/L) V^ℓ (A^ℓ)ᵀ`` and the
read-out is ``ŷ_L = W_o h^L_{y,test}`` (eq. 12). Each function takes ``(params, batch)``
-- the model's parameter dict (its ``param_shapes``) and a :class:`numerics.tasks.Batch`
-- and returns ``ŷ_L``, shape (B,). Each model module exposes its function here as
``reference_forward``; its fast ``forward`` must agree to round-off:

>>> from numerics.models import MODELS
>>> from numerics.tasks import sample
>>> from theory import PowerLawSpectrum
>>> batch = sample("difficult", PowerLawSpectrum(0.5, 1, 3), 5, 2, np.random.default_rng(0))
>>> for name, model in MODELS.items():
...     p = model.init_params(3, 4, 2, np.random.default_rng(1), qk_init="gaussian", value_init="gaussian")
...     assert np.allclose(model.reference_forward(p, batch), model.forward(p, batch).prediction), name
"""

from __future__ import annotations

import numpy as np

from theory.validation import check_choice

from ._common import LAYER_NORM_EPS, check_batch, check_params

__all__ = [
    "dense_inputs",
    "attention_mask",
    "allowed_positions",
    "norm",
    "rms_norm",
    "masked_softmax",
    "linear",
    "nonlinear",
    "nonlinear_rms",
    "single_stream",
    "untied_values",
    "context_updates",
]


# --------------------------------------------------------------------------- tokens, masks, norm, softmax
def dense_inputs(context_x: np.ndarray, context_y: np.ndarray, test_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The token matrices ``X = [x_1..x_P, x_test]`` (B, d, P+1) and ``y_in = (y_1..y_P, 0)`` (B, 1, P+1).

    References
    ----------
    Paper eq. (7).

    Examples
    --------
    >>> X, y_in = dense_inputs(np.ones((1, 2, 3)), np.ones((1, 2)), np.zeros((1, 3)))
    >>> X.shape, y_in.tolist()
    ((1, 3, 3), [[[1.0, 1.0, 0.0]]])
    """
    X = np.concatenate([context_x, test_x[:, None, :]], axis=1).transpose(0, 2, 1)
    y_in = np.concatenate([context_y, np.zeros_like(context_y[:, :1])], axis=1)[:, None, :]
    return X, y_in


def attention_mask(P: int, m: float, dtype: type = np.float64) -> np.ndarray:
    """The mask ``M(m) = [[m 1_P 1_Pᵀ, 0], [1_Pᵀ, 0]]`` of shape (P+1, P+1).

    ``M(0)`` is the nonlinear model's mask (eq. 76), ``M(−1)`` is ``M_linear`` (eq. 75).

    References
    ----------
    Paper eqs. (75)-(77).

    Examples
    --------
    >>> attention_mask(2, -1.0).tolist()
    [[-1.0, -1.0, 0.0], [-1.0, -1.0, 0.0], [1.0, 1.0, 0.0]]
    """
    M = np.zeros((P + 1, P + 1), dtype=dtype)
    M[:P, :P] = m
    M[P, :P] = 1.0
    return M


def allowed_positions(P: int, mask: str) -> np.ndarray:
    """Where a softmax row runs: the positions the mask allows, shape (P+1, P+1) of bool.

    The test row reads the ``P`` context tokens under both softmax masks; under
    ``"M(m)"`` every context row reads them too (for any value of ``m``, also 0 at
    initialisation); the test column is never read. Under ``"M(0)"`` a context row
    allows nothing, and its softmax is the zero row.

    Parameters
    ----------
    P : int
    mask : {'M(0)', 'M(m)'}

    References
    ----------
    Paper eqs. (9)-(10), (76)-(77).

    Examples
    --------
    >>> allowed_positions(2, "M(0)").astype(int).tolist()
    [[0, 0, 0], [0, 0, 0], [1, 1, 0]]
    >>> allowed_positions(2, "M(m)").astype(int).tolist()
    [[1, 1, 0], [1, 1, 0], [1, 1, 0]]
    """
    check_choice("mask", mask, ("M(0)", "M(m)"))
    allowed = np.zeros((P + 1, P + 1), dtype=bool)
    allowed[P, :P] = True
    if mask == "M(m)":
        allowed[:P, :P] = True
    return allowed


def norm(H: np.ndarray) -> np.ndarray:
    """Textbook LayerNorm of every token (column) of ``H`` (..., N, P+1) over its ``N`` features.

    ``(h − mean(h)) / sqrt(var(h) + eps)`` with the population variance, no gain or bias,
    ``eps =`` :data:`numerics.models.LAYER_NORM_EPS` (the paper writes ``norm(·)`` and
    does not say which).

    References
    ----------
    Paper eq. (9).

    Examples
    --------
    >>> norm(np.array([[1.0, 5.0], [3.0, 5.0]])).round(4).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    mean = H.mean(axis=-2, keepdims=True)
    variance = ((H - mean) ** 2).mean(axis=-2, keepdims=True)
    return (H - mean) / np.sqrt(variance + LAYER_NORM_EPS)


def rms_norm(H: np.ndarray) -> np.ndarray:
    """Textbook parameter-free RMSNorm of every token (column) of ``H`` (..., N, P+1): ``h / sqrt(mean(h²) + eps)``.

    No centring, no gain; ``eps =`` :data:`numerics.models.LAYER_NORM_EPS`. The norm of the
    ``nonlinear_rms`` variant (the paper says only "pre-norm").

    References
    ----------
    Paper eq. (9).

    Examples
    --------
    >>> rms_norm(np.array([[3.0], [4.0]])).round(4).tolist()
    [[0.8485], [1.1314]]
    """
    return H / np.sqrt((H**2).mean(axis=-2, keepdims=True) + LAYER_NORM_EPS)


def masked_softmax(logits: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Softmax of each row over its ``allowed`` positions; other positions, and rows with none allowed, are 0.

    The row maximum over the allowed positions is subtracted before ``exp``, so logits of
    any finite size give finite weights.

    Parameters
    ----------
    logits : ndarray, shape (..., n)
    allowed : ndarray of bool, broadcastable to ``logits``

    References
    ----------
    Paper eqs. (9)-(10) ("softmax taken only over positions the mask allows"), (76)-(77).

    Examples
    --------
    >>> logits = np.array([[3.0, 1e4, 5.0], [1.0, 2.0, 3.0]])
    >>> allowed = np.array([[True, False, True], [False, False, False]])
    >>> masked_softmax(logits, allowed).round(4).tolist()
    [[0.1192, 0.0, 0.8808], [0.0, 0.0, 0.0]]
    """
    allowed = np.broadcast_to(np.asarray(allowed, dtype=bool), logits.shape)
    masked = np.where(allowed, logits, -np.inf)
    row_max = masked.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # a row with nothing allowed
    weights = np.exp(masked - row_max)  # exp(−inf) = 0 where not allowed
    total = weights.sum(axis=-1, keepdims=True)
    return weights / np.where(total > 0, total, 1.0)


def _transpose(A: np.ndarray) -> np.ndarray:
    return np.swapaxes(A, -1, -2)


def _readout(W_o: np.ndarray, H: np.ndarray) -> np.ndarray:
    """``ŷ_L = W_o h^L_test``, the test column of the last state (eq. 12); shape (B,)."""
    return (W_o @ H[:, :, -1:])[:, 0, 0]


# --------------------------------------------------------------------------- the five models
def linear(params: dict, batch) -> np.ndarray:
    """Deep linear attention, eqs. (7)-(8), (11)-(12) with ``M_linear`` (eq. 75); no norm.

    References
    ----------
    Paper eqs. (7)-(8), (11)-(12), (75).

    Examples
    --------
    >>> from numerics.models import linear as model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 4), 6, 2, rng)
    >>> p = model.init_params(4, 4, 3, rng, qk_scale=8.0)
    >>> np.allclose(linear(p, batch), model.forward(p, batch).prediction)
    True
    """
    d, N, L, dtype = check_params(params, model="linear", mask="M_linear")
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H_x = W_x @ X  # eq. (8); fixed and not normed (eq. 11 states no norm)
    H_y = W_y @ y_in  # eq. (8)
    M = attention_mask(P, -1.0, dtype)  # M_linear, eq. (75)
    for ell in range(L):
        Q, K, V = W_q[ell] @ H_x, W_k[ell] @ H_x, W_v @ H_y
        A = M * (_transpose(Q) @ K) / (P * N)  # eq. (11)
        H_y = H_y + (V @ _transpose(A)) / L  # eq. (11), residual with 1/L
    return _readout(W_o, H_y)  # eq. (12)


def _two_stream_softmax(params: dict, batch, model: str, *, values: str, mask: str, prenorm=norm) -> np.ndarray:
    """Eqs. (8)-(10), (12): fixed pre-normed input stream, label stream updated by masked softmax attention.

    ``values="untied"`` reads ``W_v^ℓ`` (eq. 71); ``mask="M(m)"`` uses ``M(m)`` with the
    learned ``params["m"]`` (eq. 77) instead of ``M(0)`` (eq. 76).
    """
    d, N, L, dtype = check_params(params, model=model, values=values, mask=mask)
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H_x = W_x @ X  # eq. (8), fixed across layers
    H_y = W_y @ y_in  # eq. (8)
    H_x_hat = prenorm(H_x)  # pre-norm on the input stream, eq. (9)
    m = params["m"].item() if mask == "M(m)" else 0.0
    M = attention_mask(P, m, dtype)  # M(0), eq. (76), or M(m), eq. (77)
    allowed = allowed_positions(P, mask)
    for ell in range(L):
        Q = W_q[ell] @ H_x_hat  # eq. (9)
        K = W_k[ell] @ H_x_hat  # eq. (9)
        V = (W_v[ell] if values == "untied" else W_v) @ H_y  # eq. (9); W_v^ℓ of eq. (71)
        A = M * masked_softmax(_transpose(Q) @ K, allowed)  # eq. (10)
        H_y = H_y + (V @ _transpose(A)) / L  # eq. (10)
    return _readout(W_o, H_y)  # eq. (12)


def nonlinear(params: dict, batch) -> np.ndarray:
    """The controlled softmax model, eqs. (7)-(10), (12) with ``M(0)`` (eq. 76): context states stay frozen.

    So the layers act in parallel (eqs. 59-60): ``L`` layers with the same ``W_q, W_k``
    predict what one of them does.

    References
    ----------
    Paper eqs. (7)-(10), (12), (59), (76).

    Examples
    --------
    >>> from numerics.models import nonlinear as model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, np.random.default_rng(0))
    >>> one = model.init_params(4, 4, 1, np.random.default_rng(1))
    >>> three = dict(one, W_q=np.repeat(one["W_q"], 3, axis=0), W_k=np.repeat(one["W_k"], 3, axis=0))
    >>> np.allclose(nonlinear(three, batch), nonlinear(one, batch))
    True
    """
    return _two_stream_softmax(params, batch, "nonlinear", values="tied", mask="M(0)")


def nonlinear_rms(params: dict, batch) -> np.ndarray:
    """:func:`nonlinear` with :func:`rms_norm` as the pre-norm instead of the LayerNorm :func:`norm`.

    References
    ----------
    Paper eqs. (7)-(10), (12), (76).

    Examples
    --------
    >>> from numerics.models import nonlinear as model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, np.random.default_rng(0))
    >>> nonlinear_rms(model.init_params(4, 8, 2, np.random.default_rng(1)), batch).shape
    (2,)
    """
    return _two_stream_softmax(params, batch, "nonlinear_rms", values="tied", mask="M(0)", prenorm=rms_norm)


def single_stream(params: dict, batch) -> np.ndarray:
    """One residual stream carrying inputs and labels, appendix C.1, eq. (64) with ``M(0)``.

    Which quantities are normed is not in the paper; here standard pre-norm: queries,
    keys and values all come from ``norm(H^{ℓ−1})`` and the stream ``H`` itself, read
    out at the end, is never normed.

    References
    ----------
    Paper eqs. (7), (12), (64)-(66), (76).

    Examples
    --------
    >>> from numerics.models import single_stream as model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> rng = np.random.default_rng(0)
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, rng)
    >>> p = model.init_params(4, 4, 3, rng)
    >>> np.allclose(single_stream(p, batch), model.forward(p, batch).prediction)
    True
    """
    d, N, L, dtype = check_params(params, model="single_stream", mask="M(0)")
    context_x, context_y, test_x, _ = check_batch(batch, d, dtype)
    P = context_y.shape[1]
    W_x, W_y, W_q, W_k, W_v, W_o = (params[k] for k in ("W_x", "W_y", "W_q", "W_k", "W_v", "W_o"))
    X, y_in = dense_inputs(context_x, context_y, test_x)  # eq. (7)
    H = W_x @ X + W_y @ y_in  # eq. (64)
    M, allowed = attention_mask(P, 0.0, dtype), allowed_positions(P, "M(0)")  # eq. (76)
    for ell in range(L):
        H_hat = norm(H)  # pre-norm of the evolving stream
        Q, K, V = W_q[ell] @ H_hat, W_k[ell] @ H_hat, W_v @ H_hat  # C.1: all three from the normed stream
        A = M * masked_softmax(_transpose(Q) @ K, allowed)  # as eq. (10)
        H = H + (V @ _transpose(A)) / L  # as eq. (10), on the one (un-normed) stream
    return _readout(W_o, H)  # eq. (12)


def untied_values(params: dict, batch) -> np.ndarray:
    """The nonlinear model with one value matrix per layer, ``V^ℓ = W_v^ℓ H_y^{ℓ−1}`` (appendix C.2, eq. 71).

    With all ``W_v^ℓ`` equal it is the nonlinear model.

    References
    ----------
    Paper eqs. (7)-(10), (12), (71), (76).

    Examples
    --------
    >>> from numerics.models import untied_values as model
    >>> p = model.init_params(4, 4, 3, np.random.default_rng(1))  # every W_v^ℓ = I
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, np.random.default_rng(0))
    >>> np.allclose(untied_values(p, batch), nonlinear(dict(p, W_v=p["W_v"][0]), batch))
    True
    """
    return _two_stream_softmax(params, batch, "untied_values", values="untied", mask="M(0)")


def context_updates(params: dict, batch) -> np.ndarray:
    """The nonlinear model with the mask ``M(m)`` of eq. (77): context label states update each other with weight ``m``.

    A context row of the attention is a softmax over the ``P`` context tokens, then
    multiplied by ``m`` (appendix C.3); at ``m = 0`` this is the nonlinear model.

    References
    ----------
    Paper eqs. (7)-(10), (12), (77).

    Examples
    --------
    >>> from numerics.models import context_updates as model
    >>> from numerics.tasks import sample
    >>> from theory import PowerLawSpectrum
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 4), 6, 2, np.random.default_rng(0))
    >>> p = model.init_params(4, 4, 2, np.random.default_rng(1), m_init=0.0)
    >>> frozen = nonlinear({key: value for key, value in p.items() if key != "m"}, batch)
    >>> np.allclose(context_updates(p, batch), frozen), np.allclose(context_updates(dict(p, m=np.array(-2.0)), batch), frozen)
    (True, False)
    """
    return _two_stream_softmax(params, batch, "context_updates", values="tied", mask="M(m)")
