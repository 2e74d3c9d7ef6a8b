"""Oracle bounds for softmax heads on the top-k task: what the paper's nonlinear model can express at all.

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

Similarities (``similarity=``):

* ``'cosine'`` -- the task's own ranking ``cos(x_i, x_test)`` (eq. 6);
* ``'dot'`` -- the inner product ``x_iᵀ x_test`` (the ranking of eq. 44);
* ``'prenorm'`` -- what the model's pre-norm gives at initialisation: with an
  orthonormal ``W_x`` (N x d) the normalised features satisfy
  ``ĥ_iᵀ ĥ_test = N cos_M(x_i, x_test)``, ``M = I − v vᵀ/N``, ``v = W_xᵀ 1``
  (the mean over the N features is removed, eq. 9). For ``N = d`` this removes a
  whole direction of x, so a head of the model at ``N = d`` ranks the tokens by
  a (d − 1)-dimensional projection and cannot reach the ``'cosine'`` bound.

Any loss a trained model of this class reports below the single-head bound must
come from something the bound leaves out (a learned similarity different from
``s``, mixtures of heads). These are bounds of heads whose logits are a *multiple* of
``s``: the trained model's layer ``ℓ`` has logits ``r_t r_j x_testᵀ D_ℓ x_j`` with a learned
``d × d`` form ``D_ℓ = (W_q^ℓ A)ᵀ(W_k^ℓ A)`` (see :mod:`numerics.models.nonlinear`), which
need not be a multiple of the identity, so these are not proven bounds of the trained model
(the certified study, ``idepth study certified``, sets the best loss training reaches at each depth
beside ``B_L`` on the same contexts: ``docs/results/certified-revised/certified-study.md``). A paper number below ``B_∞``
is therefore not by itself a contradiction; it would be one against a bound of the whole
model class, which this module does not compute.

Sampling. The head output and the target depend on the context only through the
labels ``y_i = βᵀx_i`` and the similarities, which are invariant under the common
rotation ``O`` of eq. (3) (``'prenorm'``: its direction ``Oᵀv`` is then uniform on
the sphere). Contexts are therefore drawn directly in the eigenbasis,
``x = √λ ⊙ z``, ``β = √ω ⊙ w`` — the same law as :func:`numerics.tasks.sample`
(both are built from :mod:`theory.data_law`) without the ``O(d³)`` rotation per context (``tests/test_study.py`` checks the two
against each other).

Statistics: τ, g and the mixture weights are fitted on one half of the sampled
contexts and the loss is evaluated on the other half (so the estimate is an
honest, slightly pessimistic Monte-Carlo value of an achievable loss); the
standard error is that of the mean squared error over the evaluation half.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from theory.data_law import (
    cosine_similarity,
    eigenbasis_normal,
    haar_orthonormal,
    select_top_k,
    similarity_terms,
    teacher_labels,
    top_k_mean,
)
from theory.spectra import as_spectrum
from theory.validation import check_choice, check_generator, check_positive_int, check_top_k

__all__ = [
    "HeadBound", "SIMILARITIES", "NORMS", "SoftmaxBounds", "softmax_head_bound", "softmax_bounds", "head_outputs",
    "default_temperatures", "average_of_heads", "HeadAllocation", "allocation_losses", "allocation_loss_difference",
]

#: similarities a head can attend with (see the module docstring)
SIMILARITIES = ("cosine", "dot", "prenorm")

#: memory budget of one sampled chunk, in floats of the (chunk, P + 1, d) inputs
_CHUNK_FLOATS = 1 << 22


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
    d : int
        Input dimension.
    width : int or None
        Hidden width N of the ``'prenorm'`` similarity (None otherwise).

    References
    ----------
    Paper eqs. (6), (12), (60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> bound = softmax_head_bound(PowerLawSpectrum(0, 0, 4), P=8, k=2, n_contexts=256, rng=0)
    >>> bound.single_head_loss < bound.target_second_moment
    True
    >>> sorted(bound.to_dict())[:3]
    ['P', 'd', 'gain']
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
    d: int = 0
    width: int | None = None

    def to_dict(self) -> dict:
        """A JSON-able dict of the result (tuples as lists)."""
        out = asdict(self)
        out["mixture_temperatures"] = list(self.mixture_temperatures)
        out["mixture_weights"] = list(self.mixture_weights)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "HeadBound":
        """Rebuild from :meth:`to_dict` output (e.g. a JSON cache).

        Examples
        --------
        >>> from theory import PowerLawSpectrum
        >>> b = softmax_head_bound(PowerLawSpectrum(0, 0, 4), P=8, k=2, n_contexts=64, rng=0)
        >>> HeadBound.from_dict(b.to_dict()) == b
        True
        """
        data = dict(data)
        data["mixture_temperatures"] = tuple(data["mixture_temperatures"])
        data["mixture_weights"] = tuple(data["mixture_weights"])
        return cls(**data)


def head_outputs(context_x: np.ndarray, context_y: np.ndarray, test_x: np.ndarray, temperatures: np.ndarray, similarity: str = "cosine") -> np.ndarray:
    """Head outputs ``u_τ = softmax(τ s) · y`` for every context and temperature, shape (B, T).

    Parameters
    ----------
    context_x : ndarray, shape (B, P, d)
    context_y : ndarray, shape (B, P)
    test_x : ndarray, shape (B, d)
    temperatures : ndarray, shape (T,)
        Inverse temperatures τ >= 0.
    similarity : {'cosine', 'dot'}
        (``'prenorm'`` needs the model's width; use :func:`softmax_head_bound`.)

    References
    ----------
    Paper eq. (60) (one layer's predictor ``g p_ℓ y``), eq. (6) (cosine similarity).

    Examples
    --------
    >>> cx = np.array([[[1.0, 0.0], [0.0, 1.0]]]); cy = np.array([[3.0, -1.0]])
    >>> head_outputs(cx, cy, np.array([[1.0, 0.0]]), np.array([0.0, 1e3])).round(6).tolist()
    [[1.0, 3.0]]
    """
    similarity = check_choice("similarity", similarity, ("cosine", "dot"))
    if similarity == "cosine":
        scores = cosine_similarity(context_x, test_x)
    else:
        scores = (context_x @ test_x[:, :, None])[..., 0]
    return _softmax_reads(scores, np.asarray(context_y, dtype=np.float64), np.asarray(temperatures, dtype=np.float64))


def _softmax_reads(scores: np.ndarray, labels: np.ndarray, temperatures: np.ndarray) -> np.ndarray:
    """``softmax(τ s)·y`` for each τ, (B, T); max-subtracted so large τ stays finite."""
    scores = scores - scores.max(axis=1, keepdims=True)
    out = np.empty((scores.shape[0], len(temperatures)))
    for j, tau in enumerate(temperatures):
        weights = np.exp(tau * scores)
        out[:, j] = (weights * labels).sum(axis=1) / weights.sum(axis=1)
    return out


def default_temperatures(spectrum, similarity: str = "cosine", width: int | None = None) -> np.ndarray:
    """The default grid of inverse temperatures τ searched by :func:`softmax_head_bound`.

    64 log-spaced values over ``0.3 … 3·10⁴`` for the scale-free cosine similarities;
    for ``'dot'`` divided by the typical ``|x|²`` scale ``Σ λ_k``.

    References
    ----------
    Paper eq. (60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> default_temperatures(PowerLawSpectrum(0, 0, 4)).shape
    (64,)
    """
    spectrum = as_spectrum(spectrum)
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    grid = np.geomspace(0.3, 3e4, 64)
    if similarity == "dot":
        grid = grid / float(np.sum(spectrum.eigenvalues))
    return grid


def _prenorm_direction_sq_norm(d: int, width: int, rng: np.random.Generator) -> float:
    """``|v|²/N`` for ``v = W_xᵀ 1`` of one orthonormal ``W_x`` (N x d) drawn as the model draws it."""
    W_x = haar_orthonormal(width, d, rng)
    v = W_x.T @ np.ones(width)
    return float(v @ v) / width


def _draw_scores(spectrum, P: int, k: int, size: int, rng: np.random.Generator, similarity: str, shrink: float):
    """Similarities (B, P), labels (B, P) and top-k targets (B,) of ``size`` contexts, in the eigenbasis.

    The law of (similarities, labels, target) is that of eqs. (1)-(6) (see the module docstring).
    """
    d = spectrum.d
    # float32 draws and products (2x faster; cosines to ~1e-7), float64 from the reductions on;
    # draw order: the P + 1 tokens of each context (the query last), then the teacher
    x = eigenbasis_normal(rng, (size, P + 1, d), spectrum.eigenvalues, np.float32)
    beta = eigenbasis_normal(rng, (size, d), spectrum.teacher_eigenvalues, np.float32)
    context, test = x[:, :P], x[:, P]
    labels = teacher_labels(context, beta).astype(np.float64)  # eq. (1)
    dots, context_sq, test_sq = (term.astype(np.float64) for term in similarity_terms(context, test))
    norms_ctx, norm_test = np.sqrt(context_sq), np.sqrt(test_sq)
    cosine = dots / (norms_ctx * norm_test[:, None])
    # eq. (6): mean label over the top-k cosine similarities (partition; ties have probability 0 for d >= 2)
    target = top_k_mean(labels, select_top_k(cosine, k, ordered=False))
    if similarity == "cosine":
        scores = cosine
    elif similarity == "dot":
        scores = dots
    else:  # pre-norm: cos in the metric M = I − shrink·u uᵀ, u uniform on the sphere (= Oᵀv/|v|)
        u = rng.standard_normal((size, d)).astype(np.float32)
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        proj_ctx = (context @ u[:, :, None])[..., 0].astype(np.float64)
        proj_test = np.einsum("bd,bd->b", test, u).astype(np.float64)
        m_dots = dots - shrink * proj_ctx * proj_test[:, None]
        m_ctx = np.sqrt(np.maximum(norms_ctx**2 - shrink * proj_ctx**2, 1e-300))
        m_test = np.sqrt(np.maximum(norm_test**2 - shrink * proj_test**2, 1e-300))
        scores = m_dots / (m_ctx * m_test[:, None])
    return scores, labels, target


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
    chunk: int | None = None,
    width: int | None = None,
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
    similarity : {'cosine', 'dot', 'prenorm'}
        What the head attends with (module docstring).
    heads : int, default 64
        Largest number of heads in the mixture (the depth L of an average of layers).
    n_contexts : int, default 8192
        Monte-Carlo contexts (half to fit, half to evaluate).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed).
    temperatures : array_like, optional
        Grid of inverse temperatures searched (default :func:`default_temperatures`).
    chunk : int, optional
        Contexts sampled at a time (default: about 4·10⁶ floats of inputs per chunk).
    width : int, optional
        Hidden width ``N >= d`` of the model; required for ``similarity='prenorm'``
        and refused otherwise.

    Returns
    -------
    HeadBound

    Raises
    ------
    ValueError, TypeError
        Bad sizes (``k > P``, ``width < d``), unknown similarity, a bad temperature grid.

    References
    ----------
    Paper eqs. (6), (12), (60); the bound itself is this package's (see the module docstring).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> bound = softmax_head_bound(PowerLawSpectrum(0, 0, 8), P=16, k=1, n_contexts=512, rng=0)
    >>> bound.single_head_loss < 0.05 * bound.target_second_moment  # k = 1: a cold head retrieves the top token
    True
    >>> nd = softmax_head_bound(PowerLawSpectrum(0, 0, 8), P=16, k=1, n_contexts=512, rng=0,
    ...                         similarity="prenorm", width=8)
    >>> nd.single_head_loss > bound.single_head_loss  # N = d: the pre-norm removes one direction of x
    True
    """
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k must be an integer in [1, P] = [1, {P}]; got k={k}")
    heads = check_positive_int("heads", heads)
    n_contexts = check_positive_int("n_contexts", n_contexts, minimum=16)
    similarity = check_choice("similarity", similarity, SIMILARITIES)
    if similarity == "prenorm":
        if width is None:
            raise ValueError("similarity='prenorm' needs width (the model's hidden width N >= d)")
        width = check_positive_int("width", width, minimum=spectrum.d)
    elif width is not None:
        raise ValueError(f"width applies only to similarity='prenorm'; got width={width!r} with similarity={similarity!r}")
    if chunk is None:
        chunk = max(16, _CHUNK_FLOATS // ((P + 1) * spectrum.d))
    chunk = check_positive_int("chunk", chunk)
    rng = check_generator(rng, allow_seed=True)
    if temperatures is None:
        temperatures = default_temperatures(spectrum, similarity)
    temperatures = np.asarray(temperatures, dtype=np.float64)
    if temperatures.ndim != 1 or temperatures.size == 0 or np.any(~np.isfinite(temperatures)) or np.any(temperatures < 0):
        raise ValueError("temperatures must be a non-empty 1-d array of finite values >= 0")

    shrink = _prenorm_direction_sq_norm(spectrum.d, width, rng) if similarity == "prenorm" else 0.0
    outputs, targets = [], []
    remaining = n_contexts
    while remaining > 0:
        size = min(chunk, remaining)
        scores, labels, target = _draw_scores(spectrum, P, k, size, rng, similarity, shrink)
        outputs.append(_softmax_reads(scores, labels, temperatures))
        targets.append(target)
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
    from scipy.optimize import nnls  # imported where used: `idepth --help` stays free of scipy
    weights, _ = nnls(U_fit, y_fit)
    support = np.flatnonzero(weights > 0)
    if support.size > heads:
        support = support[np.argsort(-weights[support])[:heads]]
        sub, _ = nnls(U_fit[:, support], y_fit)
        weights = np.zeros_like(weights)
        weights[support] = sub
        support = np.flatnonzero(weights > 0)
    mixture, mixture_se = _mse_and_se(U_eval @ weights, y_eval)

    if hasattr(spectrum, "a"):
        label = f"PowerLawSpectrum(a={spectrum.a:g}, b={spectrum.b:g}, d={spectrum.d})"
    else:
        label = repr(spectrum)
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
        d=spectrum.d,
        width=width,
    )


# --------------------------------------------------------------------------- B_1, B_L, B_∞ with independent draws

#: pre-norms of the model (paper eq. 9 writes ``norm`` without saying which)
NORMS = ("layer", "rms")


def _reads(spectrum, P: int, k: int, n: int, rng: np.random.Generator, similarity: str, width, norm: str,
           temperatures: np.ndarray, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """Head reads ``U`` (n, T) and targets (n,) of ``n`` fresh contexts."""
    if similarity == "prenorm" and norm == "rms":
        # an orthonormal W_x keeps |W_x x| = |x| and RMSNorm divides by |h|/√N: ĥ_iᵀĥ_test = N cos(x_i, x_test)
        similarity = "cosine"
    shrink = _prenorm_direction_sq_norm(spectrum.d, width, rng) if similarity == "prenorm" else 0.0
    outputs, targets, remaining = [], [], n
    while remaining > 0:
        size = min(chunk, remaining)
        scores, labels, target = _draw_scores(spectrum, P, k, size, rng, similarity, shrink)
        outputs.append(_softmax_reads(scores, labels, temperatures))
        targets.append(target)
        remaining -= size
    return np.concatenate(outputs), np.concatenate(targets)


def average_of_heads(gram: np.ndarray, cross: np.ndarray, second_moment: float, depth: int,
                     start: np.ndarray | None = None) -> tuple[np.ndarray, float, float]:
    """Best equal-weight average of ``depth`` heads (repeats allowed) with one common gain.

    The controlled model of depth L predicts ``ŷ = g (1/L) Σ_ℓ u_{τ_ℓ}`` (paper eq. 60 with
    each layer a softmax head over the similarity); with ``n_j`` layers at temperature
    ``τ_j`` (``Σ n_j = L``) and the optimal ``g``, the loss is
    ``E y*² − (hᵀn)² / (nᵀ G n)`` (``G = E[u uᵀ]``, ``h = E[u y*]``). The allocation ``n`` is
    found by local search over single-unit moves from the rounded non-negative least-squares
    mixture (and from ``start``); exact for ``depth = 1``.

    Parameters
    ----------
    gram : ndarray, shape (T, T)
        ``G``.
    cross : ndarray, shape (T,)
        ``h``.
    second_moment : float
        ``E y*²``.
    depth : int
        ``L``.
    start : ndarray of int, optional
        An allocation to start from as well (e.g. the one of ``L/2``, doubled).

    Returns
    -------
    counts : ndarray of int, shape (T,)
    gain : float
        The optimal common gain ``g`` (on the average ``(1/L) Σ u``).
    loss : float
        The loss on the moments given.

    References
    ----------
    Paper eqs. (59)-(60) (the parallel model), (12) (loss).

    Examples
    --------
    >>> G = np.array([[1.0, 0.5], [0.5, 1.0]]); h = np.array([0.8, 0.8])
    >>> counts, gain, loss = average_of_heads(G, h, 1.0, 2)
    >>> counts.tolist(), round(loss, 6)   # one head each beats two copies of one head
    ([1, 1], 0.146667)
    """
    G = np.asarray(gram, dtype=np.float64)
    h = np.asarray(cross, dtype=np.float64)
    L = int(depth)
    T = h.size

    def value(n):
        quad = float(n @ G @ n)
        lin = float(h @ n)
        return (lin * lin / quad) if quad > 0 and lin > 0 else 0.0

    candidates = []
    diag = np.maximum(np.diag(G), 1e-300)
    single = np.zeros(T, dtype=np.int64)
    single[int(np.argmax(np.where(h > 0, h * h / diag, 0.0)))] = L
    candidates.append(single)
    from scipy.optimize import nnls  # imported where used: `idepth --help` stays free of scipy
    weights, _ = nnls(np.linalg.cholesky(G + 1e-12 * np.trace(G) / T * np.eye(T)).T,
                      np.linalg.solve(np.linalg.cholesky(G + 1e-12 * np.trace(G) / T * np.eye(T)), h))
    if weights.sum() > 0:
        share = weights / weights.sum() * L
        n = np.floor(share).astype(np.int64)
        for j in np.argsort(-(share - n))[: L - int(n.sum())]:
            n[j] += 1
        candidates.append(n)
    if start is not None and int(np.sum(start)) == L:
        candidates.append(np.asarray(start, dtype=np.int64))
    best_n, best_v = None, -1.0
    for n in candidates:
        n = n.copy()
        v = value(n)
        while True:  # best single-unit move i -> j, while it improves
            Gn = G @ n
            quad, lin = float(n @ Gn), float(h @ n)
            donors = np.flatnonzero(n > 0)
            # quad' = quad − 2(Gn)_i + 2(Gn)_j + G_ii + G_jj − 2 G_ij ;  lin' = lin − h_i + h_j
            q = (quad - 2 * Gn[donors, None] + 2 * Gn[None, :] + np.diag(G)[donors, None] + np.diag(G)[None, :]
                 - 2 * G[donors, :])
            lv = lin - h[donors, None] + h[None, :]
            with np.errstate(divide="ignore", invalid="ignore"):
                moved = np.where((q > 0) & (lv > 0), lv * lv / q, 0.0)
            moved[np.arange(donors.size), donors] = -1.0
            a, b = np.unravel_index(int(np.argmax(moved)), moved.shape)
            if moved[a, b] <= v * (1 + 1e-13):
                break
            n[donors[a]] -= 1
            n[b] += 1
            v = float(moved[a, b])
        if v > best_v:
            best_n, best_v = n, v
    quad = float(best_n @ G @ best_n)
    gain = float(h @ best_n) / quad * L if quad > 0 else 0.0
    return best_n, gain, float(second_moment - best_v)


@dataclass(frozen=True)
class HeadAllocation:
    """The heads behind ``B_L``: ``counts[j]`` of the ``depth`` layers read at temperature ``temperatures[j]``.

    The controlled model of depth L with these layers predicts
    ``ŷ = gain · (1/L) Σ_ℓ u_{τ_ℓ}`` (paper eq. 60), the average of heads whose loss is ``B_L``
    (:func:`average_of_heads`); :func:`numerics.models.head_average_params` writes it as weights.

    Attributes
    ----------
    depth : int
        ``L = Σ counts``.
    temperatures : tuple of float
        The inverse temperatures ``τ_j`` in use (``counts[j] > 0``), increasing.
    counts : tuple of int
        Layers per temperature.
    gain : float
        The common gain ``g`` on the average ``(1/L) Σ u``.
    similarity : str
        The similarity the heads read (``'cosine'``: exact cosine, eq. 6).

    References
    ----------
    Paper eqs. (59)-(60).

    Examples
    --------
    >>> a = HeadAllocation(depth=3, temperatures=(2.0, 8.0), counts=(1, 2), gain=1.5)
    >>> a.layer_temperatures().tolist()
    [2.0, 8.0, 8.0]
    """

    depth: int
    temperatures: tuple
    counts: tuple
    gain: float
    similarity: str = "cosine"

    def __post_init__(self) -> None:
        depth = check_positive_int("depth", self.depth)
        temperatures = tuple(float(t) for t in self.temperatures)
        counts = tuple(check_positive_int("counts", c) for c in self.counts)
        if len(temperatures) != len(counts) or not counts:
            raise ValueError(f"temperatures and counts must be non-empty and of one length; got {len(temperatures)} "
                             f"temperatures and {len(counts)} counts")
        if sum(counts) != depth:
            raise ValueError(f"counts must add up to depth = {depth}; got sum(counts) = {sum(counts)}")
        if any(not np.isfinite(t) or t < 0 for t in temperatures):
            raise ValueError(f"temperatures must be finite and >= 0; got {temperatures}")
        if not np.isfinite(self.gain):
            raise ValueError(f"gain must be finite; got {self.gain!r}")
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "temperatures", temperatures)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "gain", float(self.gain))

    def layer_temperatures(self) -> np.ndarray:
        """The temperature of each of the ``depth`` layers (repeats in order), shape ``(L,)``."""
        return np.repeat(np.asarray(self.temperatures, dtype=np.float64), self.counts)

    def to_dict(self) -> dict:
        """A JSON-able dict."""
        return {"depth": self.depth, "temperatures": list(self.temperatures), "counts": list(self.counts),
                "gain": self.gain, "similarity": self.similarity}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadAllocation":
        """Rebuild from :meth:`to_dict` output."""
        return cls(**data)


def _allocation(counts: np.ndarray, gain: float, temperatures: np.ndarray, similarity: str) -> HeadAllocation:
    used = np.flatnonzero(counts > 0)
    return HeadAllocation(depth=int(counts.sum()), temperatures=tuple(float(t) for t in temperatures[used]),
                          counts=tuple(int(c) for c in counts[used]), gain=gain, similarity=similarity)


@dataclass(frozen=True)
class SoftmaxBounds:
    """What softmax heads over a similarity can reach on the top-k task (all losses eq. 12).

    Attributes
    ----------
    depths : tuple of int
        The depths ``L`` of :attr:`average`.
    single, single_se : float
        ``B_1``: the best single head (optimal temperature and gain), mean over seeds and its SE.
    average, average_se : tuple of float
        ``B_L``: the best equal-weight average of L heads with one common gain (what the
        controlled model of depth L can express, eq. 60), per depth.
    mixture, mixture_se : float
        ``B_∞``: the best non-negative mixture of heads.
    target_second_moment : float
        ``E y*²`` (the loss of predicting 0).
    per_seed : tuple of dict
        Each seed's ``single``, ``average``, ``mixture`` (independent draws).
    spectrum_label, P, k, d, similarity, width, norm, n_contexts, n_seeds : description of the setting.

    References
    ----------
    Paper eqs. (6), (12), (59)-(60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> b = softmax_bounds(PowerLawSpectrum(0, 0, 4), 8, 2, depths=(1, 2), n_contexts=256, n_seeds=2)
    >>> b.at(1) == (b.single, b.single_se)
    True
    """

    depths: tuple
    single: float
    single_se: float
    average: tuple
    average_se: tuple
    mixture: float
    mixture_se: float
    target_second_moment: float
    per_seed: tuple
    spectrum_label: str
    P: int
    k: int
    d: int
    similarity: str
    width: int | None
    norm: str
    n_contexts: int
    n_seeds: int

    def at(self, depth: int) -> tuple[float, float]:
        """``(B_L, SE)`` at a depth of :attr:`depths`."""
        i = self.depths.index(int(depth))
        return self.average[i], self.average_se[i]

    def allocation(self, depth: int, seed: int = 0) -> HeadAllocation:
        """The heads behind ``B_L`` at ``depth`` as fitted on seed ``seed``'s fit set (:class:`HeadAllocation`).

        Raises
        ------
        ValueError
            ``depth`` not in :attr:`depths`, ``seed`` not in ``range(n_seeds)``, or bounds read
            from a cache written before allocations were kept.
        """
        if int(depth) not in self.depths:
            raise ValueError(f"depth must be one of the bounds' depths {self.depths}; got {depth!r}")
        if not 0 <= int(seed) < len(self.per_seed):
            raise ValueError(f"seed must be in range({len(self.per_seed)}); got {seed!r}")
        kept = self.per_seed[int(seed)].get("allocations")
        if kept is None:
            raise ValueError("these bounds hold no allocations (computed by an older version): recompute them")
        return HeadAllocation.from_dict(kept[self.depths.index(int(depth))])

    def to_dict(self) -> dict:
        """A JSON-able dict (tuples as lists)."""
        out = asdict(self)
        for key in ("depths", "average", "average_se"):
            out[key] = list(out[key])
        out["per_seed"] = [dict(s) for s in self.per_seed]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "SoftmaxBounds":
        """Rebuild from :meth:`to_dict` output."""
        data = dict(data)
        for key in ("depths", "average", "average_se"):
            data[key] = tuple(data[key])
        data["per_seed"] = tuple(dict(s) for s in data["per_seed"])
        return cls(**data)


def allocation_losses(allocations, spectrum, P: int, k: int = 2, *, n_contexts: int = 16384, n_seeds: int = 8,
                      rng=0) -> tuple[tuple, tuple]:
    """Population losses ``E (g (1/L) Σ_ℓ u_{τ_ℓ} − y*)²`` of given averages of heads, by Monte Carlo.

    :func:`softmax_bounds` fits allocations and reports their loss on its own held-out sets;
    this evaluates *fixed* allocations (for example those a study wrote into a model's weights)
    on ``n_seeds`` independent sets of fresh contexts, all allocations on the same contexts, so
    their values can anchor a comparison made on another, smaller set of contexts (a control
    variate: the paired difference on the small set plus the population value from here).

    Parameters
    ----------
    allocations : sequence of HeadAllocation
        Temperatures, layer counts and common gains (exact cosine heads).
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Data spectra (eq. 2).
    P, k : int
        Context length and top-k of the difficult task (eq. 6), ``1 <= k <= P``.
    n_contexts : int
        Contexts per set (>= 16).
    n_seeds : int
        Independent sets (>= 2).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed); one child stream per set.

    Returns
    -------
    tuple
        ``(means, ses)``, one entry per allocation: the mean over sets of each set's mean squared
        error, and its SE (between-set spread, floored by the sets' own sampling error).

    Raises
    ------
    ValueError
        No allocation, an allocation over a similarity other than ``'cosine'``, ``P < k``, too few
        contexts or sets.
    TypeError
        An entry that is not a :class:`HeadAllocation`.

    References
    ----------
    Paper eqs. (6), (12), (59)-(60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> heads = HeadAllocation(depth=2, temperatures=(5.0, 20.0), counts=(1, 1), gain=1.0)
    >>> (loss,), (se,) = allocation_losses([heads], PowerLawSpectrum(0, 0, 4), 8, n_contexts=512, n_seeds=2)
    >>> bool(0 < se < loss)
    True
    """
    per_set = [[_mse(prediction, target) for prediction in predictions.T]
               for predictions, target in _allocation_reads(allocations, spectrum, P, k, n_contexts, n_seeds, rng)]
    pairs = [_mean_se([s[j][0] for s in per_set], [s[j][1] for s in per_set]) for j in range(len(per_set[0]))]
    return tuple(m for m, _ in pairs), tuple(se for _, se in pairs)


def allocation_loss_difference(first, second, spectrum, P: int, k: int = 2, *, n_contexts: int = 16384,
                               n_seeds: int = 8, rng=0) -> tuple[float, float]:
    """The population loss of ``first`` minus that of ``second``, paired on the same fresh contexts.

    :func:`allocation_losses` gives each loss with its own SE; the difference of two close
    allocations is far better resolved paired, as ``E[(ŷ₁ − y*)² − (ŷ₂ − y*)²]`` context by
    context (for example to ask whether the heads of a deeper bound lose less than a shallower
    one's in the population, when a small evaluation set says otherwise).

    Parameters
    ----------
    first, second : HeadAllocation
        The two averages of exact cosine heads.
    spectrum, P, k, n_contexts, n_seeds, rng
        As in :func:`allocation_losses`.

    Returns
    -------
    tuple
        ``(difference, se)``: the mean over sets of each set's mean paired difference, and its SE
        (between-set spread, floored by the sets' own sampling error). Identical allocations give
        ``(0.0, 0.0)``.

    Raises
    ------
    ValueError, TypeError
        As :func:`allocation_losses`, naming ``first`` or ``second``.

    References
    ----------
    Paper eqs. (6), (12), (59)-(60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> one = HeadAllocation(depth=1, temperatures=(10.0,), counts=(1,), gain=1.0)
    >>> two = HeadAllocation(depth=2, temperatures=(5.0, 20.0), counts=(1, 1), gain=1.0)
    >>> allocation_loss_difference(one, one, PowerLawSpectrum(0, 0, 4), 8, n_contexts=512, n_seeds=2)
    (0.0, 0.0)
    >>> diff, se = allocation_loss_difference(two, one, PowerLawSpectrum(0, 0, 4), 8, n_contexts=512, n_seeds=2)
    >>> bool(se > 0)
    True
    """
    _check_allocation("first", first)
    _check_allocation("second", second)
    per_set = [_mean_and_se((predictions[:, 0] - target) ** 2 - (predictions[:, 1] - target) ** 2)
               for predictions, target in _allocation_reads([first, second], spectrum, P, k, n_contexts, n_seeds, rng)]
    return _mean_se([m for m, _ in per_set], [se for _, se in per_set])


def _check_allocation(name: str, allocation) -> None:
    if not isinstance(allocation, HeadAllocation):
        raise TypeError(f"{name} must be a HeadAllocation; got {type(allocation).__name__}")
    if allocation.similarity != "cosine":
        raise ValueError(f"{name} must read exact cosine heads; got similarity={allocation.similarity!r}")


def _allocation_reads(allocations, spectrum, P: int, k: int, n_contexts: int, n_seeds: int, rng):
    """Per set of fresh contexts: ``(predictions, target)``, one column of predictions per allocation."""
    allocations = list(allocations)
    if not allocations:
        raise ValueError("allocations must hold at least one HeadAllocation")
    for i, allocation in enumerate(allocations):
        _check_allocation(f"allocations[{i}]", allocation)
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    n_contexts = check_positive_int("n_contexts", n_contexts, minimum=16)
    n_seeds = check_positive_int("n_seeds", n_seeds, minimum=2)
    rng = check_generator(rng, "rng", allow_seed=True)
    temperatures = np.unique(np.concatenate([a.temperatures for a in allocations]))
    # column j of `weights`: allocation j's share of each temperature, times its gain
    weights = np.zeros((temperatures.size, len(allocations)))
    for j, allocation in enumerate(allocations):
        rows = np.searchsorted(temperatures, allocation.temperatures)
        weights[rows, j] = allocation.gain * np.asarray(allocation.counts, dtype=np.float64) / allocation.depth
    chunk = max(16, _CHUNK_FLOATS // ((P + 1) * spectrum.d))
    for child in rng.spawn(n_seeds):
        U, target = _reads(spectrum, P, k, n_contexts, child, "cosine", None, "layer", temperatures, chunk)
        yield U @ weights, target


def _mean_se(values, within) -> tuple[float, float]:
    """Mean over seeds and its SE: ``sqrt(max(between-seed variance, mean within-seed variance) / n)``.

    The between-seed variance holds both the fit and the evaluation noise but is itself
    noisy with a few seeds; the within-seed variance (the squared SE of each seed's held-out
    mean squared error) is a floor on it, so an accidentally small spread of a few seeds
    cannot make a bound look more precise than its evaluation set allows.
    """
    values = np.asarray(values, dtype=np.float64)
    floor = float(np.mean(np.square(within)))
    between = float(values.var(ddof=1)) if values.size > 1 else float("nan")
    return float(values.mean()), float(np.sqrt(max(between, floor) / values.size)) if values.size > 1 else float("nan")


def _mse(prediction: np.ndarray, target: np.ndarray) -> tuple[float, float]:
    return _mean_and_se((prediction - target) ** 2)


def _mean_and_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def softmax_bounds(
    spectrum,
    P: int,
    k: int = 2,
    *,
    depths=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    similarity: str = "cosine",
    width: int | None = None,
    norm: str = "layer",
    n_contexts: int = 8192,
    n_seeds: int = 4,
    rng=0,
    temperatures=None,
) -> SoftmaxBounds:
    """``B_1``, ``B_L`` for every depth, and ``B_∞``: the best losses softmax heads can reach (eq. 60).

    For each of ``n_seeds`` independent seeds, the temperatures, gains and weights are
    fitted on ``n_contexts`` fresh contexts and the loss is evaluated on ``n_contexts``
    other ones (drawn as in paper eqs. 1-6, in the eigenbasis, see the module docstring);
    the reported value is the mean over seeds and the SE the seed-to-seed standard
    error (floored by the held-out sets' own sampling error, see ``_mean_se``), so every
    number comes from independent draws.

    Parameters
    ----------
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Data spectra (eq. 2).
    P : int
        Context length, ``P >= k``.
    k : int, default 2
        Top-k of the difficult task (eq. 6).
    depths : sequence of int
        Depths L of ``B_L`` (1 is always included).
    similarity : {'cosine', 'prenorm'}
        Exact cosine (the task's ranking) or the model's pre-norm similarity at width N.
    width : int, optional
        Hidden width N >= d (``'prenorm'`` only).
    norm : {'layer', 'rms'}
        The pre-norm of ``'prenorm'``: LayerNorm (removes the feature mean; at N = d a whole
        input direction) or parameter-free RMSNorm (with an orthonormal W_x: exact cosine).
    n_contexts : int
        Contexts per fit set and per evaluation set, per seed.
    n_seeds : int
        Independent seeds (>= 2 for an SE).
    rng : numpy.random.Generator or int
        Randomness (an int is a seed); one child stream per seed and set.
    temperatures : array_like, optional
        Grid of inverse temperatures (default :func:`default_temperatures`).

    Returns
    -------
    SoftmaxBounds

    Raises
    ------
    ValueError, TypeError
        ``P < k``, an unknown similarity or norm, a missing or too small width, bad counts.

    References
    ----------
    Paper eqs. (6), (12), (59)-(60).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> b = softmax_bounds(PowerLawSpectrum(0, 0, 8), 32, 2, depths=(1, 4), n_contexts=2048, n_seeds=2)
    >>> b.single >= b.average[1] - 3 * b.average_se[1] and b.average[1] >= b.mixture - 3 * b.mixture_se
    True
    """
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k must be an integer in [1, P] = [1, {P}] (P >= k); got k={k}, P={P}")
    similarity = check_choice("similarity", similarity, ("cosine", "prenorm"))
    norm = check_choice("norm", norm, NORMS)
    if similarity == "prenorm":
        if width is None:
            raise ValueError("similarity='prenorm' needs width (the model's hidden width N >= d)")
        width = check_positive_int("width", width, minimum=spectrum.d)
    elif width is not None:
        raise ValueError(f"width applies only to similarity='prenorm'; got width={width!r}")
    n_contexts = check_positive_int("n_contexts", n_contexts, minimum=16)
    n_seeds = check_positive_int("n_seeds", n_seeds)
    depths = tuple(sorted({1, *(check_positive_int("depths", L) for L in depths)}))
    rng = check_generator(rng, "rng", allow_seed=True)
    if temperatures is None:
        temperatures = default_temperatures(spectrum, "cosine")
    temperatures = np.asarray(temperatures, dtype=np.float64)
    if temperatures.ndim != 1 or temperatures.size == 0 or np.any(~np.isfinite(temperatures)) or np.any(temperatures < 0):
        raise ValueError("temperatures must be a non-empty 1-d array of finite values >= 0")
    chunk = max(16, _CHUNK_FLOATS // ((P + 1) * spectrum.d))

    per_seed = []
    for fit_rng, eval_rng in (tuple(pair) for pair in np.array(rng.spawn(2 * n_seeds)).reshape(n_seeds, 2)):
        U, y = _reads(spectrum, P, k, n_contexts, fit_rng, similarity, width, norm, temperatures, chunk)
        V, z = _reads(spectrum, P, k, n_contexts, eval_rng, similarity, width, norm, temperatures, chunk)
        G, h, m2 = U.T @ U / len(y), U.T @ y / len(y), float(y @ y / len(y))
        average, average_se, allocations, previous = [], [], [], None
        for L in depths:
            start = None if previous is None or L % previous[0] else previous[1] * (L // previous[0])
            counts, gain, _ = average_of_heads(G, h, m2, L, start)
            value, se = _mse(gain * (V @ counts) / L, z)
            average.append(value)
            average_se.append(se)
            allocations.append(_allocation(counts, gain, temperatures, similarity).to_dict())
            previous = (L, counts)
        from scipy.optimize import nnls  # imported where used: `idepth --help` stays free of scipy
        weights, _ = nnls(U, y)
        mixture, mixture_within = _mse(V @ weights, z)
        per_seed.append({"single": average[0], "average": average, "mixture": mixture, "average_within_se": average_se,
                         "mixture_within_se": mixture_within, "target_second_moment": float(np.mean(z * z)),
                         "allocations": allocations})
    single, single_se = _mean_se([s["single"] for s in per_seed], [s["average_within_se"][0] for s in per_seed])
    by_depth = [_mean_se([s["average"][i] for s in per_seed], [s["average_within_se"][i] for s in per_seed])
                for i in range(len(depths))]
    mixture, mixture_se = _mean_se([s["mixture"] for s in per_seed], [s["mixture_within_se"] for s in per_seed])
    label = (f"PowerLawSpectrum(a={spectrum.a:g}, b={spectrum.b:g}, d={spectrum.d})" if hasattr(spectrum, "a")
             else repr(spectrum))
    return SoftmaxBounds(
        depths=depths, single=single, single_se=single_se, average=tuple(v for v, _ in by_depth),
        average_se=tuple(s for _, s in by_depth), mixture=mixture, mixture_se=mixture_se,
        target_second_moment=float(np.mean([s["target_second_moment"] for s in per_seed])),
        per_seed=tuple(per_seed), spectrum_label=label, P=P, k=k, d=spectrum.d, similarity=similarity, width=width,
        norm=norm, n_contexts=n_contexts, n_seeds=n_seeds,
    )
