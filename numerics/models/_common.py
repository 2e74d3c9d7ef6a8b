"""Pieces shared by the five fast engines: pre-norm, softmax, the forward-result type,
initialisation helpers and the checks of params and batches.

Choices the paper leaves open (digest §3 "Not stated in the paper"), made here once:

* **norm** -- LayerNorm over the ``N`` features of each token, *without* learned
  gain or bias, ``eps = 1e-5`` (:data:`LAYER_NORM_EPS`) added to the variance
  (population variance, divisor ``N``). The paper writes ``norm(·)`` without saying which.
* **softmax** -- taken only over the positions the mask allows (paper eqs. (9)-(10),
  (76)-(77)); computed max-subtracted, so logits of size ``1e4`` stay finite. The fast
  engines never form a masked row: they apply :func:`softmax` to the allowed columns
  only (the ``P`` context tokens).

The reference transcriptions (:mod:`numerics.models.reference`) write their own norm and
masked softmax, so "fast engine = reference" also checks the two functions here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple, Optional

import numpy as np

from theory.validation import (
    FLOAT_DTYPES as _FLOAT_DTYPES,
    check_choice,
    check_dtype,
    check_generator,
    check_nonnegative,
    check_positive,
    check_positive_int,
)

__all__ = [
    "LAYER_NORM_EPS",
    "VALUE_SHARING",
    "MASKS",
    "SHARED_INIT_DEFAULTS",
    "ForwardResult",
    "ParamSizes",
    "BatchArrays",
    "layer_norm",
    "layer_norm_backward",
    "softmax",
    "softmax_",
    "softmax_backward",
    "check_params",
    "check_batch",
    "resolve_init_options",
    "init_shared",
    "param_shapes",
    "floats_per_context",
]

#: eps added to the per-token feature variance inside the pre-norm (not stated in the paper)
LAYER_NORM_EPS = 1e-5

#: the value matrices: one ``W_v`` shared by all layers (paper eq. (9)) or one ``W_v^ℓ`` per layer (eq. (71))
VALUE_SHARING = ("tied", "untied")
#: the attention masks of paper eqs. (75)-(77); only ``M(m)`` carries a parameter (the scalar ``m``)
MASKS = ("M_linear", "M(0)", "M(m)")


# --------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class ForwardResult:
    """Output of a model's fast ``forward``.

    Attributes
    ----------
    prediction : ndarray, shape (B,)
        ``ŷ_L = W_o h^L_{y,test}`` (paper eq. (12)).
    layer_predictors : ndarray, shape (L, B)
        Per-layer predictors ``f_ℓ`` whose mean over layers is ``prediction`` exactly:
        ``g p_ℓ y`` (eq. 60), ``g_ℓ p_ℓ y`` (eq. 72) or ``b_L + L d_ℓ`` (eqs. 67-70).
    attention : ndarray, shape (L, B, P)
        The test token's attention row over the ``P`` context tokens in each layer
        (softmax weights ``p_ℓ``; for the linear model the signed, unnormalised
        ``(1/(P N)) q_testᵀ k_j``).
    context_attention : ndarray of shape (B, P, P), or None
        Layer 1's context-to-context softmax ``A_1`` (rows = receiving token, each row
        sums to 1, *before* the factor ``m`` of the mask ``M(m)``) for the
        context-updates model (paper eq. (83)); ``None`` for the other models.

    References
    ----------
    Paper eqs. (12), (59)-(60), (67)-(72), (83).

    Examples
    --------
    >>> r = ForwardResult(np.zeros(2), np.zeros((3, 2)), np.full((3, 2, 4), 0.25), None)
    >>> r.layer_predictors.shape, r.context_attention is None
    ((3, 2), True)
    """

    prediction: np.ndarray
    layer_predictors: np.ndarray
    attention: np.ndarray
    context_attention: Optional[np.ndarray] = None


class ParamSizes(NamedTuple):
    """Sizes read off a parameter dict by :func:`check_params`.

    Attributes
    ----------
    d : int
        Input dimension (columns of ``W_x``).
    N : int
        Hidden width (rows of ``W_x``), ``N >= d``.
    depth : int
        Number of layers ``L`` (leading axis of ``W_q``).
    dtype : type
        ``numpy.float32`` or ``numpy.float64``, shared by all arrays.

    References
    ----------
    Paper eqs. (8)-(12).

    Examples
    --------
    >>> d, N, L, dtype = ParamSizes(2, 3, 4, np.float64)
    >>> N, L
    (3, 4)
    """

    d: int
    N: int
    depth: int
    dtype: type


class BatchArrays(NamedTuple):
    """The four arrays of a batch a model reads, validated by :func:`check_batch`.

    Attributes
    ----------
    context_x : ndarray, shape (B, P, d)
    context_y : ndarray, shape (B, P)
    test_x : ndarray, shape (B, d)
    target : ndarray, shape (B,)

    References
    ----------
    Paper eqs. (1), (5)-(7).

    Examples
    --------
    >>> arrays = BatchArrays(np.zeros((2, 5, 3)), np.zeros((2, 5)), np.zeros((2, 3)), np.zeros(2))
    >>> arrays.context_y.shape
    (2, 5)
    """

    context_x: np.ndarray
    context_y: np.ndarray
    test_x: np.ndarray
    target: np.ndarray


# --------------------------------------------------------------------------- norm
def layer_norm(h: np.ndarray, eps: float = LAYER_NORM_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Pre-norm over the last axis (the ``N`` features of a token), no gain or bias.

    Returns ``(ĥ, r)`` with ``ĥ = (h − mean(h)) r`` and ``r = 1/sqrt(var(h) + eps)``
    (kept for :func:`layer_norm_backward`).

    References
    ----------
    Paper eq. (9) (``norm`` is not specified there; see the module docstring).

    Examples
    --------
    >>> hat, r = layer_norm(np.array([[1.0, 2.0, 3.0]]))
    >>> hat.round(4).tolist()
    [[-1.2247, 0.0, 1.2247]]
    """
    N = h.shape[-1]
    # row means and variances as matrix-vector products / einsum: much faster than
    # numpy reductions over a short last axis
    centred = h - (h @ np.full(N, 1.0 / N, dtype=h.dtype))[..., None]
    variance = np.einsum("...i,...i->...", centred, centred) / N
    inv_std = (1.0 / np.sqrt(variance + eps))[..., None]
    centred *= inv_std
    return centred, inv_std


def layer_norm_backward(h_hat: np.ndarray, inv_std: np.ndarray, grad_hat: np.ndarray) -> np.ndarray:
    """Gradient with respect to ``h`` of a loss whose gradient w.r.t. ``ĥ = layer_norm(h)`` is ``grad_hat``.

    ``dh = r (dĥ − mean(dĥ) − ĥ mean(dĥ ⊙ ĥ))``, exact also with ``eps > 0``.

    References
    ----------
    Paper eq. (9) (the norm's derivative).

    Examples
    --------
    >>> hat, r = layer_norm(np.array([[1.0, 2.0, 4.0]]))
    >>> layer_norm_backward(hat, r, np.ones((1, 3))).round(12).tolist()  # norm is shift-invariant
    [[0.0, 0.0, 0.0]]
    """
    N = grad_hat.shape[-1]
    mean_grad = (grad_hat @ np.full(N, 1.0 / N, dtype=grad_hat.dtype))[..., None]
    mean_proj = (np.einsum("...i,...i->...", grad_hat, h_hat) / N)[..., None]
    grad = grad_hat - mean_grad
    grad -= h_hat * mean_proj
    grad *= inv_std
    return grad


# --------------------------------------------------------------------------- softmax
def softmax(logits: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax over the last axis.

    References
    ----------
    Paper eq. (10).

    Examples
    --------
    >>> softmax(np.array([1e4, 1e4 - 1.0, -1e4])).round(4).tolist()
    [0.7311, 0.2689, 0.0]
    """
    return softmax_(np.array(logits, copy=True))


def softmax_(logits: np.ndarray) -> np.ndarray:
    """:func:`softmax` computed in place in ``logits`` (which it returns): no full-size temporary.

    The same operations in the same order as :func:`softmax` (max-subtract, exp, divide by the
    sum), so the result is bitwise the same; the fast engines call it on logits they own.

    References
    ----------
    Paper eq. (10).

    Examples
    --------
    >>> x = np.array([[0.0, np.log(3.0)]])
    >>> out = softmax_(x)
    >>> out is x, out.round(6).tolist()
    (True, [[0.25, 0.75]])
    """
    # fmax's reduction over a short last axis is faster than max's (46 against 62 µs for 32 x 33 x 32 float32)
    # and gives the same maximum for finite logits (a NaN row stays NaN through the exp)
    np.subtract(logits, np.fmax.reduce(logits, axis=-1, keepdims=True), out=logits)
    np.exp(logits, out=logits)
    logits /= logits.sum(axis=-1, keepdims=True)
    return logits


def softmax_backward(probs: np.ndarray, grad_probs: np.ndarray) -> np.ndarray:
    """Gradient w.r.t. the logits of a softmax over the last axis: ``p ⊙ (dp − Σ p dp)``.

    References
    ----------
    Paper eq. (10).

    Examples
    --------
    >>> softmax_backward(np.array([0.5, 0.5]), np.array([1.0, 1.0])).tolist()
    [0.0, 0.0]
    """
    return probs * (grad_probs - np.sum(probs * grad_probs, axis=-1, keepdims=True))


# --------------------------------------------------------------------------- checks
def check_params(params: object, *, model: str, values: str = "tied", mask: str = "M(0)") -> ParamSizes:
    """Check a parameter dict of one of the models and return its :class:`ParamSizes` ``(d, N, L, dtype)``.

    Expected keys and shapes are those of :func:`param_shapes`: ``W_x (N, d)`` with
    ``N >= d``, ``W_y (N, 1)``, ``W_q (L, N, N)``, ``W_k (L, N, N)``, ``W_v (N, N)``
    (``(L, N, N)`` for ``values="untied"``), ``W_o (1, N)`` and, for ``mask="M(m)"``,
    ``m`` of shape ``()``; all arrays of one dtype, float32 or float64.

    Parameters
    ----------
    params : dict of str to ndarray
    model : str
        The model's name (for the error messages).
    values : {'tied', 'untied'}
        One shared ``W_v`` or one per layer (:data:`VALUE_SHARING`).
    mask : {'M_linear', 'M(0)', 'M(m)'}
        The model's mask (:data:`MASKS`).

    Raises
    ------
    TypeError
        If ``params`` is not a mapping or an entry is not a float32/float64 array.
    ValueError
        If a key is missing or unexpected, a shape is wrong, or the dtypes differ.

    References
    ----------
    Paper eqs. (8)-(12), (71), (77).

    Examples
    --------
    >>> p = {"W_x": np.eye(3, 2), "W_y": np.ones((3, 1)), "W_q": np.zeros((4, 3, 3)),
    ...      "W_k": np.zeros((4, 3, 3)), "W_v": np.eye(3), "W_o": np.ones((1, 3))}
    >>> check_params(p, model="nonlinear")
    ParamSizes(d=2, N=3, depth=4, dtype=<class 'numpy.float64'>)
    """
    if not isinstance(params, Mapping):
        raise TypeError(f"params for model {model!r} must be a dict of arrays; got {type(params).__name__}")
    expected = list(param_shapes(1, 1, 1, values=values, mask=mask))
    missing = [key for key in expected if key not in params]
    extra = [key for key in params if key not in expected]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(repr(k) for k in missing)}")
        if extra:
            parts.append(f"unexpected {', '.join(repr(k) for k in extra)}")
        raise ValueError(
            f"params for model {model!r} must have exactly the keys {', '.join(repr(k) for k in expected)}; "
            + "; ".join(parts)
        )
    dtypes = set()
    for key in expected:
        value = params[key]
        # a numpy float scalar (e.g. ``m + step`` of a 0-d array) counts as a 0-d array
        if not isinstance(value, (np.ndarray, np.floating)) or value.dtype.type not in _FLOAT_DTYPES:
            kind = value.dtype if isinstance(value, (np.ndarray, np.generic)) else type(value).__name__
            raise TypeError(f"params[{key!r}] must be a float32 or float64 numpy array; got {kind}")
        dtypes.add(value.dtype.type)
    if len(dtypes) > 1:
        found = {key: params[key].dtype.name for key in expected}
        raise ValueError(f"params must all have one dtype (float32 or float64); got {found}")
    W_x = params["W_x"]
    if W_x.ndim != 2:
        raise ValueError(f"params['W_x'] must have shape (N, d); got {W_x.shape}")
    N, d = W_x.shape
    if N < d:
        raise ValueError(f"hidden width N must be >= input dimension d; params['W_x'] has shape {W_x.shape}: N={N} < d={d}")
    W_q = params["W_q"]
    if W_q.ndim != 3 or W_q.shape[1:] != (N, N) or W_q.shape[0] < 1:
        raise ValueError(f"params['W_q'] must have shape (L, N, N) = (L, {N}, {N}) with L >= 1; got {W_q.shape}")
    L = W_q.shape[0]
    for key, shape in param_shapes(d, N, L, values=values, mask=mask).items():
        if np.shape(params[key]) != shape:  # W_x and W_q agree by construction
            raise ValueError(
                f"params[{key!r}] must have shape {shape} (N={N}, d={d}, L={L} from W_x and W_q); "
                f"got {params[key].shape}"
            )
    return ParamSizes(d, N, L, dtypes.pop())


def check_batch(batch: object, d: int, dtype: type) -> BatchArrays:
    """Return :class:`BatchArrays` ``(context_x (B,P,d), context_y (B,P), test_x (B,d), target (B,))`` of ``batch`` in ``dtype``.

    ``batch`` is a :class:`numerics.tasks.Batch` (any object with those four
    attributes is accepted).

    Raises
    ------
    TypeError
        If an attribute is missing.
    ValueError
        If the shapes disagree with each other or the input dimension differs from ``d``
        (the input dimension of ``W_x``).

    References
    ----------
    Paper eqs. (1), (5)-(7).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> b = SimpleNamespace(context_x=np.zeros((2, 5, 3)), context_y=np.zeros((2, 5)),
    ...                     test_x=np.zeros((2, 3)), target=np.zeros(2))
    >>> [a.shape for a in check_batch(b, 3, np.float64)]
    [(2, 5, 3), (2, 5), (2, 3), (2,)]
    """
    arrays = []
    for name in ("context_x", "context_y", "test_x", "target"):
        if not hasattr(batch, name):
            raise TypeError(f"batch must be a numerics.tasks.Batch (with context_x, context_y, test_x, target); it has no {name!r}")
        arrays.append(np.asarray(getattr(batch, name), dtype=dtype))
    context_x, context_y, test_x, target = arrays
    if context_x.ndim != 3:
        raise ValueError(f"batch.context_x must have shape (B, P, d); got {context_x.shape}")
    B, P, d_batch = context_x.shape
    if d_batch != d:
        raise ValueError(
            f"batch has input dimension d={d_batch} (context_x shape {context_x.shape}) but the params' W_x expects d={d}"
        )
    for name, array, shape in (
        ("context_y", context_y, (B, P)),
        ("test_x", test_x, (B, d)),
        ("target", target, (B,)),
    ):
        if array.shape != shape:
            raise ValueError(f"batch.{name} must have shape {shape} to match context_x {context_x.shape}; got {array.shape}")
    return BatchArrays(context_x, context_y, test_x, target)


# --------------------------------------------------------------------------- initialisation
#: the initialisation options every model accepts, with their defaults (read-only)
SHARED_INIT_DEFAULTS = MappingProxyType(
    {
        "w_x": "orthonormal",
        "qk_init": "identity",
        "qk_scale": 1.0,
        "qk_noise": 0.1,
        "value_init": "identity",
        "readout_gain": 1.0,
    }
)
_CHOICES = {"w_x": ("orthonormal", "gaussian"), "qk_init": ("identity", "gaussian"), "value_init": ("identity", "gaussian")}


def resolve_init_options(defaults: Mapping, options: Mapping) -> dict:
    """Merge keyword ``options`` into a model's ``defaults``, checking names and values.

    Raises
    ------
    TypeError
        For an unknown option name (the message lists the allowed ones).
    ValueError
        For a value outside its allowed set or range.

    References
    ----------
    Paper eqs. (8)-(12), (77) (the weights being initialised; the paper states no initialisation).

    Examples
    --------
    >>> resolve_init_options(SHARED_INIT_DEFAULTS, {"qk_scale": 2})["qk_scale"]
    2.0
    """
    unknown = [key for key in options if key not in defaults]
    if unknown:
        raise TypeError(
            f"unknown initialisation option(s) {', '.join(repr(k) for k in unknown)}; "
            f"allowed: {', '.join(repr(k) for k in defaults)}"
        )
    merged = dict(defaults)
    merged.update(options)
    for key, allowed in _CHOICES.items():
        if key in merged:
            check_choice(key, merged[key], allowed)
    if "qk_scale" in merged:
        merged["qk_scale"] = check_positive("qk_scale", merged["qk_scale"])
    for key in ("qk_noise", "readout_gain"):
        if key in merged:
            merged[key] = check_nonnegative(key, merged[key])
    if "m_init" in merged:
        value = merged["m_init"]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
            raise ValueError(f"m_init must be a finite real number; got {value!r}")
        merged["m_init"] = float(value)
    return merged


def init_shared(d: object, N: object, depth: object, rng: object, dtype: object, options: Mapping, *, values: str = "tied") -> dict:
    """Draw ``W_x, W_y, W_q, W_k, W_v, W_o`` from resolved initialisation ``options``.

    The options every model's ``init_params`` accepts (``w_x``, ``qk_init``, ``qk_scale``,
    ``qk_noise``, ``value_init``, ``readout_gain``) are described in the
    :mod:`numerics.models` package docstring; their defaults are :data:`SHARED_INIT_DEFAULTS`.

    ``values="untied"`` draws one ``W_v^ℓ`` per layer (all equal to ``I`` with
    ``value_init="identity"``), paper eq. (71).

    References
    ----------
    Paper eqs. (8), (60), (71); the initialisation itself is this package's choice.

    Examples
    --------
    >>> p = init_shared(2, 3, 4, np.random.default_rng(0), np.float64, SHARED_INIT_DEFAULTS)
    >>> float((p["W_o"] @ p["W_v"] @ p["W_y"]).item())
    1.0
    """
    d = check_positive_int("d", d)
    N = check_positive_int("N", N)
    depth = check_positive_int("depth", depth)
    if N < d:
        raise ValueError(f"hidden width N must be >= input dimension d; got N={N}, d={d}")
    rng = check_generator(rng)
    dtype = check_dtype(dtype)
    v_shape = param_shapes(d, N, depth, values=values)["W_v"]
    if options["w_x"] == "orthonormal":
        q, r = np.linalg.qr(rng.standard_normal((N, d)))
        W_x = q * np.where(np.diag(r) < 0, -1.0, 1.0)
    else:
        W_x = rng.standard_normal((N, d)) / np.sqrt(d)
    kappa, noise = options["qk_scale"], options["qk_noise"]

    def qk() -> np.ndarray:
        if options["qk_init"] == "identity":
            return np.sqrt(kappa) * (np.eye(N) + noise * rng.standard_normal((depth, N, N)) / np.sqrt(N))
        return rng.standard_normal((depth, N, N)) * np.sqrt(kappa / N)

    W_q = qk()
    W_k = qk()
    if options["value_init"] == "identity":
        W_v = np.broadcast_to(np.eye(N), v_shape).copy()
    else:
        W_v = rng.standard_normal(v_shape) / np.sqrt(N)
    W_y = rng.standard_normal((N, 1))
    W_y /= np.linalg.norm(W_y)
    W_o = options["readout_gain"] * W_y.T.copy()
    params = {"W_x": W_x, "W_y": W_y, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    return {key: np.require(value, dtype=dtype, requirements="C") for key, value in params.items()}


def param_shapes(d: int, N: int, depth: int, *, values: str = "tied", mask: str = "M(0)") -> dict:
    """Shapes of the parameter arrays: ``W_x (N,d)``, ``W_y (N,1)``, ``W_q, W_k (L,N,N)``,
    ``W_v`` ``(N,N)`` (``values="tied"``) or ``(L,N,N)`` (``"untied"``), ``W_o (1,N)``, and
    the scalar ``m`` (shape ``()``) for ``mask="M(m)"``.

    References
    ----------
    Paper eqs. (8)-(12), (71), (77).

    Examples
    --------
    >>> param_shapes(2, 3, 4)["W_q"]
    (4, 3, 3)
    >>> param_shapes(2, 3, 4, values="untied", mask="M(m)")["W_v"]
    (4, 3, 3)
    """
    check_choice("values", values, VALUE_SHARING)
    check_choice("mask", mask, MASKS)
    shapes = {
        "W_x": (N, d),
        "W_y": (N, 1),
        "W_q": (depth, N, N),
        "W_k": (depth, N, N),
        "W_v": (depth, N, N) if values == "untied" else (N, N),
        "W_o": (1, N),
    }
    if mask == "M(m)":
        shapes["m"] = ()
    return shapes


def floats_per_context(P: int, N: int, depth: int) -> int:
    """Numbers one context holds in a forward pass, about ``P (N + L)``: its ``P`` hidden
    states of width ``N`` and ``L`` attention rows over the ``P`` context tokens.

    The memory fact of the models without a context-to-context block (used by
    :func:`numerics.models.chunk_size`); the context-updates model adds ``P²``.

    References
    ----------
    Paper eqs. (9)-(12).

    Examples
    --------
    >>> floats_per_context(128, 32, 4)
    4608
    """
    return P * (N + depth)
