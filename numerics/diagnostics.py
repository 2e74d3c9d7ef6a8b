"""Diagnostics of a trained model on fresh contexts: R, A, C, attention focus,
mode-wise losses, token-selection error and the context-mixing coefficient ρ.

What is measured (all on ``n_contexts`` fresh contexts of the run's task):

* ``R_L, A_L, C_L`` of the exact decomposition ``R_L = C_L + (A_L − C_L)/L``
  (paper eqs. 61-63) through :func:`theory.decomposition.decompose`, from the
  model's per-layer predictors ``f_ℓ`` (``ForwardResult.layer_predictors``),
  and the per-layer errors ``E e_ℓ²``.
* **Top-1 attention mass** per layer: the mean over contexts of the largest
  weight of the test token's attention row (paper Fig. 4c). Defined for the
  softmax models (model fact ``ATTENTION == "softmax"``, see
  :mod:`numerics.models`); NaN for linear attention, whose "weights" are not a
  distribution.
* **Mode-wise loss** (paper Figs. 3c, 7). For the models whose prediction is
  linear in the context labels (model fact ``LABEL_LINEAR``: their attention
  depends on the input stream only) the prediction is ``ŷ = Σ_i w_i y_i = βᵀ (X w)``, so
  the error is exactly ``ŷ − y* = βᵀ e`` with the *error vector in input space*

      ``e = X w − t``,

  ``t`` = the matched input ``x_test`` (easy task, eq. 5) or the mean of the
  top-k context inputs by cosine similarity (difficult task, eq. 6). For the
  parallel softmax model this is ``e = g X p̄ − t`` with ``g = W_o W_v W_y``
  and ``p̄`` the layer-averaged test-row attention (eq. 60); for the linear
  model it is ``e = 𝒫_L(S) q − t`` (eq. 24). It is computed model-agnostically
  from ``d`` forward passes with the labels of the unit teachers ``β = e_j``
  (``X w`` has components ``ŷ(β = e_j)``), which is exact by linearity.
  In the context's own eigenbasis ``ẽ = Oᵀ e`` (columns of ``O`` are the
  eigenvectors of Σ, paired with λ_k, ω_k of eq. 2) and, since β ~ N(0, Ω)
  is independent of ``e``, ``E[(ŷ − y*)² | X, O] = Σ_k ω_k ẽ_k²``. The mode-k
  loss is ``ω_k E[ẽ_k²]`` (these sum to the expected loss; ``modewise_total``),
  and the normalised mode-k loss is ``E[ẽ_k²]/E[t̃_k²]`` (i.e. divided by
  ``ω_k E[t̃_k²]``, the mode-k loss of the zero predictor).
  A model that mixes labels into its queries and keys (``single_stream``,
  whose values carry the inputs too) has no prediction of the form ``βᵀ e``;
  its mode-wise arrays are NaN (documented, not approximated).
* **Selection error** (paper eqs. 90-91, Fig. 13): ``E_L(c) = ‖p̄_L(c) − p*‖²``
  with ``p̄_L = (1/L) Σ_ℓ p_ℓ`` and ``p* = 1/k`` on the top-k context tokens by
  cosine similarity to the test input (``k = 1``, the matched token, on the
  easy task), zero elsewhere; its percentiles ``Q_L(q)``. Softmax models only.
* **ρ** (paper eq. 83), for a model with a context-to-context attention
  (``ForwardResult.context_attention``, the mask ``M(m)``): the least-squares fit of
  layer 1's context-to-context attention, ``A_1 ≈ ρ I_P + (1 − ρ) J_P``,
  ``J_P = 11ᵀ/P``, jointly over all contexts (closed form :data:`RHO`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from theory.validation import check_generator, check_positive_int

from .models import MODELS, chunk_size, get_model

__all__ = [
    "RHO",
    "Diagnostics",
    "diagnose",
    "diagnose_batch",
    "context_diagnostics",
    "ContextDiagnostics",
    "top1_attention_mass",
    "target_vectors",
    "error_vectors",
    "modewise_loss",
    "selection_error",
    "selection_quantiles",
    "selection_percentiles",
    "fit_rho",
    "context_rho",
    "plot_modewise_loss",
]

#: percentiles q of the selection error reported by default (eq. 91)
DEFAULT_QUANTILES = (0.5, 0.9, 0.95, 0.99)

# paper eq. (83): minimise ‖A − ρI − (1−ρ)J‖_F² over ρ. With D = A − J and E = I − J
# (‖E‖_F² = tr(I − J) = P − 1): ρ = ⟨D, E⟩/(P − 1) = (tr A − 1ᵀA1/P − 1 + 1)/(P − 1).
# Built on first use (``numerics.diagnostics.RHO``) so that importing the trainer, as
# ``idepth train --help`` does, does not import sympy.
@functools.cache
def _rho_symbols():
    import sympy as sp

    P, trace, total = sp.symbols("P trace_A sum_A", positive=True)
    # least-squares ρ of eq. (83) in terms of tr A and the sum of all entries of A (one P×P matrix)
    return (trace, total, P), (trace - total / P) / (P - 1)


@functools.cache
def _rho_numeric():
    import sympy as sp

    arguments, rho = _rho_symbols()
    return sp.lambdify(arguments, rho, "numpy")


def __getattr__(name: str):
    if name == "RHO":  # the sympy expression of eq. (83)
        return _rho_symbols()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- pieces


def top1_attention_mass(attention: np.ndarray) -> np.ndarray:
    """Mean over contexts of the largest test-token attention weight, per layer (Fig. 4c).

    Parameters
    ----------
    attention : array, shape (L, B, P)
        Test-token attention rows ``p_ℓ`` (``ForwardResult.attention``).

    Returns
    -------
    ndarray, shape (L,)

    References
    ----------
    Paper Fig. 4c and section 4.2 (easy task: top-1 mass → 1).

    Examples
    --------
    >>> top1_attention_mass(np.array([[[0.9, 0.1], [0.5, 0.5]]])).tolist()
    [0.7]
    """
    attention = np.asarray(attention, dtype=np.float64)
    if attention.ndim != 3:
        raise ValueError(f"attention must have shape (L, B, P); got shape {attention.shape}")
    return attention.max(axis=2).mean(axis=1)


def target_vectors(batch) -> np.ndarray:
    """The input-space target ``t`` with ``y* = βᵀ t``: ``x_test`` (easy, eq. 5) or the top-k mean (eq. 6).

    References
    ----------
    Paper eqs. (5), (6), (41).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> from numerics.tasks import sample
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 3), 5, 4, np.random.default_rng(0), k=2)
    >>> t = target_vectors(batch)
    >>> bool(np.allclose(np.einsum("bd,bd->b", batch.teacher, t), batch.target))
    True
    """
    from numerics.tasks import top_k_indices

    if batch.task == "easy":
        return np.asarray(batch.test_x, dtype=np.float64)
    idx = top_k_indices(batch.context_x, batch.test_x, batch.k)
    chosen = np.take_along_axis(np.asarray(batch.context_x, dtype=np.float64), idx[:, :, None], axis=1)
    return chosen.mean(axis=1)


def error_vectors(model, params: Mapping[str, np.ndarray], batch, result=None) -> np.ndarray:
    """Input-space error vectors ``e`` with ``ŷ − y* = βᵀ e`` for a label-linear model (see module docstring).

    Computed from ``d`` forward passes with the labels of the unit teachers
    ``β = e_j`` (``y_i = x_{i,j}``), exact because the prediction is linear in
    the labels: ``(X w)_j = ŷ(β = e_j)``, ``e = X w − t``. A model that provides
    ``label_weights`` (the M(0) softmax models: ``w = (1/L) Σ_ℓ g_ℓ p_ℓ``) gives ``w``
    from one forward pass (``result``, computed if not given) and ``Xᵀw`` directly; a model that
    provides ``label_readout`` (the linear model: one adjoint pass, ``dŷ/dc``) gives ``X w`` itself.

    Parameters
    ----------
    model : module
        A model module from :func:`numerics.models.get_model` with the fact
        ``LABEL_LINEAR`` (its prediction is linear in the labels).
    params : dict
    batch : numerics.tasks.Batch
    result : ForwardResult, optional
        ``model.forward(params, batch)``, if already computed.

    Returns
    -------
    ndarray, shape (B, d), float64

    References
    ----------
    Paper eqs. (24) (linear: ``e = 𝒫_L(S) q − t``), (43), (60) (softmax: ``e = g X p̄ − t``).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> from numerics.models import get_model
    >>> from numerics.tasks import sample
    >>> model = get_model("nonlinear")
    >>> params = model.init_params(3, 4, 2, np.random.default_rng(0))
    >>> batch = sample("easy", PowerLawSpectrum(1, 1, 3), 6, 5, np.random.default_rng(1))
    >>> e = error_vectors(model, params, batch)
    >>> residual = model.forward(params, batch).prediction - batch.target
    >>> bool(np.allclose(np.einsum("bd,bd->b", batch.teacher, e), residual))
    True
    """
    if not model.LABEL_LINEAR:
        raise ValueError(
            f"model must be one of {', '.join(_label_linear_models())} (prediction linear in the labels); got {model.NAME!r}"
        )
    context_x = np.asarray(batch.context_x)
    readout = getattr(model, "label_readout", None)
    if readout is not None:
        return readout(params, batch) - target_vectors(batch)
    weights = getattr(model, "label_weights", None)
    if weights is not None:
        w = weights(params, model.forward(params, batch) if result is None else result)
        return np.einsum("bp,bpd->bd", w, np.asarray(context_x, dtype=np.float64)) - target_vectors(batch)
    d = context_x.shape[2]
    readout = np.empty((context_x.shape[0], d), dtype=np.float64)
    for j in range(d):
        unit = dataclasses.replace(batch, context_y=np.ascontiguousarray(context_x[:, :, j]))
        readout[:, j] = model.forward(params, unit).prediction
    return readout - target_vectors(batch)


def modewise_loss(errors: np.ndarray, targets: np.ndarray, rotation: np.ndarray, spectrum) -> tuple[np.ndarray, np.ndarray]:
    """Mode-wise loss ``ω_k E[ẽ_k²]`` and its zero-predictor reference ``ω_k E[t̃_k²]`` (Figs. 3c, 7).

    ``ẽ = Oᵀ e`` and ``t̃ = Oᵀ t`` are the error and target vectors in the
    context's eigenbasis (column ``k`` of ``O`` pairs with ``λ_k``, ``ω_k``).
    ``Σ_k ω_k ẽ_k² = eᵀ Ω e`` = ``E_β[(ŷ − y*)²]`` per context, so the first
    array sums to the expected loss.

    Parameters
    ----------
    errors, targets : array, shape (B, d)
        ``e`` (:func:`error_vectors`) and ``t`` (:func:`target_vectors`).
    rotation : array, shape (B, d, d)
        Per-context eigenvectors ``O`` (``Batch.rotation``).
    spectrum : theory.Spectrum or theory.PowerLawSpectrum

    Returns
    -------
    loss, reference : ndarray, shape (d,)
        Divide them for the normalised mode-wise loss.

    References
    ----------
    Paper eqs. (3), (26), (43); Figs. 3c and 7.

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> O = np.eye(2)[None]
    >>> loss, ref = modewise_loss(np.array([[1.0, 2.0]]), np.array([[2.0, 2.0]]), O, PowerLawSpectrum(0, 1, 2))
    >>> loss.tolist(), ref.tolist()
    ([1.0, 2.0], [4.0, 2.0])
    """
    from theory.spectra import as_spectrum

    spectrum = as_spectrum(spectrum)
    rotation = np.asarray(rotation, dtype=np.float64)
    omega = spectrum.teacher_eigenvalues
    e_tilde = np.einsum("bji,bj->bi", rotation, np.asarray(errors, dtype=np.float64))
    t_tilde = np.einsum("bji,bj->bi", rotation, np.asarray(targets, dtype=np.float64))
    return omega * np.mean(e_tilde**2, axis=0), omega * np.mean(t_tilde**2, axis=0)


def selection_error(attention: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """Per-context selection error ``E_L(c) = ‖p̄_L(c) − p*‖²`` (eq. 90).

    Parameters
    ----------
    attention : array, shape (L, B, P)
        Test-token attention rows ``p_ℓ``; ``p̄_L`` is their mean over layers.
    selected : int array, shape (B, k)
        The ``k`` target tokens of each context (:func:`numerics.tasks.top_k_indices`); ``p*``
        puts ``1/k`` on each.

    Returns
    -------
    ndarray, shape (B,)

    References
    ----------
    Paper eqs. (90)-(91), Fig. 13.

    Examples
    --------
    >>> p_star = np.array([[[0.5, 0.5, 0.0]]])
    >>> selection_error(p_star, np.array([[1, 0]])).tolist()
    [0.0]
    >>> selection_error(np.array([[[1.0, 0.0, 0.0]]]), np.array([[0, 1]])).tolist()
    [0.5]
    """
    attention = np.asarray(attention, dtype=np.float64)
    if attention.ndim != 3:
        raise ValueError(f"attention must have shape (L, B, P); got shape {attention.shape}")
    selected = np.asarray(selected)
    mean_row = attention.mean(axis=0)
    p_star = np.zeros_like(mean_row)
    np.put_along_axis(p_star, selected, 1.0 / selected.shape[1], axis=1)
    return np.sum((mean_row - p_star) ** 2, axis=1)


def selection_quantiles(errors: np.ndarray, q: Sequence[float] = DEFAULT_QUANTILES) -> np.ndarray:
    """Percentiles ``Q_L(q)`` of the selection error over contexts (eq. 91).

    References
    ----------
    Paper eq. (91).

    Examples
    --------
    >>> selection_quantiles(np.arange(101.0), (0.5, 0.9)).tolist()
    [50.0, 90.0]
    """
    q = np.asarray(q, dtype=np.float64)
    if np.any((q < 0) | (q > 1)):
        raise ValueError(f"q must be quantile levels in [0, 1]; got {q.tolist()}")
    return np.quantile(np.asarray(errors, dtype=np.float64), q)


def selection_percentiles(errors: np.ndarray, q: Sequence[float] = DEFAULT_QUANTILES) -> dict[str, float]:
    """``{"selection_Q(q)": Q_L(q)}``: :func:`selection_quantiles` keyed as in metrics tables (eq. 91).

    References
    ----------
    Paper eq. (91).

    Examples
    --------
    >>> selection_percentiles(np.arange(101.0), (0.5, 0.9))
    {'selection_Q(0.5)': 50.0, 'selection_Q(0.9)': 90.0}
    """
    return _percentile_keys(q, selection_quantiles(errors, q))


def _percentile_keys(levels, values) -> dict[str, float]:
    return {f"selection_Q({level:g})": float(value) for level, value in zip(levels, values)}


def fit_rho(context_attention: np.ndarray) -> float:
    """Least-squares ρ of ``A_1 ≈ ρ I_P + (1 − ρ) J_P`` jointly over contexts (eq. 83).

    Closed form :data:`RHO` per context, ``ρ = (tr A − 1ᵀA1/P)/(P − 1)``;
    the joint least-squares fit over a batch is their mean (every context's
    design ``I − J`` has the same norm).

    Parameters
    ----------
    context_attention : array, shape (B, P, P) or (P, P)

    References
    ----------
    Paper eqs. (83)-(84).

    Examples
    --------
    >>> P, rho = 4, 0.3
    >>> A = rho * np.eye(P) + (1 - rho) * np.ones((P, P)) / P
    >>> round(fit_rho(A), 12)
    0.3
    """
    return float(np.mean(context_rho(context_attention)))


def context_rho(context_attention: np.ndarray) -> np.ndarray:
    """Per-context least-squares ρ of ``A_1 ≈ ρ I_P + (1 − ρ) J_P`` (eq. 83); :func:`fit_rho` is their mean.

    Parameters
    ----------
    context_attention : array, shape (B, P, P) or (P, P)

    Returns
    -------
    ndarray, shape (B,)

    References
    ----------
    Paper eqs. (83)-(84).

    Examples
    --------
    >>> P = 3
    >>> A = np.stack([np.eye(P), np.ones((P, P)) / P])
    >>> context_rho(A).round(12).tolist()
    [1.0, 0.0]
    """
    A = np.asarray(context_attention, dtype=np.float64)
    if A.ndim == 2:
        A = A[None]
    if A.ndim != 3 or A.shape[1] != A.shape[2] or A.shape[1] < 2:
        raise ValueError(f"context_attention must have shape (B, P, P) with P >= 2; got shape {A.shape}")
    P = A.shape[1]
    return _rho_numeric()(np.trace(A, axis1=1, axis2=2), A.sum(axis=(1, 2)), float(P))


# --------------------------------------------------------------------------- the whole set


@dataclass(frozen=True, eq=False)
class Diagnostics:
    """Everything :func:`diagnose` measures (see the module docstring for the definitions).

    Attributes
    ----------
    model, task : str
    depth, n_contexts : int
    R_L, A_L, C_L, R_L_se, A_L_se, C_L_se : float
        Decomposition of eqs. (61)-(63) (``C_L`` NaN for L = 1).
    layer_errors : ndarray, shape (L,)
        ``E e_ℓ²`` per layer.
    top1_attention_mass : ndarray, shape (L,)
        NaN for the linear model.
    modewise_loss, modewise_reference, modewise_loss_normalised : ndarray, shape (d,)
        ``ω_k E ẽ_k²``, ``ω_k E t̃_k²`` and their ratio; NaN for ``single_stream``.
    modewise_total : float
        ``Σ_k ω_k E ẽ_k²`` = ``E eᵀΩe``, the expected loss given the contexts.
    selection_error : ndarray, shape (n_contexts,)
        ``E_L(c)`` (eq. 90); NaN for the linear model.
    quantile_levels, selection_quantiles : ndarray
        ``q`` and ``Q_L(q)`` (eq. 91).
    rho, m : float
        Eq. (83) fit and the learned context-update scalar (NaN unless ``context_updates``).
    prediction : ndarray, shape (n_contexts,)
        ``ŷ_L`` per context (float64).
    context_rho : ndarray, shape (n_contexts,)
        ρ of eq. (83) per context (:func:`context_rho`; NaN unless ``context_updates``).
    A1_example : ndarray, shape (P, P), or None
        Layer 1's context-to-context attention ``A_1`` on the first context (None unless ``context_updates``).

    Notes
    -----
    No example: it needs a trained model or a checkpoint; see :func:`diagnose`.

    References
    ----------
    Paper eqs. (61)-(63), (83), (90)-(91); Figs. 3c, 4c, 7, 13.
    """

    model: str
    task: str
    depth: int
    n_contexts: int
    R_L: float
    A_L: float
    C_L: float
    R_L_se: float
    A_L_se: float
    C_L_se: float
    layer_errors: np.ndarray
    top1_attention_mass: np.ndarray
    modewise_loss: np.ndarray
    modewise_reference: np.ndarray
    modewise_loss_normalised: np.ndarray
    modewise_total: float
    selection_error: np.ndarray
    quantile_levels: np.ndarray
    selection_quantiles: np.ndarray
    rho: float
    m: float
    prediction: np.ndarray
    context_rho: np.ndarray
    A1_example: np.ndarray | None

    def summary(self) -> dict[str, Any]:
        """Scalar summary (JSON-able) for tables and metrics files.

        Examples
        --------
        See :func:`diagnose`.
        """
        out: dict[str, Any] = {
            "model": self.model,
            "task": self.task,
            "depth": self.depth,
            "n_contexts": self.n_contexts,
            "R_L": self.R_L,
            "R_L_se": self.R_L_se,
            "A_L": self.A_L,
            "A_L_se": self.A_L_se,
            "C_L": self.C_L,
            "C_L_se": self.C_L_se,
            "modewise_total": self.modewise_total,
            "top1_attention_mass_mean": float(np.mean(self.top1_attention_mass)),
            "top1_attention_mass_last": float(self.top1_attention_mass[-1]),
        }
        out.update(_percentile_keys(self.quantile_levels, self.selection_quantiles))
        out["rho"] = self.rho
        out["m"] = self.m
        return out


def _label_linear_models() -> list[str]:
    return [name for name, model in MODELS.items() if model.LABEL_LINEAR]


def diagnose_batch(model, params: Mapping[str, np.ndarray], batch, spectrum, *, chunk: int | None = None, quantiles=DEFAULT_QUANTILES) -> Diagnostics:
    """All diagnostics of ``params`` on a given batch (used by :func:`diagnose` and by training).

    Parameters
    ----------
    model : module
        From :func:`numerics.models.get_model`.
    params : dict
    batch : numerics.tasks.Batch
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        The spectra ``λ``, ``ω`` the batch was drawn from (eq. 2), for the mode-wise loss.
    chunk : int or None
        Contexts per forward pass (bounds memory; default
        :func:`numerics.models.chunk_size`).
    quantiles : sequence of float
        Levels ``q`` of the selection-error percentiles ``Q_L(q)``.

    Notes
    -----
    No example: it needs a trained model or a checkpoint; see :func:`diagnose`.

    References
    ----------
    Paper eqs. (61)-(63), (83), (90)-(91).
    """
    from theory.decomposition import decompose
    from theory.spectra import as_spectrum

    chunk = chunk_size(model, params, batch) if chunk is None else check_positive_int("chunk", chunk)
    spectrum = as_spectrum(spectrum)
    n = batch.target.shape[0]
    layer_predictions, top1, errors, targets, pieces = [], [], [], [], []
    for start in range(0, n, chunk):
        part = batch.slice(start, start + chunk)
        result = model.forward(params, part)
        layer_predictions.append(np.asarray(result.layer_predictors, dtype=np.float64))
        if model.ATTENTION == "softmax":
            top1.append(np.asarray(result.attention, dtype=np.float64).max(axis=2))
        if model.LABEL_LINEAR:
            errors.append(error_vectors(model, params, part, result))
            targets.append(target_vectors(part))
        pieces.append(_context_pieces(model, result, part, first=start == 0))
    per_context = _joined(pieces, n)

    f = np.concatenate(layer_predictions, axis=1)
    target = np.asarray(batch.target, dtype=np.float64)
    dec = decompose(f, target)
    L, d = f.shape[0], spectrum.d
    layer_errors = np.mean((f - target) ** 2, axis=1)
    levels = np.asarray(quantiles, dtype=np.float64)
    if top1:
        top1_mass = np.concatenate(top1, axis=1).mean(axis=1)
        q_values = selection_quantiles(per_context.selection_error, levels)
    else:
        top1_mass = np.full(L, np.nan)
        q_values = np.full(levels.shape, np.nan)
    if errors:
        mode_loss, mode_ref = modewise_loss(np.concatenate(errors), np.concatenate(targets), batch.rotation, spectrum)
        with np.errstate(divide="ignore", invalid="ignore"):
            normalised = mode_loss / mode_ref
        total = float(mode_loss.sum())
    else:
        mode_loss = mode_ref = normalised = np.full(d, np.nan)
        total = math.nan
    if per_context.A1_example is not None:
        rhos = [(float(np.mean(piece[2])), piece[2].shape[0]) for piece in pieces]  # each chunk's fit, weighted
        rho = float(sum(r * w for r, w in rhos) / sum(w for _, w in rhos))
        m = float(np.asarray(params["m"]).reshape(-1)[0])
    else:
        rho = m = math.nan
    return Diagnostics(
        model=model.NAME,
        task=batch.task,
        depth=int(L),
        n_contexts=int(n),
        R_L=dec.R,
        A_L=dec.A,
        C_L=dec.C,
        R_L_se=dec.R_se,
        A_L_se=dec.A_se,
        C_L_se=dec.C_se,
        layer_errors=layer_errors,
        top1_attention_mass=top1_mass,
        modewise_loss=mode_loss,
        modewise_reference=mode_ref,
        modewise_loss_normalised=normalised,
        modewise_total=total,
        selection_error=per_context.selection_error,
        quantile_levels=levels,
        selection_quantiles=q_values,
        rho=rho,
        m=m,
        prediction=per_context.prediction,
        context_rho=per_context.context_rho,
        A1_example=per_context.A1_example,
    )


class ContextDiagnostics(NamedTuple):
    """The per-context diagnostics (:func:`context_diagnostics`; the same fields of :class:`Diagnostics`).

    Attributes
    ----------
    prediction : ndarray, shape (B,)
        ``ŷ_L`` per context (float64).
    selection_error : ndarray, shape (B,)
        ``E_L(c)`` (eq. 90); NaN for linear attention.
    context_rho : ndarray, shape (B,)
        ρ of eq. (83) per context; NaN without a context-to-context attention.
    A1_example : ndarray, shape (P, P), or None
        Layer 1's context attention on the first context; None without one.

    References
    ----------
    Paper eqs. (83), (90).

    Examples
    --------
    >>> nan = np.full(2, np.nan)
    >>> ContextDiagnostics(np.zeros(2), nan, nan, None).prediction.shape
    (2,)
    """

    prediction: np.ndarray
    selection_error: np.ndarray
    context_rho: np.ndarray
    A1_example: np.ndarray | None


def _context_pieces(model, result, part, first: bool) -> tuple:
    """ŷ_L, E_L(c) and ρ per context of one forward pass on ``part``; on the first chunk also ``A_1`` of context 0."""
    from numerics.tasks import top_k_indices

    selection = rho = a1 = None
    if model.ATTENTION == "softmax":
        selected = top_k_indices(part.context_x, part.test_x, 1 if part.task == "easy" else part.k)
        selection = selection_error(result.attention, selected)
    if result.context_attention is not None:
        rho = context_rho(result.context_attention)
        a1 = np.array(result.context_attention[0], dtype=np.float64) if first else None
    return np.asarray(result.prediction, dtype=np.float64), selection, rho, a1


def _joined(pieces: list, n: int) -> ContextDiagnostics:
    def column(i):
        return np.full(n, np.nan) if pieces[0][i] is None else np.concatenate([piece[i] for piece in pieces])

    return ContextDiagnostics(column(0), column(1), column(2), pieces[0][3])


def context_diagnostics(model, params: Mapping[str, np.ndarray], batch, *, chunk: int | None = None) -> ContextDiagnostics:
    """The per-context fields of :func:`diagnose_batch` alone: ``ŷ_L``, ``E_L(c)``, ρ per context, ``A_1``.

    One forward pass per chunk of ``chunk`` contexts (default :func:`numerics.models.chunk_size`).
    A forward pass is equal to round-off, not bitwise, across different chunkings of the same
    contexts: this gives the values of a chunking other than :func:`diagnose_batch`'s.

    Parameters
    ----------
    model : module
    params : dict
    batch : numerics.tasks.Batch
    chunk : int or None

    Returns
    -------
    ContextDiagnostics

    References
    ----------
    Paper eqs. (83), (90).

    Examples
    --------
    >>> from theory.spectra import PowerLawSpectrum
    >>> from numerics.tasks import sample
    >>> model = get_model("context_updates")
    >>> params = model.init_params(3, 4, 2, np.random.default_rng(0))
    >>> batch = sample("difficult", PowerLawSpectrum(0, 0, 3), 6, 5, np.random.default_rng(1), k=2)
    >>> out = context_diagnostics(model, params, batch, chunk=2)
    >>> out.prediction.shape, out.selection_error.shape, out.A1_example.shape
    ((5,), (5,), (6, 6))
    >>> bool(np.allclose(out.prediction, model.forward(params, batch).prediction))
    True
    """
    chunk = chunk_size(model, params, batch) if chunk is None else check_positive_int("chunk", chunk)
    n = batch.target.shape[0]
    pieces = []
    for start in range(0, n, chunk):
        part = batch.slice(start, start + chunk)
        pieces.append(_context_pieces(model, model.forward(params, part), part, first=start == 0))
    return _joined(pieces, n)


def diagnose(params_or_result, config=None, n_contexts: int = 2048, rng=None, *, quantiles=DEFAULT_QUANTILES) -> Diagnostics:
    """Diagnose a trained model on ``n_contexts`` fresh contexts of its task.

    Parameters
    ----------
    params_or_result : numerics.train.TrainResult or dict
        A training result -- anything with ``.config`` and ``.params``; its config is
        used when ``config`` is None -- or a parameter dict (then ``config`` is required).
    config : numerics.train.TrainConfig or None
        Model, task, sizes and spectrum (read: ``model``, ``task``, ``P``, ``k``,
        ``spectrum()``, ``numpy_dtype``).
    n_contexts : int
        Fresh contexts to average over.
    rng : numpy.random.Generator or int
        Source of the fresh contexts (an int is used as a seed). Required.
    quantiles : sequence of float
        Levels ``q`` of the selection-error percentiles ``Q_L(q)``.

    Returns
    -------
    Diagnostics

    References
    ----------
    Paper eqs. (61)-(63), (83), (90)-(91); Figs. 3c, 4c, 7, 13.

    Examples
    --------
    >>> from numerics.train import TrainConfig, train
    >>> cfg = TrainConfig(model="nonlinear", task="easy", d=2, N=2, P=8, depth=2, batch_size=8,
    ...                   max_steps=5, eval_every=5, eval_size=8, warmup_steps=0)
    >>> diag = diagnose(train(cfg), n_contexts=16, rng=0)
    >>> diag.top1_attention_mass.shape, diag.modewise_loss.shape
    ((2,), (2,))
    >>> bool(np.isclose(diag.modewise_loss.sum(), diag.modewise_total))
    True
    """
    from numerics.tasks import sample

    if isinstance(params_or_result, Mapping):
        params = params_or_result
        if config is None:
            raise ValueError("config is required when params_or_result is a parameter dict")
    elif hasattr(params_or_result, "config") and hasattr(params_or_result, "params"):  # a TrainResult
        params = params_or_result.params
        config = params_or_result.config if config is None else config
    else:
        raise TypeError(
            f"params_or_result must be a TrainResult or a parameter dict; got {type(params_or_result).__name__}"
        )
    if not all(hasattr(config, name) for name in ("model", "task", "P", "k", "spectrum", "numpy_dtype")):
        raise TypeError(f"config must be a TrainConfig; got {type(config).__name__}")
    n_contexts = check_positive_int("n_contexts", n_contexts)
    if rng is None:  # the signature's default: a required argument left out
        raise ValueError("rng must be a numpy.random.Generator or a non-negative integer seed; got None")
    rng = check_generator(rng, allow_seed=True)
    spectrum = config.spectrum()
    batch = sample(config.task, spectrum, config.P, n_contexts, rng, k=config.k, dtype=config.numpy_dtype)
    return diagnose_batch(get_model(config.model), params, batch, spectrum, quantiles=quantiles)


def plot_modewise_loss(diagnostics: Diagnostics, path, *, title: str | None = None) -> None:
    """Save the normalised mode-wise loss ``E ẽ_k²/E t̃_k²`` against the mode index k (Figs. 3c, 7).

    Uses matplotlib's Agg backend (no display needed).

    References
    ----------
    Paper Figs. 3c and 7.

    Examples
    --------
    >>> import tempfile, os
    >>> from numerics.train import TrainConfig, train
    >>> cfg = TrainConfig(model="linear", task="easy", d=2, N=2, P=8, batch_size=8, max_steps=2,
    ...                   eval_every=2, eval_size=8, warmup_steps=0)
    >>> diag = diagnose(train(cfg), n_contexts=8, rng=0)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     plot_modewise_loss(diag, os.path.join(tmp, "m.png"))
    ...     os.path.getsize(os.path.join(tmp, "m.png")) > 0
    True
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    if not isinstance(diagnostics, Diagnostics):
        raise TypeError(f"diagnostics must be a Diagnostics; got {type(diagnostics).__name__}")
    values = np.asarray(diagnostics.modewise_loss_normalised)
    if not np.any(np.isfinite(values)):
        raise ValueError(
            f"the mode-wise loss is not defined for the {diagnostics.model!r} model "
            f"(defined for {', '.join(_label_linear_models())})"
        )
    modes = np.arange(1, values.size + 1)
    fig, ax = plt.subplots(figsize=(5.0, 3.6), constrained_layout=True)
    try:
        ax.plot(modes, values, marker="o", ms=3, lw=1)
        ax.axhline(1.0, color="0.6", lw=0.8, ls="--", label="zero predictor")
        ax.set_xscale("log")
        if np.nanmin(values) > 0:
            ax.set_yscale("log")
        ax.set_xlim(0.8, modes[-1] * 1.25)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # labelled minor ticks collide at 0.9 / 1
        ax.set_xlabel("mode k (rank of the input eigenvalue λ_k)")
        ax.set_ylabel(r"normalised mode loss $E\,\tilde e_k^2 / E\,\tilde t_k^2$")
        ax.set_title(title or f"{diagnostics.model}, {diagnostics.task} task, L = {diagnostics.depth}")
        ax.legend(frameon=False)
        from numerics.io import save_figure

        save_figure(fig, path, dpi=120, close=False)  # atomic; a path matplotlib cannot write is refused
    finally:
        plt.close(fig)
