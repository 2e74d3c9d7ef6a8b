"""Oracle bounds for softmax heads on the top-k task (the study the paper does not give).

A *softmax head over a similarity* predicts, for one context,

    u_τ = Σ_i softmax_i(τ · s(x_i, x_test)) y_i ,      ŷ = g · u_τ ,

with an inverse temperature τ and a gain g. This is exactly the form of one
layer's predictor in the paper's controlled nonlinear model, ``f_ℓ = g p_ℓ y``
(paper eq. 60), when the layer's logits are a multiple of the similarity ``s``.
:func:`softmax_head_bound` finds, by Monte Carlo over contexts drawn as in
paper eqs. (1)-(6), the best loss such a head can reach with the optimal τ and g
(no training involved), and the best loss of a non-negative mixture
``Σ_j w_j u_{τ_j}`` of heads — which is what an average of L layers
``(1/L) Σ_ℓ f_ℓ`` with non-negative gains can express (eq. 60).

Any loss a trained model of this class reports below the single-head bound must
come from something the bound leaves out (a learned similarity different from
``s``, mixtures of heads); a *paper* number below the *mixture* bound at the same
sizes and similarity is a contradiction that the reproduction report states.

Statistics: τ, g and the mixture weights are fitted on one half of the sampled
contexts and the loss is evaluated on the other half (so the estimate is an
honest, slightly pessimistic Monte-Carlo value of an achievable loss); the
standard error is that of the mean squared error over the evaluation half.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls

from theory._validation import check_choice, check_positive_int
from theory.spectra import as_spectrum

from .tasks import cosine_similarity, sample

__all__ = ["HeadBound", "SIMILARITIES", "softmax_head_bound", "head_outputs"]

#: similarities a head can attend with: cosine (the task's own ranking, eq. 6) or the inner product (eq. 44)
SIMILARITIES = ("cosine", "dot")


@dataclass(frozen=True)
class HeadBound:
    """Result of :func:`softmax_head_bound` (all losses are mean squared errors, eq. 12).

    Attributes
    ----------
    single_head_loss, single_head_standard_error : float
        Held-out loss of the best single head (optimal τ and g over the grid) and its SE.
    temperature, gain : float
        The optimal inverse temperature τ and gain g.
    mixture_loss, mixture_standard_error : float
        Held-out loss of the best non-negative mixture of at most ``heads`` heads.
    mixture_temperatures, mixture_weights : tuple of float
        The heads of that mixture and their weights.
    target_second_moment : float
        E[y*²], the loss of predicting 0.
    spectrum_label, P, k, similarity, n_contexts, heads : description of the setting.
    """

    single_head_loss: float
    single_head_standard_error: float
    temperature: float
    gain: float
    mixture_loss: float
    mixture_standard_error: float
    mixture_temperatures: tuple
    mixture_weights: tuple
    target_second_moment: float
    spectrum_label: str
    P: int
    k: int
    similarity: str
    n_contexts: int
    heads: int

    def to_dict(self) -> dict:
        """A JSON-able dict of the result."""
        from dataclasses import asdict

        out = asdict(self)
        out["mixture_temperatures"] = list(self.mixture_temperatures)
        out["mixture_weights"] = list(self.mixture_weights)
        return out


def head_outputs(context_x: np.ndarray, context_y: np.ndarray, test_x: np.ndarray, temperatures: np.ndarray, similarity: str = "cosine") -> np.ndarray:
    """Head outputs ``u_τ = softmax(τ s) · y`` for every context and temperature, shape (B, T).

    Parameters
    ----------
    context_x : ndarray, shape (B, P, d)
    context_y : ndarray, shape (B, P)
    test_x : ndarray, shape (B, d)
    temperatures : ndarray, shape (T,)
        Inverse temperatures τ > 0.
    similarity : {'cosine', 'dot'}

    References
    ----------
    Paper eq. (60) (one layer's predictor ``g p_ℓ y``), eq. (6) (cosine similarity).

    Examples
    --------
    >>> cx = np.array([[[1.0, 0.0], [0.0, 1.0]]]); cy = np.array([[3.0, -1.0]])
    >>> head_outputs(cx, cy, np.array([[1.0, 0.0]]), np.array([0.0, 1e3])).round(6).tolist()
    [[1.0, 3.0]]
    """
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    if similarity == "cosine":
        scores = cosine_similarity(context_x, test_x)
    else:
        scores = (context_x @ test_x[:, :, None])[..., 0]
    scores = scores - scores.max(axis=1, keepdims=True)  # stable softmax
    out = np.empty((scores.shape[0], len(temperatures)))
    for j, tau in enumerate(np.asarray(temperatures, dtype=np.float64)):
        weights = np.exp(tau * scores)
        out[:, j] = (weights * context_y).sum(axis=1) / weights.sum(axis=1)
    return out


def _mse_and_se(prediction: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    sq = (prediction - target) ** 2
    return float(sq.mean()), float(sq.std(ddof=1) / np.sqrt(sq.size))


def softmax_head_bound(
    spectrum,
    P: int,
    k: int = 2,
    *,
    similarity: str = "cosine",
    heads: int = 64,
    n_contexts: int = 8192,
    rng: np.random.Generator | int = 0,
    temperatures: np.ndarray | None = None,
    chunk: int = 128,
) -> HeadBound:
    """Best loss of one softmax head (optimal temperature and gain), and of a mixture of heads.

    Parameters
    ----------
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Data spectra (eq. 2); ``d = spectrum.d``.
    P : int
        Context length.
    k : int, default 2
        Top-k of the difficult task (eq. 6), ``1 <= k <= P``.
    similarity : {'cosine', 'dot'}
        What the head attends with.
    heads : int, default 64
        Largest number of heads in the mixture (the depth L of an average of layers).
    n_contexts : int, default 8192
        Monte-Carlo contexts (half to fit, half to evaluate).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed).
    temperatures : array_like, optional
        Grid of inverse temperatures searched (default: 64 log-spaced values; the
        similarity is scale-free for cosine, so the grid spans 0.3 .. 3e4; for 'dot'
        it is divided by the typical score scale).
    chunk : int
        Contexts sampled at a time (memory ~ chunk·P·d floats).

    Returns
    -------
    HeadBound

    References
    ----------
    Paper eqs. (6), (12), (60); the bound itself is this package's (see the module docstring).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> bound = softmax_head_bound(PowerLawSpectrum(0, 0, 8), P=16, k=1, n_contexts=512, rng=0)
    >>> bound.single_head_loss < 0.05 * bound.target_second_moment  # k = 1: a cold head retrieves the top token
    True
    """
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k must be an integer in [1, P] = [1, {P}]; got k={k}")
    heads = check_positive_int("heads", heads)
    n_contexts = check_positive_int("n_contexts", n_contexts, minimum=16)
    chunk = check_positive_int("chunk", chunk)
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    if isinstance(rng, (int, np.integer)):
        rng = np.random.default_rng(int(rng))
    if temperatures is None:
        temperatures = np.geomspace(0.3, 3e4, 64)
        if similarity == "dot":
            temperatures = temperatures / float(np.sum(spectrum.eigenvalues))  # typical |x|² scale
    temperatures = np.asarray(temperatures, dtype=np.float64)
    if temperatures.ndim != 1 or temperatures.size == 0 or np.any(~np.isfinite(temperatures)) or np.any(temperatures < 0):
        raise ValueError("temperatures must be a non-empty 1-d array of finite values >= 0")

    outputs, targets = [], []
    remaining = n_contexts
    while remaining > 0:
        size = min(chunk, remaining)
        batch = sample("difficult", spectrum, P, size, rng, k=k)
        outputs.append(head_outputs(batch.context_x, batch.context_y, batch.test_x, temperatures, similarity))
        targets.append(np.asarray(batch.target))
        remaining -= size
    U = np.concatenate(outputs)
    y = np.concatenate(targets)
    half = n_contexts // 2
    U_fit, y_fit, U_eval, y_eval = U[:half], y[:half], U[half:], y[half:]

    # single head: for each τ the optimal gain is least squares; keep the τ with the best fitted loss
    gains = (U_fit * y_fit[:, None]).sum(0) / np.maximum((U_fit**2).sum(0), 1e-300)
    fit_losses = ((U_fit * gains - y_fit[:, None]) ** 2).mean(0)
    best = int(np.argmin(fit_losses))
    single, single_se = _mse_and_se(U_eval[:, best] * gains[best], y_eval)

    # mixture: non-negative least squares over the grid, then keep the `heads` largest weights and refit
    weights, _ = nnls(U_fit, y_fit)
    support = np.flatnonzero(weights > 0)
    if support.size > heads:
        support = support[np.argsort(-weights[support])[:heads]]
        sub, _ = nnls(U_fit[:, support], y_fit)
        weights = np.zeros_like(weights)
        weights[support] = sub
        support = np.flatnonzero(weights > 0)
    mixture, mixture_se = _mse_and_se(U_eval @ weights, y_eval)

    label = getattr(spectrum, "a", None)
    label = (
        f"PowerLawSpectrum(a={spectrum.a:g}, b={spectrum.b:g}, d={spectrum.d})" if label is not None else repr(spectrum)
    )
    return HeadBound(
        single_head_loss=single,
        single_head_standard_error=single_se,
        temperature=float(temperatures[best]),
        gain=float(gains[best]),
        mixture_loss=mixture,
        mixture_standard_error=mixture_se,
        mixture_temperatures=tuple(float(t) for t in temperatures[support]),
        mixture_weights=tuple(float(w) for w in weights[support]),
        target_second_moment=float(np.mean(y_eval**2)),
        spectrum_label=label,
        P=P,
        k=k,
        similarity=similarity,
        n_contexts=n_contexts,
        heads=heads,
    )
