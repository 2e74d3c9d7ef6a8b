"""Families of softmax heads, their exchangeable depth law and their mixture limit (paper eqs. 59-63).

A layer of the controlled softmax model (mask ``M(0)``, paper eq. 60) predicts ``f_ℓ = g u_ℓ``
with ``u_ℓ = softmax_j(x̂_testᵀ D_ℓ x̂_j) · y`` -- a *head* -- where ``x̂ = x/|x|`` and ``D_ℓ`` is
the layer's learned ``d × d`` form (``numerics.models.heads.form_average_params`` writes any
list of forms as weights of the LayerNorm model at ``N > d``). A head is therefore one matrix
``D``; the cosine heads of :mod:`theory.softmax_bounds` are ``D = τ I``.

A **head family** is a law ``μ`` over forms, written here as a finite mixture of classes
``k`` with probabilities ``π_k``: class ``k`` draws ``D = τ_k (B + σ_k S)`` with a base form
``B`` (default ``I``) and ``S`` a symmetric Gaussian matrix, ``S = (Z + Zᵀ)/√(2d)``
(off-diagonal variance ``1/d``, so ``S``'s spectrum fills ``[−2, 2]`` as ``d`` grows). ``σ_k = 0``
is a cosine head (an *atom*); ``σ_k > 0`` a *diffuse* class.

* :class:`CosineHeads` -- atoms only (the temperatures of ``B_L``);
* :class:`RandomFormHeads` -- temperatures with one spread ``σ`` (the issue's
  ``τ_ℓ (I + σ S_ℓ)``);
* :class:`FittedFormHeads` -- any mixture of atoms and diffuse classes whose class
  probabilities are *fitted* (:func:`fit_form_law`) to minimise the depth-L law below.

**Exchangeable law** (derivation page ``docs/derivations/exchangeable_heads.md``). If the
``L`` heads are i.i.d. draws from ``μ``, the mean prediction ``ū = (1/L) Σ u_ℓ`` has, given
the context, mean ``m_μ`` and variance ``Var_μ(u)/L``; with ``s = E y*²``, ``h = E m_μ y*``,
``q = E m_μ²``, ``v = E Var_μ(u)``:

* fixed gain ``g``: ``E R_L = E(g m_μ − y*)² + g² v / L`` -- paper eq. (63) with
  ``C = E(g m_μ − y*)²`` and ``A − C = g² v`` independent of ``L``;
* gain re-fitted at each depth: ``R_L = s − h²/(q + v/L) = R_∞ + c/(L + L₀)`` with
  ``R_∞ = s − h²/q``, ``c = h² v/q²``, ``L₀ = v/q`` (exact, rational in ``1/L``).

Drawing ``n_k = L π_k`` heads per class (*stratified*, the atoms then cost no variance)
replaces ``v`` by the within-class variance ``w = Σ_k π_k E Var_k(u)``; that is the law
:func:`fit_form_law` minimises, and the form of the *combination* branch (atoms plus diffuse
heads) of :func:`theory.expressible.best_expressible`.

**Mixture limit**: ``min_{w ≥ 0} E(Σ_j w_j u_j − y*)²`` over a finite dictionary of heads
(non-negative least squares, convex; :func:`mixture_limit` reports its KKT residual).

Contexts are drawn as in paper eqs. (1)-(6) in the model's frame: for anisotropic spectra
each context is rotated by its own Haar ``O`` (eq. 3), since a form ``D ≠ τ I`` is not
rotation invariant; for isotropic spectra the rotation is skipped (same law).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from theory.data_law import eigenbasis_normal, haar_rotations, rotate, select_top_k, teacher_labels, top_k_mean
from theory.spectra import as_spectrum
from theory.validation import check_dtype, check_generator, check_positive_int, check_top_k

__all__ = [
    "Contexts", "draw_contexts", "form_reads", "random_symmetric", "HeadFamily", "CosineHeads", "RandomFormHeads",
    "FittedFormHeads", "ExchangeableLaw", "exchangeable_law", "exchangeable_law_from_reads", "paired_law_difference", "MixtureLimit", "mixture_limit", "fit_form_law",
    "class_moments", "ClassMoments",
]

#: floats of the (chunk, heads, P) logits computed at a time
_CHUNK_FLOATS = 1 << 23


# --------------------------------------------------------------------------- contexts and head reads

@dataclass(frozen=True)
class Contexts:
    """Contexts of the top-k task in the model's frame (paper eqs. 1-6), normalised inputs kept.

    Attributes
    ----------
    context_unit : ndarray, shape (n, P, d)
        ``x̂_j = x_j/|x_j|``.
    test_unit : ndarray, shape (n, d)
        ``x̂_test``.
    labels : ndarray, shape (n, P)
        ``y_j = βᵀx_j`` (eq. 1).
    target : ndarray, shape (n,)
        ``y*``, the mean label of the top-k cosine similarities (eq. 6).

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 3, 0).n
    3
    """

    context_unit: np.ndarray
    test_unit: np.ndarray
    labels: np.ndarray
    target: np.ndarray

    @property
    def n(self) -> int:
        """Number of contexts."""
        return int(self.target.size)


def draw_contexts(spectrum, P: int, k: int, n: int, rng, *, with_inputs: bool = False):
    """``n`` fresh contexts of the top-k task, in the model's (rotated) frame.

    Parameters
    ----------
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Data spectra (eq. 2).
    P, k : int
        Context length and top-k, ``1 <= k <= P``.
    n : int
        Number of contexts.
    rng : numpy.random.Generator or int

    with_inputs : bool
        Also return the raw inputs ``x`` (n, P + 1, d) the contexts were made from (a model whose pre-norm sees
        their norms needs them); the draws are the same either way.

    Returns
    -------
    Contexts, or ``(Contexts, x)`` with ``with_inputs``

    References
    ----------
    Paper eqs. (1)-(6).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 16, 0)
    >>> c.context_unit.shape, c.target.shape
    ((16, 8, 4), (16,))
    >>> same, x = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 16, 0, with_inputs=True)
    >>> x.shape, bool((same.target == c.target).all())
    ((16, 9, 4), True)
    """
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    n = check_positive_int("n", n)
    rng = check_generator(rng, "rng", allow_seed=True)
    lam, omega = np.asarray(spectrum.eigenvalues), np.asarray(spectrum.teacher_eigenvalues)
    x = eigenbasis_normal(rng, (n, P + 1, spectrum.d), lam, np.float64)
    beta = eigenbasis_normal(rng, (n, spectrum.d), omega, np.float64)
    if not (np.all(lam == lam[0]) and np.all(omega == omega[0])):  # isotropic: the rotation changes nothing
        O = haar_rotations(spectrum.d, n, rng)
        x, beta = rotate(O, x), rotate(O, beta)
    labels = teacher_labels(x[:, :P], beta)
    unit = x / np.linalg.norm(x, axis=2, keepdims=True)
    cosine = np.einsum("npd,nd->np", unit[:, :P], unit[:, P])
    target = top_k_mean(labels, select_top_k(cosine, k, ordered=False))
    contexts = Contexts(np.ascontiguousarray(unit[:, :P]), np.ascontiguousarray(unit[:, P]), labels, target)
    return (contexts, x) if with_inputs else contexts


def form_reads(forms, contexts: Contexts, *, dtype=np.float32) -> np.ndarray:
    """Head outputs ``u_D = softmax_j(x̂_testᵀ D x̂_j) · y`` for every context and form, shape (n, H).

    Parameters
    ----------
    forms : array_like, shape (H, d, d)
        One form per head (``τ I`` is the cosine head of temperature ``τ``).
    contexts : Contexts
    dtype : {numpy.float32, numpy.float64}
        Precision of the logits and the softmax (float32: twice as fast, relative error ~1e-6;
        float64 for round-off comparisons).

    Returns
    -------
    ndarray, shape (n, H), float64

    References
    ----------
    Paper eq. (60) (one layer's predictor ``g p_ℓ·y``), eqs. (9)-(10) (the logits).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 1, 4, 0)
    >>> cold = form_reads(1e4 * np.eye(4)[None], c)[:, 0]   # a cold cosine head reads the top token
    >>> bool(np.allclose(cold, c.target))
    True
    """
    dtype = check_dtype(dtype)
    forms = np.asarray(forms, dtype=dtype)
    n, P, d = contexts.context_unit.shape
    if forms.ndim != 3 or forms.shape[1:] != (d, d):
        raise ValueError(f"forms must have shape (H, {d}, {d}) for inputs of dimension d = {d}; got {forms.shape}")
    H = forms.shape[0]
    stacked = np.ascontiguousarray(forms.transpose(1, 0, 2).reshape(d, H * d))
    labels = contexts.labels.astype(dtype)
    context_unit = contexts.context_unit.astype(dtype, copy=False)
    test_unit = contexts.test_unit.astype(dtype, copy=False)
    out = np.empty((n, H))
    chunk = max(1, _CHUNK_FLOATS // (H * P))
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        queries = (test_unit[start:stop] @ stacked).reshape(stop - start, H, d)  # x̂_testᵀ D_h
        logits = np.empty((stop - start, H, P), dtype=dtype)
        for i in range(stop - start):  # one small GEMM per context: ~10x faster than numpy's stacked matmul here
            np.matmul(queries[i], context_unit[start + i].T, out=logits[i])
        logits -= logits.max(axis=2, keepdims=True)
        np.exp(logits, out=logits)
        numer = logits @ labels[start:stop, :, None]
        out[start:stop] = (numer[..., 0] / logits.sum(axis=2)).astype(np.float64)
    return out


def random_symmetric(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` symmetric Gaussian matrices ``S = (Z + Zᵀ)/√(2d)``, shape (n, d, d).

    Off-diagonal entries have variance ``1/d`` and diagonal ones ``2/d``: the law is rotation
    invariant (``OᵀSO ~ S``) and ``S``'s spectrum fills ``[−2, 2]`` for large ``d``.

    References
    ----------
    Paper eqs. (9)-(10) (the query-key form ``(W_k^ℓ)ᵀ W_q^ℓ`` these matrices perturb).

    Examples
    --------
    >>> S = random_symmetric(2, 3, np.random.default_rng(0))
    >>> S.shape, bool(np.allclose(S, np.swapaxes(S, 1, 2)))
    ((2, 3, 3), True)
    """
    Z = rng.standard_normal((n, d, d))
    return (Z + np.swapaxes(Z, 1, 2)) / np.sqrt(2.0 * d)


# --------------------------------------------------------------------------- head families

def _tuple_of(name: str, values, *, nonnegative: bool = True) -> tuple:
    try:
        array = np.atleast_1d(np.asarray(values, dtype=np.float64))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers; got {values!r}") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence; got {values!r}")
    if not np.all(np.isfinite(array)) or (nonnegative and np.any(array < 0)):
        raise ValueError(f"{name} must hold finite values >= 0; got {values!r}")
    return tuple(float(v) for v in array)


@dataclass(frozen=True)
class HeadFamily:
    """A law ``μ`` over forms: class ``k`` has probability ``weights[k]`` and draws ``τ_k (B + σ_k S)``.

    Parameters
    ----------
    temperatures : sequence of float
        ``τ_k >= 0`` per class.
    sigmas : sequence of float
        ``σ_k >= 0`` per class (``0``: a cosine atom).
    weights : sequence of float, optional
        Class probabilities ``π_k`` (normalised here; default uniform).
    base : array_like, shape (d, d), optional
        The symmetric base form ``B`` (default ``I``); fixes the family's dimension ``d``.

    References
    ----------
    Paper eqs. (9)-(10), (59)-(60).

    Examples
    --------
    >>> fam = HeadFamily(temperatures=(4.0, 16.0), sigmas=(0.0, 0.5))
    >>> forms, classes = fam.sample_forms(3, 2, np.random.default_rng(0))
    >>> forms.shape, fam.weights
    ((3, 2, 2), (0.5, 0.5))
    """

    temperatures: tuple
    sigmas: tuple
    weights: tuple | None = None
    base: np.ndarray | None = field(default=None, compare=False)
    name: str = "mixture of forms"

    def __post_init__(self) -> None:
        taus = _tuple_of("temperatures", self.temperatures)
        sigmas = _tuple_of("sigma", self.sigmas)
        if len(sigmas) == 1 and len(taus) > 1:
            sigmas = sigmas * len(taus)
        if len(sigmas) != len(taus):
            raise ValueError(f"sigma must have one value per temperature ({len(taus)}); got {len(sigmas)}")
        weights = np.ones(len(taus)) if self.weights is None else np.asarray(_tuple_of("weights", self.weights))
        if weights.size != len(taus):
            raise ValueError(f"weights must have one value per temperature ({len(taus)}); got {weights.size}")
        if weights.sum() <= 0:
            raise ValueError(f"weights must not all be 0; got {self.weights!r}")
        if self.base is not None:
            base = np.asarray(self.base, dtype=np.float64)
            if base.ndim != 2 or base.shape[0] != base.shape[1] or not np.allclose(base, base.T) \
                    or not np.all(np.isfinite(base)):
                raise ValueError(f"base must be a finite symmetric (d, d) matrix; got shape {base.shape}")
            object.__setattr__(self, "base", base)
        object.__setattr__(self, "temperatures", taus)
        object.__setattr__(self, "sigmas", sigmas)
        object.__setattr__(self, "weights", tuple(float(w) for w in weights / weights.sum()))

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return len(self.temperatures)

    def class_forms(self, cls: int, n: int, d: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` forms of class ``cls``, shape (n, d, d)."""
        base = self._base(d)
        tau, sigma = self.temperatures[cls], self.sigmas[cls]
        if sigma == 0:
            return np.broadcast_to(tau * base, (n, d, d)).copy()
        return tau * (base + sigma * random_symmetric(n, d, rng))

    def sample_forms(self, n: int, d: int, rng) -> tuple[np.ndarray, np.ndarray]:
        """``n`` i.i.d. forms from ``μ`` and the class of each: ``(forms (n, d, d), classes (n,))``."""
        n = check_positive_int("n", n)
        d = check_positive_int("d", d)
        rng = check_generator(rng, "rng", allow_seed=True)
        classes = rng.choice(self.n_classes, size=n, p=np.asarray(self.weights))
        forms = np.empty((n, d, d))
        for cls in np.unique(classes):
            rows = np.flatnonzero(classes == cls)
            forms[rows] = self.class_forms(int(cls), rows.size, d, rng)
        return forms, classes

    def _base(self, d: int) -> np.ndarray:
        if self.base is None:
            return np.eye(d)
        if self.base.shape != (d, d):
            raise ValueError(f"base (the form law) has dimension {self.base.shape[0]}, but the inputs have d = {d}")
        return self.base

    def to_dict(self) -> dict:
        """A JSON-able dict (the base form as nested lists, or None)."""
        return {"name": self.name, "temperatures": list(self.temperatures), "sigmas": list(self.sigmas),
                "weights": list(self.weights), "base": None if self.base is None else self.base.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> "HeadFamily":
        """Rebuild from :meth:`to_dict` output."""
        return cls(**data)


def CosineHeads(temperatures, weights=None) -> HeadFamily:
    """Cosine heads ``τ I`` at the given temperatures with probabilities ``weights`` (atoms only).

    With the weights of the best non-negative mixture of cosine heads this is the law whose
    equal-weight allocations give ``B_L`` (:mod:`theory.softmax_bounds`).

    References
    ----------
    Paper eqs. (9)-(10) with ``W_kᵀW_q ∝ I`` on normalised inputs (a cosine-similarity softmax) and (59)-(60).

    Examples
    --------
    >>> CosineHeads((2.0, 8.0), (1.0, 3.0)).weights
    (0.25, 0.75)
    """
    taus = _tuple_of("temperatures", temperatures)
    return HeadFamily(taus, (0.0,) * len(taus), weights, name="cosine heads")


def RandomFormHeads(temperatures, sigma: float, weights=None, base=None) -> HeadFamily:
    """Random-form heads ``τ (B + σ S)``: one spread ``σ > 0`` at the given temperatures.

    References
    ----------
    Paper eqs. (9)-(10) and (59)-(60) (softmax heads with a general query-key form) and eqs. (61)-(63)
    (the error decomposition whose depth dependence the exchangeable law fixes).

    Examples
    --------
    >>> RandomFormHeads((2.0, 8.0), 0.5).sigmas
    (0.5, 0.5)
    >>> RandomFormHeads((2.0,), -0.5)
    Traceback (most recent call last):
    ...
    ValueError: sigma must be > 0 for random forms; got -0.5
    """
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be > 0 for random forms; got {sigma:g}")
    taus = _tuple_of("temperatures", temperatures)
    return HeadFamily(taus, (sigma,) * len(taus), weights, base, name=f"random forms (sigma={sigma:g})")


def FittedFormHeads(temperatures, sigmas, weights) -> HeadFamily:
    """A mixture of atoms and diffuse classes with fitted probabilities (see :func:`fit_form_law`).

    References
    ----------
    Paper eqs. (59)-(63).

    Examples
    --------
    >>> FittedFormHeads((4.0, 4.0), (0.0, 0.5), (0.3, 0.7)).name
    'fitted form law'
    """
    return HeadFamily(temperatures, sigmas, weights, name="fitted form law")


# --------------------------------------------------------------------------- per-class moments

@dataclass(frozen=True)
class ClassMoments:
    """Per-context moments of each class of a family, from a pool of heads per class.

    Attributes
    ----------
    mean : ndarray, shape (n, K)
        ``m̂_k``: the pool mean of ``u`` per context and class.
    within : ndarray, shape (n, K)
        Unbiased within-class variance of ``u`` per context (0 for atoms).
    pool : tuple of int
        Heads per class in the pool.
    target : ndarray, shape (n,)
        ``y*``.

    References
    ----------
    Paper eqs. (61)-(63): :meth:`quadratic` gives the pieces of their A and C terms per class.

    Examples
    --------
    >>> import numpy as np
    >>> m = ClassMoments(np.ones((4, 1)), np.zeros((4, 1)), (1,), np.ones(4))
    >>> [float(np.squeeze(x)) for x in m.quadratic()]
    [1.0, 1.0, 0.0, 1.0]
    """

    mean: np.ndarray
    within: np.ndarray
    pool: tuple
    target: np.ndarray

    def quadratic(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """``(Q, H, W, s)``: ``Q_kl = E m_k m_l`` (pool bias removed), ``H_k = E m_k y*``, ``W_k = E Var_k``, ``s = E y*²``."""
        n = self.target.size
        Q = self.mean.T @ self.mean / n
        W = self.within.mean(axis=0)
        pool = np.asarray(self.pool, dtype=np.float64)
        Q[np.diag_indices_from(Q)] -= W / pool  # E m̂_k² = E m_k² + E Var_k / M_k
        H = self.mean.T @ self.target / n
        return Q, H, W, float(self.target @ self.target / n)


def class_moments(family: HeadFamily, contexts: Contexts, pool: int, rng) -> tuple[ClassMoments, np.ndarray]:
    """Pool ``pool`` heads per diffuse class (one per atom) and their per-context moments.

    Returns
    -------
    (ClassMoments, forms)
        ``forms`` (sum of pools, d, d), class by class, for reuse (e.g. to realise an allocation).

    References
    ----------
    Paper eqs. (61)-(63): ``Q``, ``H``, ``W`` are the per-class pieces of the A and C terms.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 64, 0)
    >>> m, forms = class_moments(RandomFormHeads((5.0,), 0.5), c, 8, 1)
    >>> m.mean.shape, m.pool, forms.shape
    ((64, 1), (8,), (8, 4, 4))
    """
    pool = check_positive_int("pool", pool, minimum=2)
    rng = check_generator(rng, "rng", allow_seed=True)
    d = contexts.test_unit.shape[1]
    forms, sizes = [], []
    for cls in range(family.n_classes):
        size = 1 if family.sigmas[cls] == 0 else pool
        forms.append(family.class_forms(cls, size, d, rng))
        sizes.append(size)
    forms = np.concatenate(forms)
    reads = form_reads(forms, contexts)
    mean = np.empty((contexts.n, family.n_classes))
    within = np.zeros_like(mean)
    start = 0
    for cls, size in enumerate(sizes):
        block = reads[:, start:start + size]
        mean[:, cls] = block.mean(axis=1)
        if size > 1:
            within[:, cls] = block.var(axis=1, ddof=1)
        start += size
    return ClassMoments(mean, within, tuple(sizes), contexts.target), forms


# --------------------------------------------------------------------------- the exchangeable law

@dataclass(frozen=True)
class ExchangeableLaw:
    """The exchangeable depth law ``R_L = R_∞ + c/(L + L₀)`` of a family (gain re-fitted at each depth).

    Attributes
    ----------
    plateau, plateau_se : float
        ``R_∞ = s − h²/q`` and its Monte-Carlo SE.
    coefficient, coefficient_se : float
        ``c = h² v/q²`` and its SE.
    shift : float
        ``L₀ = v/q``.
    variance : float
        ``v`` (``E Var_μ u`` for i.i.d. draws; the within-class variance when stratified).
    fixed_gain : float
        ``g = h/q``, the gain optimal as ``L → ∞`` (the fixed-gain law is
        ``R_L(g) = s − 2gh + g²(q + v/L)``).
    moments : dict
        ``s, h, q, v`` as estimated.
    stratified : bool
        Whether the heads are drawn ``L π_k`` per class (atoms then add no variance) or i.i.d.
    n_contexts, pool : int

    References
    ----------
    Paper eqs. (60)-(63).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 512, 0)
    >>> law = exchangeable_law(RandomFormHeads((4.0,), 0.5), c, pool=32, rng=1)
    >>> bool(law.coefficient > 0), round(law.loss(10**9) - law.plateau, 6)
    (True, 0.0)
    """

    plateau: float
    plateau_se: float
    coefficient: float
    coefficient_se: float
    shift: float
    variance: float
    fixed_gain: float
    moments: dict
    stratified: bool
    n_contexts: int
    pool: int

    def loss(self, depth):
        """``R_∞ + c/(L + L₀)`` at ``depth`` (scalar in, scalar out)."""
        L = np.asarray(depth, dtype=np.float64)
        out = self.plateau + self.coefficient / (L + self.shift)
        return float(out) if out.ndim == 0 else out

    def fixed_gain_loss(self, depth, gain: float | None = None):
        """``E R_L`` with the gain held at ``gain`` (default :attr:`fixed_gain`): ``C + (A − C)/L``."""
        g = self.fixed_gain if gain is None else float(gain)
        m = self.moments
        L = np.asarray(depth, dtype=np.float64)
        out = m["s"] - 2 * g * m["h"] + g * g * (m["q"] + m["v"] / L)
        return float(out) if out.ndim == 0 else out


def _law_terms(mean: np.ndarray, second: np.ndarray, target: np.ndarray, pool_correction: np.ndarray):
    """Per-context terms whose means are (s, h, q, v) and the plug-in law; used by the jackknife too."""
    s = target * target
    h = mean * target
    q = mean * mean - pool_correction
    v = second - mean * mean + pool_correction
    return s, h, q, v


def _law(s: float, h: float, q: float, v: float) -> tuple[float, float, float]:
    return s - h * h / q, h * h * v / (q * q), v / q


def exchangeable_law(family: HeadFamily, contexts: Contexts, *, pool: int = 256, stratified: bool = False,
                     rng=0, blocks: int = 16) -> ExchangeableLaw:
    """Plateau ``R_∞`` and coefficient ``c`` of ``family``'s exchangeable law, computed (not fitted).

    Parameters
    ----------
    family : HeadFamily
    contexts : Contexts
        Fresh contexts (independent of anything fitted to ``family``).
    pool : int, default 256
        Heads drawn per diffuse class (``u``'s per-context mean and variance are estimated from
        them; the pool's own bias ``Var/M`` is removed).
    stratified : bool, default False
        ``L π_k`` heads per class instead of i.i.d. draws: the variance is the within-class one.
    rng : numpy.random.Generator or int
        Draws the pool.
    blocks : int, default 16
        Delete-a-group jackknife over ``blocks`` groups of contexts *and* pool heads, so the SE
        holds both the contexts' and the pool's sampling error.

    Returns
    -------
    ExchangeableLaw

    References
    ----------
    Paper eqs. (60)-(63); derivation page ``exchangeable_heads``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 512, 0)
    >>> law = exchangeable_law(RandomFormHeads((4.0, 16.0), 0.5), c, pool=32, rng=1)
    >>> law.coefficient > 0 and law.loss(1) > law.loss(64) > law.plateau
    True
    """
    if not isinstance(family, HeadFamily):
        raise TypeError(f"family must be a HeadFamily; got {type(family).__name__}")
    blocks = check_positive_int("blocks", blocks, minimum=2)
    pool = check_positive_int("pool", pool, minimum=2 * blocks)
    rng = check_generator(rng, "rng", allow_seed=True)
    reads, classes = _pool_reads(family, contexts, pool, rng)
    return exchangeable_law_from_reads(reads, contexts.target, classes=classes, weights=family.weights,
                                       stratified=stratified, blocks=blocks)


def exchangeable_law_from_reads(reads, target, *, classes=None, weights=None, stratified: bool = False,
                                blocks: int = 16, _replicates: bool = False) -> ExchangeableLaw:
    """The exchangeable law from a pool of heads' outputs (any heads: forms, or a model's layers at init).

    Parameters
    ----------
    reads : array_like, shape (n, M)
        Output ``u`` of each of ``M`` pooled heads on ``n`` contexts; the heads of a class are
        i.i.d. draws of that class (a class with one column is an atom: no variance).
    target : array_like, shape (n,)
        ``y*``.
    classes : sequence of int, optional
        Class of each column (default: one class).
    weights : sequence of float, optional
        Class probabilities ``π_k`` (default uniform).
    stratified : bool
        As in :func:`exchangeable_law`.
    blocks : int
        Jackknife groups (contexts and, within each class, pooled heads).

    Returns
    -------
    ExchangeableLaw

    References
    ----------
    Paper eqs. (60)-(63).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> y = rng.standard_normal(4000); reads = y[:, None] + rng.standard_normal((4000, 64))
    >>> law = exchangeable_law_from_reads(reads, y)
    >>> abs(law.plateau) < 0.05, round(law.coefficient, 1)   # m = y*: no plateau; v = 1, q = 1: c = 1
    (True, 1.0)
    """
    reads = np.asarray(reads, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    if reads.ndim != 2 or target.shape != (reads.shape[0],):
        raise ValueError(f"reads must be (n, M) and target (n,); got {reads.shape} and {target.shape}")
    blocks = check_positive_int("blocks", blocks, minimum=2)
    cls_of = np.zeros(reads.shape[1], dtype=int) if classes is None else np.asarray(classes, dtype=int)
    if cls_of.shape != (reads.shape[1],):
        raise ValueError(f"classes must give one class per column of reads ({reads.shape[1]}); got {cls_of.shape}")
    n_classes = int(cls_of.max()) + 1
    weights = np.ones(n_classes) / n_classes if weights is None else np.asarray(weights, dtype=np.float64)
    if weights.shape != (n_classes,) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(f"weights must be {n_classes} non-negative class probabilities; got {weights!r}")
    weights = weights / weights.sum()
    group_of = np.full(cls_of.size, -1)
    for k in range(n_classes):  # head j of a diffuse class belongs to jackknife group j % blocks
        columns = np.flatnonzero(cls_of == k)
        if columns.size > 1:
            if columns.size < 2 * blocks:
                raise ValueError(f"class {k} has {columns.size} pooled heads; the jackknife needs >= {2 * blocks}")
            group_of[columns] = np.arange(columns.size) % blocks
    n = target.size
    ctx_group = np.arange(n) % blocks

    def estimate(keep_ctx: np.ndarray, drop_group: int | None):
        keep_heads = group_of != drop_group
        u = reads[keep_ctx][:, keep_heads]
        cls = cls_of[keep_heads]
        mean, second, within, correction = (np.zeros(u.shape[0]) for _ in range(4))
        for k in range(n_classes):
            block = u[:, cls == k]
            mean += weights[k] * block.mean(axis=1)
            second += weights[k] * (block * block).mean(axis=1)
            if block.shape[1] > 1:
                var_k = block.var(axis=1, ddof=1)
                within += weights[k] * var_k
                # E m̂_k² = m_k² + Var_k/M_k: the pool's bias of the mixture's squared mean
                correction += weights[k] ** 2 * var_k / block.shape[1]
        terms = _law_terms(mean, second, target[keep_ctx], correction)
        s, h, q, v = (float(t.mean()) for t in terms)
        return s, h, q, (float(within.mean()) if stratified else v)

    full = estimate(np.ones(n, dtype=bool), None)
    plateau, coefficient, shift = _law(*full)
    jack = np.array([_law(*estimate(ctx_group != b, b))[:2] for b in range(blocks)])
    se = _jackknife_se(jack)
    s, h, q, v = full
    law = ExchangeableLaw(plateau=plateau, plateau_se=float(se[0]), coefficient=coefficient,
                          coefficient_se=float(se[1]), shift=shift, variance=v, fixed_gain=h / q,
                          moments={"s": s, "h": h, "q": q, "v": v}, stratified=stratified, n_contexts=n,
                          pool=int(np.bincount(cls_of).max()))
    return (law, jack) if _replicates else law


def _jackknife_se(replicates: np.ndarray) -> np.ndarray:
    blocks = replicates.shape[0]
    return np.sqrt((blocks - 1) / blocks * ((replicates - replicates.mean(axis=0)) ** 2).sum(axis=0))


def paired_law_difference(first: HeadFamily, second: HeadFamily, contexts: Contexts, *, pool: int = 256,
                          stratified: bool = False, rng=0, blocks: int = 16) -> dict:
    """Both families' exchangeable laws on the same contexts, and their differences with paired SEs.

    The two laws are jackknifed over the same groups of contexts, so the SE of a difference keeps
    only what the families do not share (much smaller than either law's own SE).

    Returns
    -------
    dict
        ``first``, ``second`` (:class:`ExchangeableLaw`), ``plateau_difference``,
        ``plateau_difference_se``, ``coefficient_difference``, ``coefficient_difference_se``
        (second minus first).

    References
    ----------
    Paper eqs. (61)-(63) (the plateau and ``c`` compared are their depth-independent A and C).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 512, 0)
    >>> out = paired_law_difference(CosineHeads((4.0, 16.0)), RandomFormHeads((4.0, 16.0), 0.5), c, pool=32)
    >>> bool(out["plateau_difference_se"] < out["second"].plateau_se)
    True
    """
    rng = check_generator(rng, "rng", allow_seed=True)
    laws = []
    for family in (first, second):
        if not isinstance(family, HeadFamily):
            raise TypeError(f"first and second must be HeadFamily objects; got {type(family).__name__}")
        reads, classes = _pool_reads(family, contexts, pool, rng)
        laws.append(exchangeable_law_from_reads(reads, contexts.target, classes=classes, weights=family.weights,
                                                stratified=stratified, blocks=blocks, _replicates=True))
    (law1, jack1), (law2, jack2) = laws
    se = _jackknife_se(jack2 - jack1)
    return {"first": law1, "second": law2, "plateau_difference": law2.plateau - law1.plateau,
            "plateau_difference_se": float(se[0]), "coefficient_difference": law2.coefficient - law1.coefficient,
            "coefficient_difference_se": float(se[1])}


def _pool_reads(family: HeadFamily, contexts: Contexts, pool: int, rng) -> tuple[np.ndarray, list]:
    """Reads of a pool of ``pool`` heads per diffuse class (one per atom) and the class of each column."""
    d = contexts.test_unit.shape[1]
    forms, classes = [], []
    for cls in range(family.n_classes):
        size = 1 if family.sigmas[cls] == 0 else pool
        forms.append(family.class_forms(cls, size, d, rng))
        classes += [cls] * size
    return form_reads(np.concatenate(forms), contexts), classes


# --------------------------------------------------------------------------- the mixture limit

@dataclass(frozen=True)
class MixtureLimit:
    """The best non-negative mixture of a finite dictionary of heads (a convex problem).

    Attributes
    ----------
    weights : ndarray, shape (H,)
        ``w ≥ 0`` minimising ``s − 2hᵀw + wᵀGw`` on the fit contexts.
    fit_loss : float
        Its loss on the fit contexts.
    loss, loss_se : float
        Its loss on independent evaluation contexts (or NaN when none were given) and the SE.
    kkt_residual : float
        ``max(|∇_j| over the support, max(−∇_j, 0) off it)`` with ``∇ = 2(Gw − h)``, relative to
        ``max |2h|``: 0 at the exact optimum.
    support : int
        Number of heads with ``w_j > 0``.

    References
    ----------
    Paper eqs. (59)-(60): the any-weight average of heads that the equal-weight model approaches.

    Examples
    --------
    >>> import numpy as np
    >>> reads = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> m = mixture_limit(reads, np.array([1.0, 1.0, 2.0]))
    >>> np.round(m.weights, 6).tolist(), m.support
    ([1.0, 1.0], 2)
    """

    weights: np.ndarray
    fit_loss: float
    loss: float
    loss_se: float
    kkt_residual: float
    support: int


def mixture_limit(fit_reads: np.ndarray, fit_target: np.ndarray, eval_reads: np.ndarray | None = None,
                  eval_target: np.ndarray | None = None) -> MixtureLimit:
    """``min_{w ≥ 0} E(Σ_j w_j u_j − y*)²`` over a dictionary of heads, with its KKT residual.

    Parameters
    ----------
    fit_reads : ndarray, shape (n, H)
        Head outputs on the fit contexts (:func:`form_reads`).
    fit_target : ndarray, shape (n,)
    eval_reads, eval_target : ndarray, optional
        Independent contexts on which the fitted mixture's loss is reported.

    Returns
    -------
    MixtureLimit

    References
    ----------
    Paper eq. (60): an average of L heads is a mixture with weights ``g n_j/L``; this is its
    ``L → ∞`` closure over the dictionary.

    Examples
    --------
    >>> U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); y = np.array([1.0, -1.0, 0.0])
    >>> lim = mixture_limit(U, y)
    >>> lim.weights.round(6).tolist(), lim.kkt_residual < 1e-9
    ([0.5, 0.0], True)
    """
    U = np.asarray(fit_reads, dtype=np.float64)
    y = np.asarray(fit_target, dtype=np.float64)
    if U.ndim != 2 or y.shape != (U.shape[0],):
        raise ValueError(f"fit_reads must be (n, H) and fit_target (n,); got {U.shape} and {y.shape}")
    n = y.size
    G, h, s = U.T @ U / n, U.T @ y / n, float(y @ y / n)
    scale = np.sqrt(np.trace(G) / G.shape[0]) if np.trace(G) > 0 else 1.0
    chol = np.linalg.cholesky(G + 1e-12 * scale**2 * np.eye(G.shape[0]))
    from scipy.optimize import nnls  # imported where used: `idepth --help` stays free of scipy
    w, _ = nnls(chol.T, np.linalg.solve(chol, h), maxiter=50 * G.shape[0])
    grad = 2 * (G @ w - h)
    on = w > 0
    violation = max(float(np.max(np.abs(grad[on]), initial=0.0)), float(np.max(-grad[~on], initial=0.0)))
    fit_loss = float(s - 2 * h @ w + w @ G @ w)
    loss = loss_se = float("nan")
    if eval_reads is not None:
        err = (np.asarray(eval_reads) @ w - np.asarray(eval_target)) ** 2
        loss, loss_se = float(err.mean()), float(err.std(ddof=1) / np.sqrt(err.size))
    return MixtureLimit(weights=w, fit_loss=fit_loss, loss=loss, loss_se=loss_se,
                        kkt_residual=violation / max(float(np.max(np.abs(2 * h))), 1e-300), support=int(on.sum()))


# --------------------------------------------------------------------------- fitting the form law

def _stratified_loss(pi: np.ndarray, Q: np.ndarray, H: np.ndarray, W: np.ndarray, s: float, depth: float) -> float:
    quad = float(pi @ Q @ pi) + float(pi @ W) / depth
    lin = float(pi @ H)
    return s - lin * lin / quad if quad > 0 else s


def fit_form_law(moments: ClassMoments, depth: int, *, temperatures, sigmas, start=None) -> HeadFamily:
    """The class probabilities ``π`` minimising the stratified exchangeable loss at ``depth``.

    Minimises ``s − (πᵀH)² / (πᵀQπ + πᵀW/L)`` over the simplex (``Q, H, W, s`` from
    :meth:`ClassMoments.quadratic`): atoms (``W_k = 0``) win at small ``L``, diffuse classes
    at large ``L``. The objective is scale-free in ``π``, so any ``π ≥ 0`` is normalised.

    Parameters
    ----------
    moments : ClassMoments
        Of the candidate classes, on fit contexts.
    depth : int
        ``L``.
    temperatures, sigmas : sequence of float
        The classes (as in :class:`HeadFamily`).
    start : array_like, optional
        A starting ``π`` (e.g. the fit at a neighbouring depth).

    Returns
    -------
    HeadFamily
        :func:`FittedFormHeads` with the fitted probabilities (classes of weight < 1e-6 kept, at 0 weight
        removed).

    References
    ----------
    Paper eqs. (60)-(63); derivation page ``exchangeable_heads`` (the stratified law).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> c = draw_contexts(PowerLawSpectrum(0, 0, 4), 8, 2, 256, 0)
    >>> fam = HeadFamily((4.0, 16.0, 8.0), (0.0, 0.0, 0.5))
    >>> m, _ = class_moments(fam, c, 16, 1)
    >>> fit_form_law(m, 4, temperatures=fam.temperatures, sigmas=fam.sigmas).name
    'fitted form law'
    """
    from scipy.optimize import minimize

    L = float(check_positive_int("depth", depth))
    Q, H, W, s = moments.quadratic()
    K = H.size
    # the ratio is invariant to scaling π: maximise (πᵀH)²/(πᵀQπ + πᵀW/L) with π = softplus-free square param
    def objective(z):
        pi = z * z
        quad = pi @ Q @ pi + pi @ W / L
        lin = pi @ H
        if quad <= 0:
            return 0.0, np.zeros_like(z)
        val = -(lin * lin) / quad
        grad_pi = -(2 * lin * H * quad - lin * lin * (2 * Q @ pi + W / L)) / (quad * quad)
        return val, grad_pi * 2 * z

    starts = []
    if start is not None:
        starts.append(np.sqrt(np.maximum(np.asarray(start, dtype=np.float64), 0) + 1e-8))
    starts.append(np.ones(K) / np.sqrt(K))
    best = None
    for z0 in starts:
        res = minimize(objective, z0, jac=True, method="L-BFGS-B", options={"maxiter": 2000})
        if best is None or res.fun < best.fun:
            best = res
    pi = best.x ** 2
    pi = pi / pi.sum()
    # the optimum may sit on a vertex (one class), which the squared parametrisation reaches only asymptotically
    vertex = int(np.argmin([_stratified_loss(e, Q, H, W, s, L) for e in np.eye(K)]))
    if _stratified_loss(np.eye(K)[vertex], Q, H, W, s, L) <= _stratified_loss(pi, Q, H, W, s, L):
        pi = np.eye(K)[vertex]
    keep = pi > 1e-6
    return FittedFormHeads(np.asarray(temperatures)[keep], np.asarray(sigmas)[keep], pi[keep])
