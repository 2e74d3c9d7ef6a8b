"""The ensemble (CLT) decomposition ``R_L = C_L + (A_L − C_L)/L`` (paper eqs. (61)–(63)).

When the prediction of a depth-``L`` model is the mean of ``L`` per-layer
predictors, ``ŷ_L = (1/L) Σ_ℓ f_ℓ``, the loss of that mean splits exactly into
the *shared error* ``C_L`` and the *layer disagreement* ``A_L − C_L``:

* parallel softmax model with ``M(0)``: ``f_ℓ = g p_ℓ y`` (paper eq. (60));
* single stream: ``f_ℓ = b_L + L d_ℓ`` from the read-outs (paper eqs. (67)–(70));
* untied values: ``f_ℓ = g_ℓ p_ℓ y`` (paper eqs. (72)–(74)).

With ``e_ℓ = f_ℓ − y*`` and ``E`` the mean over contexts,

* ``A_L = (1/L) Σ_ℓ E e_ℓ²`` (mean single-layer error),
* ``C_L = (1/(L(L−1))) Σ_{ℓ≠m} E e_ℓ e_m`` (shared error; undefined for ``L = 1``),
* ``A_L − C_L = (1/(2L(L−1))) Σ_{ℓ≠m} E (e_ℓ − e_m)² ≥ 0`` (disagreement),
* ``R_L = E ((1/L) Σ_ℓ e_ℓ)² = C_L + (A_L − C_L)/L`` -- an identity, exact for
  any numbers (it holds context by context, so also for the empirical mean).

The identity alone does not imply a ``1/L`` law: ``A_L`` and ``C_L`` depend on
``L`` in a trained model (``C_L → C_∞``, paper Fig. 6). :func:`exchangeable_loss`
is the *model* in which they do not.

The identity is written once in sympy (:data:`EXCHANGEABLE_LOSS`,
:data:`DECOMPOSITION_IDENTITY`) and :func:`symbolic_decomposition_identity`
proves it from the definitions for a given depth; the docs render those objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp
from scipy.special import ndtri

from . import symbols as s
from .validation import check_depths, check_finite_array, check_level, check_positive_int, check_real

__all__ = [
    "R_MEAN_PREDICTOR",
    "EXCHANGEABLE_LOSS",
    "DECOMPOSITION_IDENTITY",
    "Decomposition",
    "SymbolicDecomposition",
    "ExchangeablePrediction",
    "decompose",
    "symbolic_decomposition_identity",
    "exchangeable_loss",
    "predict_exchangeable_loss",
    "predict_from_decomposition",
]

#: R_L, the loss of the mean predictor (1/L) Σ_ℓ f_ℓ (paper eq. (61)); not (yet) in theory.symbols
R_MEAN_PREDICTOR = sp.Symbol("R_L", nonnegative=True)
#: paper eq. (63): R_L = C_L + (A_L - C_L)/L, read as a function of (A_L, C_L, L)
EXCHANGEABLE_LOSS = s.C_shared + (s.A - s.C_shared) / s.L
#: paper eq. (63) as an equation
DECOMPOSITION_IDENTITY = sp.Eq(R_MEAN_PREDICTOR, EXCHANGEABLE_LOSS)

_exchangeable_numeric = sp.lambdify((s.L, s.A, s.C_shared), EXCHANGEABLE_LOSS, "numpy")
# the identity is linear in (A, C): R = w_A A + w_C C with these weights (used by the delta method)
_weights_numeric = sp.lambdify(
    s.L, [sp.diff(EXCHANGEABLE_LOSS, s.A), sp.diff(EXCHANGEABLE_LOSS, s.C_shared)], "numpy"
)


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class Decomposition:
    """Result of :func:`decompose`: ``R_L``, ``A_L``, ``C_L`` with standard errors.

    Attributes
    ----------
    depth : int
        Number of layers ``L``.
    n_contexts : int
        Number of contexts averaged over.
    R : float
        Loss of the mean predictor, ``E ((1/L) Σ_ℓ e_ℓ)²`` (eq. 61).
    A : float
        Mean single-layer error ``(1/L) Σ_ℓ E e_ℓ²`` (eq. 62).
    C : float
        Shared error ``(1/(L(L−1))) Σ_{ℓ≠m} E e_ℓ e_m`` (eq. 62); NaN when ``depth == 1``
        (there are no pairs ``ℓ ≠ m``).
    disagreement : float
        ``(1/(2L(L−1))) Σ_{ℓ≠m} E (e_ℓ − e_m)²``, which equals ``A − C`` (eq. 63);
        NaN when ``depth == 1``.
    R_se, A_se, C_se : float
        Standard errors of the means over contexts (sample standard deviation of the
        per-context values with ``ddof=1``, over ``sqrt(n_contexts)``); NaN when
        ``n_contexts == 1``. The per-context value of ``C`` is
        ``(L² ē² − Σ_ℓ e_ℓ²)/(L(L−1))`` with ``ē = (1/L) Σ_ℓ e_ℓ``.
    covariance : ndarray, shape (2, 2)
        Covariance matrix of the estimates ``(A, C)`` in that order (read-only).

    References
    ----------
    Paper eqs. (61)-(63).

    Examples
    --------
    >>> dec = decompose([[1.0, 2.0], [3.0, 2.0]], [1.0, 1.0])
    >>> dec.R, dec.A, dec.C, dec.disagreement
    (1.0, 1.5, 0.5, 1.0)
    >>> dec.C + (dec.A - dec.C) / dec.depth
    1.0
    """

    depth: int
    n_contexts: int
    R: float
    A: float
    C: float
    disagreement: float
    R_se: float
    A_se: float
    C_se: float
    covariance: np.ndarray

    @property
    def identity_residual(self) -> float:
        """``R − (C + (A − C)/L)``: zero up to round-off (eq. 63); NaN when ``depth == 1``."""
        return float(self.R - _exchangeable_numeric(self.depth, self.A, self.C))


def decompose(layer_predictions: object, targets: object) -> Decomposition:
    """Split the loss of the mean of ``L`` per-layer predictors into shared error and disagreement.

    With ``e_ℓ = f_ℓ − y*`` per context, returns ``R_L``, ``A_L``, ``C_L`` and
    ``A_L − C_L`` in its disagreement form, each averaged over contexts, with
    standard errors. All sums over pairs ``ℓ ≠ m`` are evaluated in ``O(L n)``
    through ``Σ_{ℓ≠m} e_ℓ e_m = (Σ_ℓ e_ℓ)² − Σ_ℓ e_ℓ²`` and
    ``Σ_{ℓ≠m} (e_ℓ − e_m)² = 2L Σ_ℓ (e_ℓ − ē)²``. ``C`` is computed as
    ``A − disagreement`` so that ``A − C ≥ 0`` holds exactly in floating point.

    Parameters
    ----------
    layer_predictions : array_like, shape (L, n_contexts)
        Per-layer predictors ``f_ℓ`` on each context: ``g p_ℓ y`` for the parallel
        softmax model (eq. 60), ``b_L + L d_ℓ`` for the single stream (eqs. 67-70),
        ``g_ℓ p_ℓ y`` for untied values (eqs. 72-74). The model's prediction is
        their mean over ``ℓ``.
    targets : array_like, shape (n_contexts,)
        Targets ``y*``.

    Returns
    -------
    Decomposition
        With ``C``, ``disagreement`` and ``C_se`` NaN when ``L == 1`` (``C_1`` is
        undefined: there are no pairs of layers; then ``R = A``), and standard
        errors NaN when ``n_contexts == 1``.

    Raises
    ------
    ValueError
        If ``layer_predictions`` is not 2-d, ``targets`` does not have shape
        ``(n_contexts,)``, or either contains NaN/inf.

    References
    ----------
    Paper eqs. (60)-(63), (67)-(70), (72)-(74).

    Examples
    --------
    Two layers that err in opposite directions cancel: no shared error.

    >>> dec = decompose([[1.0, -1.0], [-1.0, 1.0]], [0.0, 0.0])
    >>> dec.R, dec.A, dec.C, dec.disagreement
    (0.0, 1.0, -1.0, 2.0)
    >>> decompose([[0.5, 1.5]], [1.0, 1.0]).C  # one layer: C_1 undefined
    nan
    """
    predictions = check_finite_array("layer_predictions", layer_predictions, ndim=2)
    depth, n_contexts = predictions.shape
    target = check_finite_array("targets", targets, ndim=1)
    if target.shape != (n_contexts,):
        raise ValueError(
            f"targets must have shape (n_contexts,) = ({n_contexts},) to match layer_predictions "
            f"of shape {predictions.shape}; got shape {target.shape}"
        )
    errors = predictions - target  # e_ℓ per context, shape (L, n)
    mean_error = errors.mean(axis=0)  # ē
    per_context_R = mean_error**2
    per_context_A = np.mean(errors**2, axis=0)
    if depth >= 2:
        # (1/(2L(L-1))) Σ_{ℓ≠m} (e_ℓ - e_m)² = (1/(L-1)) Σ_ℓ (e_ℓ - ē)²: two-pass, never negative
        per_context_D = np.sum((errors - mean_error) ** 2, axis=0) / (depth - 1)
        per_context_C = per_context_A - per_context_D
    else:
        per_context_D = np.full(n_contexts, np.nan)
        per_context_C = np.full(n_contexts, np.nan)

    R_value = float(per_context_R.mean())
    A_value = float(per_context_A.mean())
    D_value = float(per_context_D.mean())
    C_value = A_value - D_value  # so that A - C = A - fl(A - D) >= 0 exactly

    if n_contexts >= 2:
        covariance = np.cov(np.vstack([per_context_A, per_context_C]), ddof=1) / n_contexts
        R_se = float(np.std(per_context_R, ddof=1) / np.sqrt(n_contexts))
    else:
        covariance = np.full((2, 2), np.nan)
        R_se = float("nan")
    if depth == 1:
        covariance[0, 1] = covariance[1, 0] = covariance[1, 1] = np.nan
    return Decomposition(
        depth=int(depth),
        n_contexts=int(n_contexts),
        R=R_value,
        A=A_value,
        C=C_value,
        disagreement=D_value,
        R_se=R_se,
        A_se=float(np.sqrt(covariance[0, 0])),
        C_se=float(np.sqrt(covariance[1, 1])),
        covariance=_readonly(covariance),
    )


@dataclass(frozen=True, eq=False)
class SymbolicDecomposition:
    """Symbolic proof objects of eq. (63) for one depth (see :func:`symbolic_decomposition_identity`).

    Attributes
    ----------
    depth : int
        ``L``.
    errors : tuple of sympy.Symbol
        ``e_1, ..., e_L`` (one context; the expectation is linear, so the identity for
        each context implies it for ``E``).
    mean_predictor_loss : sympy.Expr
        ``((1/L) Σ_ℓ e_ℓ)²``.
    layer_error : sympy.Expr
        ``A = (1/L) Σ_ℓ e_ℓ²``.
    shared_error : sympy.Expr
        ``C = (1/(L(L−1))) Σ_{ℓ≠m} e_ℓ e_m``.
    disagreement : sympy.Expr
        ``(1/(2L(L−1))) Σ_{ℓ≠m} (e_ℓ − e_m)²``.
    identity : sympy.Eq
        :data:`DECOMPOSITION_IDENTITY` with ``A``, ``C`` replaced by their definitions.
    residual : sympy.Expr
        ``mean_predictor_loss − (C + (A − C)/L)`` expanded; ``0`` proves the identity.
    disagreement_residual : sympy.Expr
        ``(A − C) − disagreement`` expanded; ``0`` proves the disagreement form.

    References
    ----------
    Paper eqs. (61)-(63).

    Examples
    --------
    >>> proof = symbolic_decomposition_identity(2)
    >>> proof.shared_error
    e_1*e_2
    >>> proof.holds
    True
    """

    depth: int
    errors: tuple
    mean_predictor_loss: sp.Expr
    layer_error: sp.Expr
    shared_error: sp.Expr
    disagreement: sp.Expr
    identity: sp.Eq
    residual: sp.Expr
    disagreement_residual: sp.Expr

    @property
    def holds(self) -> bool:
        """True when both residuals simplify to exactly zero."""
        return bool(self.residual == 0 and self.disagreement_residual == 0)


def symbolic_decomposition_identity(depth: int) -> SymbolicDecomposition:
    """Prove ``((1/L) Σ e_ℓ)² = C + (A − C)/L`` and ``A − C = disagreement`` symbolically for one ``L``.

    The per-layer errors are real symbols ``e_1..e_L``; ``A``, ``C`` and the
    disagreement are built from their definitions (eq. 62, with the expectation
    dropped: the identity holds context by context) and substituted into
    :data:`EXCHANGEABLE_LOSS`. The residuals are expanded polynomials, so
    ``residual == 0`` is a proof, not a numerical check.

    Parameters
    ----------
    depth : int
        ``L >= 2`` (``C_1`` is undefined). Cost grows as ``L²``; keep ``L`` small.

    Returns
    -------
    SymbolicDecomposition

    References
    ----------
    Paper eqs. (61)-(63).

    Examples
    --------
    >>> proof = symbolic_decomposition_identity(3)
    >>> proof.residual, proof.disagreement_residual
    (0, 0)
    >>> proof.layer_error
    e_1**2/3 + e_2**2/3 + e_3**2/3
    """
    depth = check_positive_int("depth", depth, minimum=2)
    errors = sp.symbols(f"e_1:{depth + 1}", real=True)
    pairs = [(i, j) for i in range(depth) for j in range(depth) if i != j]
    mean_predictor_loss = (sp.Add(*errors) / depth) ** 2
    layer_error = sp.expand(sp.Add(*[e**2 for e in errors]) / depth)
    shared_error = sp.expand(sp.Add(*[errors[i] * errors[j] for i, j in pairs]) / (depth * (depth - 1)))
    disagreement = sp.Add(*[(errors[i] - errors[j]) ** 2 for i, j in pairs]) / (2 * depth * (depth - 1))
    rhs = EXCHANGEABLE_LOSS.subs({s.A: layer_error, s.C_shared: shared_error, s.L: depth})
    identity = sp.Eq(mean_predictor_loss, rhs, evaluate=False)
    residual = sp.expand(mean_predictor_loss - rhs)
    disagreement_residual = sp.expand(layer_error - shared_error - disagreement)
    return SymbolicDecomposition(
        depth=depth,
        errors=tuple(errors),
        mean_predictor_loss=mean_predictor_loss,
        layer_error=layer_error,
        shared_error=shared_error,
        disagreement=disagreement,
        identity=identity,
        residual=residual,
        disagreement_residual=disagreement_residual,
    )


def _check_A_C(A: object, C: object) -> tuple[float, float]:
    A = check_real("A", A)
    C = check_real("C", C)
    if A < C:
        raise ValueError(f"A must be >= C (A - C is a mean squared disagreement, eq. 63); got A={A!r}, C={C!r}")
    return A, C


def _scalar_or_array(values: np.ndarray, scalar: bool):
    return float(values[0]) if scalar else _readonly(values)


def exchangeable_loss(depth: object, A: float, C: float):
    """``R_L = C + (A − C)/L`` with ``A`` and ``C`` held fixed across depths.

    Eq. (63) is exact at every depth with that depth's ``A_L``, ``C_L``; reading
    it as a law in ``L`` assumes the layers are exchangeable with a
    depth-independent single-layer error ``A`` and pairwise covariance ``C``,
    which gives the CLT-like ``1/L`` approach to the plateau ``C``. For
    ``C < 0`` the law turns negative at large ``L``, so such an ``(A, C)``
    cannot come from an arbitrarily long exchangeable sequence.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1``.
    A : float
        Mean single-layer error ``A``.
    C : float
        Shared error ``C`` (``A >= C`` required).

    Returns
    -------
    float or ndarray
        A float for a scalar ``depth``, else a read-only array of the same length.

    References
    ----------
    Paper eq. (63).

    Examples
    --------
    >>> exchangeable_loss(4, A=2.0, C=1.0)
    1.25
    >>> exchangeable_loss([1, 2, 10], A=2.0, C=1.0).tolist()
    [2.0, 1.5, 1.1]
    """
    depths = check_depths(depth, "depth")
    A, C = _check_A_C(A, C)
    values = np.asarray(_exchangeable_numeric(depths.astype(np.float64), A, C), dtype=np.float64)
    return _scalar_or_array(np.broadcast_to(values, depths.shape), np.ndim(depth) == 0)


@dataclass(frozen=True, eq=False)
class ExchangeablePrediction:
    """A predicted loss with a normal (delta-method) interval; see :func:`predict_exchangeable_loss`.

    Attributes
    ----------
    depth : int or ndarray
        Depth(s) ``L``.
    estimate : float or ndarray
        ``C + (A − C)/L``.
    standard_error : float or ndarray
        ``sqrt(wᵀ Σ w)`` with ``w = (1/L, 1 − 1/L)`` and ``Σ`` the covariance of ``(A, C)``.
    lower, upper : float or ndarray
        ``estimate ∓ z standard_error`` with ``z`` the normal ``(1 + level)/2`` quantile.
    level : float
        Nominal coverage of ``[lower, upper]``.

    References
    ----------
    Paper eq. (63).

    Examples
    --------
    >>> p = predict_exchangeable_loss(2, A=2.0, C=1.0, covariance=[[0.0, 0.0], [0.0, 0.0]])
    >>> p.estimate, p.lower, p.upper
    (1.5, 1.5, 1.5)
    """

    depth: object
    estimate: object
    standard_error: object
    lower: object
    upper: object
    level: float


def predict_exchangeable_loss(depth: object, A: float, C: float, covariance: object, *, level: float = 0.95) -> ExchangeablePrediction:
    """Predicted ``R_L = C + (A − C)/L`` at any depth, with an interval from the covariance of ``(A, C)``.

    The law is linear in ``(A, C)``, ``R_L = w_A A + w_C C`` with
    ``(w_A, w_C) = (1/L, 1 − 1/L)`` (the derivatives of
    :data:`EXCHANGEABLE_LOSS`), so the delta method is exact:
    ``Var R_L = wᵀ Σ w``. The interval covers only the sampling error of
    ``(A, C)``, not the error of assuming that they do not change with depth.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1`` at which to predict.
    A, C : float
        Estimates of the single-layer error and shared error, ``A >= C``.
    covariance : array_like, shape (2, 2)
        Covariance of the estimates ``(A, C)``: symmetric positive semi-definite.
    level : float, default 0.95
        Nominal coverage, in (0, 1).

    Returns
    -------
    ExchangeablePrediction
        Scalars for a scalar ``depth``, else read-only arrays.

    References
    ----------
    Paper eq. (63).

    Examples
    --------
    >>> p = predict_exchangeable_loss(1, A=2.0, C=1.0, covariance=[[0.04, 0.0], [0.0, 1.0]])
    >>> p.estimate, p.standard_error  # at L = 1 only A matters
    (2.0, 0.2)
    >>> round(p.upper - p.lower, 4)  # 2 * 1.959964 * 0.2
    0.784
    """
    depths = check_depths(depth, "depth")
    A, C = _check_A_C(A, C)
    level = check_level(level)
    cov = check_finite_array("covariance", covariance, ndim=2)
    if cov.shape != (2, 2):
        raise ValueError(f"covariance must have shape (2, 2) (the covariance of (A, C)); got shape {cov.shape}")
    if not np.allclose(cov, cov.T, rtol=1e-12, atol=0.0):
        raise ValueError(f"covariance must be symmetric; got {cov.tolist()!r}")
    eigenvalues = np.linalg.eigvalsh(cov)
    if eigenvalues[0] < -1e-12 * max(1.0, abs(eigenvalues[-1])):
        raise ValueError(f"covariance must be positive semi-definite; got eigenvalues {eigenvalues.tolist()!r}")
    L = depths.astype(np.float64)
    w_A, w_C = (np.broadcast_to(np.asarray(w, dtype=np.float64), L.shape) for w in _weights_numeric(L))
    estimate = w_A * A + w_C * C
    variance = w_A**2 * cov[0, 0] + 2.0 * w_A * w_C * cov[0, 1] + w_C**2 * cov[1, 1]
    standard_error = np.sqrt(np.maximum(variance, 0.0))
    z = float(ndtri(0.5 + level / 2.0))  # standard normal quantile
    scalar = np.ndim(depth) == 0
    return ExchangeablePrediction(
        depth=int(depths[0]) if scalar else _readonly(depths).astype(np.int64),
        estimate=_scalar_or_array(estimate, scalar),
        standard_error=_scalar_or_array(standard_error, scalar),
        lower=_scalar_or_array(estimate - z * standard_error, scalar),
        upper=_scalar_or_array(estimate + z * standard_error, scalar),
        level=level,
    )


def predict_from_decomposition(depth: object, decomposition: Decomposition, *, level: float = 0.95) -> ExchangeablePrediction:
    """Extrapolate a measured :class:`Decomposition` to other depths with :func:`predict_exchangeable_loss`.

    Uses the decomposition's ``A``, ``C`` and their covariance over contexts. At
    the measured depth the prediction reproduces ``R`` and its standard error
    (the identity holds context by context).

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1`` at which to predict.
    decomposition : Decomposition
        Measured at depth ``>= 2`` (``C`` is undefined at depth 1) on ``>= 2`` contexts.
    level : float, default 0.95
        Nominal coverage, in (0, 1).

    Returns
    -------
    ExchangeablePrediction

    References
    ----------
    Paper eq. (63).

    Examples
    --------
    >>> dec = decompose([[1.0, 2.0, 0.0], [3.0, 2.0, 1.0]], [1.0, 1.0, 1.0])
    >>> p = predict_from_decomposition(dec.depth, dec)
    >>> bool(abs(p.estimate - dec.R) < 1e-12 and abs(p.standard_error - dec.R_se) < 1e-12)
    True
    >>> predict_from_decomposition([1, 100], dec).estimate.round(4).tolist()
    [1.1667, 0.3417]
    """
    if not isinstance(decomposition, Decomposition):
        raise TypeError(f"decomposition must be a Decomposition (from decompose); got {type(decomposition).__name__}")
    if decomposition.depth < 2:
        raise ValueError(
            f"decomposition must be measured at depth >= 2 (C_1 is undefined); got depth {decomposition.depth}"
        )
    if decomposition.n_contexts < 2:
        raise ValueError(
            f"decomposition must average over >= 2 contexts to have standard errors; got n_contexts {decomposition.n_contexts}"
        )
    return predict_exchangeable_loss(depth, decomposition.A, decomposition.C, decomposition.covariance, level=level)
