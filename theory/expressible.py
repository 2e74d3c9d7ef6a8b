"""``U_L``: the best expressible loss found at each depth, the lower envelope of the head branches.

The controlled softmax model of depth ``L`` (paper eq. 60) predicts ``g (1/L) Σ_ℓ u_ℓ`` with one
head ``u_ℓ`` (a form ``D_ℓ``, :mod:`theory.head_families`) per layer. Any choice of ``L`` forms and a
gain is a model of the class (``numerics.models.heads.form_average_params`` writes it as weights of
the LayerNorm model at ``N > d``), so its population loss is an upper bound on the optimum ``R*_L``.
:func:`best_expressible` searches three branches and keeps the best, depth by depth:

* **atomic** -- the best equal-weight allocation of cosine heads ``τ I`` (``B_L`` of
  :mod:`theory.softmax_bounds`): a few temperatures, exact after a few heads, then flat;
* **diffuse** -- heads drawn ``L π_k`` per class from a *fitted form law*
  (:func:`theory.head_families.fit_form_law`: atoms plus random-form classes ``τ (I + σ S)``),
  which follows the exchangeable law ``R_∞ + c/(L + L₀)`` toward a lower plateau;
* **combination** -- a local search over single-head moves in the whole dictionary (atoms and
  the pooled random forms), started from both of the above and from the rounded non-negative
  mixture (:func:`theory.softmax_bounds.average_of_heads`);

* **refined** (``L <= 2``) -- cosine heads ``τ I`` with a continuous temperature (golden-section search
  on ``log τ`` around the best grid temperature, one coordinate at a time at ``L = 2``), not the grid;
* **balanced** (``L >= 2``) -- sum-zero perturbations of one base: ``τ_ℓ (I + σ S_ℓ + ρ A_ℓ)`` with
  ``Σ_ℓ S_ℓ = Σ_ℓ A_ℓ = 0`` (:func:`balanced_forms`; symmetric ``S``, antisymmetric ``A``; antithetic
  pairs are ``L = 2``): the deviations of the heads from their mean cancel, so the ``V/L`` term of
  i.i.d. heads (the exchangeable law) is not paid; ``τ`` (continuous), ``σ``, ``ρ`` and the draw of
  the directions are chosen on the fit set;
* **quadrature** -- an equal-weight ``L``-point quadrature of a measure of forms (the Frank-Wolfe
  measure of the infinite-mixture limit, when one is given): kernel herding
  (:func:`herd`) followed by single-head swaps;

and the **nested** copy of the depth-``L/2`` winner (each head twice: the same function), so the
selected loss never increases along a doubling grid on the selection set.

Every candidate is ``L`` explicit forms and one gain (:meth:`ExpressibleLoss.model`), so ``U_L`` stays
the loss of a model of the class. A depth's value does not depend on which other depths are asked:
warm starts and nested copies come only from the depth's own halving chain ``L, L/2, L/4, ...``
(computed whether asked or not), and the random draws of a depth come from its own stream.

Statistics: heads, gains and allocations are fitted on a *fit* set of contexts; among the candidates
of a depth one is *selected* on an independent selection set; the loss is *reported* on a third,
independent set (paper eqs. 1-6), with its SE and the SE of its difference from ``B_L`` paired on
the same contexts. The reported value is therefore an honest estimate of the population loss of a
fixed model, i.e. of an upper bound on ``R*_L``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np

from theory.head_families import (
    ClassMoments,
    Contexts,
    CosineHeads,
    HeadFamily,
    RandomFormHeads,
    class_moments,
    paired_law_difference,
    draw_contexts,
    fit_form_law,
    form_reads,
    mixture_limit,
    random_symmetric,
)
from theory.softmax_bounds import average_of_heads, default_temperatures
from theory.spectra import as_spectrum
from theory.validation import check_depths, check_generator, check_positive_int, check_top_k

__all__ = ["BRANCHES", "DIVERSE_BRANCHES", "Dictionary", "ExpressibleLoss", "ExpressibleModel", "balanced_forms", "best_expressible",
           "data_file_name", "estimated_seconds", "herd", "shipped_expressible", "SHIPPED_DIR", "family_laws"]

#: the branches a depth's winner can come from (see the module docstring); ties go to the earlier one
BRANCHES = ("atomic", "diffuse", "combination", "nested", "refined", "balanced", "quadrature")
#: the branches whose winners hold heads of forms other than cosine ``τ I`` (see ``crossover_depth``)
DIVERSE_BRANCHES = ("diffuse", "combination", "balanced", "quadrature")
#: spreads σ of the sum-zero symmetric perturbations searched by the balanced branch
BALANCED_SIGMAS = (0.125, 0.25, 0.5)
#: antisymmetric spreads ρ searched by the balanced branch, as multiples of the chosen σ
BALANCED_ANTISYMMETRIC = (0.25, 0.5, 1.0)
#: golden-section steps of the balanced branch's common temperature (per σ)
BALANCED_TEMPERATURE_STEPS = 10
#: draws of the sum-zero directions tried at the chosen (τ, σ, ρ) (seeds ``seed, seed + 1, ...``)
BALANCED_DRAWS = 3
#: golden-section steps of the refined branch's continuous temperature search (per coordinate and round)
REFINE_STEPS = 24
#: spreads σ of the random-form classes in the default dictionary
DEFAULT_SIGMAS = (0.25, 0.5, 1.0)
#: fewest contexts in each of the fit, selection and report sets
MIN_CONTEXTS = 256
#: where the shipped results live, inside the ``theory`` package (written by ``idepth expressible run``)
SHIPPED_DIR = ("data", "expressible")


def data_file_name(a: float, b: float, d: int, P: int, k: int) -> str:
    """The shipped file of one setting: ``a{a}_b{b}_d{d}_P{P}_k{k}.json``.

    References
    ----------
    Paper eq. (2) (``a``, ``b``: the spectra's exponents) and eq. (6) (``k``).

    Examples
    --------
    >>> data_file_name(0, 0.25, 16, 64, 2)
    'a0_b0.25_d16_P64_k2.json'
    """
    return f"a{a:g}_b{b:g}_d{d}_P{P}_k{k}.json"


def shipped_expressible(spectrum, P: int, k: int = 2) -> "ExpressibleLoss | None":
    """The shipped ``U_L`` of a power-law spectrum with unit scales at ``(d, P, k)``, or None if there is none.

    References
    ----------
    Paper eqs. (59)-(63) (``U_L`` bounds the optimum of the model they describe).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> shipped_expressible(PowerLawSpectrum(0, 0, 16), 64).depths[-1]
    128
    >>> shipped_expressible(PowerLawSpectrum(0, 0, 16), 65) is None
    True
    """
    spectrum = as_spectrum(spectrum)
    if not (hasattr(spectrum, "a") and spectrum.c_lambda == 1.0 and spectrum.c_omega == 1.0):
        return None
    name = data_file_name(spectrum.a, spectrum.b, spectrum.d, int(P), int(k))
    entry = resources.files("theory").joinpath(*SHIPPED_DIR, name)
    if not entry.is_file():
        return None
    return ExpressibleLoss.from_dict(json.loads(entry.read_text(encoding="utf-8"))["result"])


@dataclass(frozen=True)
class Dictionary:
    """The finite dictionary of heads the search draws from, regenerated from its seed.

    Columns: first the cosine atoms ``τ I`` (``atoms``), then ``pool`` random forms for each
    diffuse class ``(τ, σ)`` in ``classes`` order.

    References
    ----------
    Paper eqs. (9)-(10) (each column is a softmax head with query-key form ``D``) and (59)-(60).

    Examples
    --------
    >>> dic = Dictionary(atoms=(2.0, 8.0), classes=((8.0, 0.5),), pool=3, d=2, seed=0)
    >>> dic.forms().shape, dic.size
    ((5, 2, 2), 5)
    """

    atoms: tuple
    classes: tuple
    pool: int
    d: int
    seed: int

    @property
    def size(self) -> int:
        """Number of heads."""
        return len(self.atoms) + self.pool * len(self.classes)

    def family(self) -> HeadFamily:
        """The atoms and classes as one :class:`~theory.head_families.HeadFamily` (uniform weights)."""
        taus = tuple(self.atoms) + tuple(t for t, _ in self.classes)
        sigmas = (0.0,) * len(self.atoms) + tuple(s for _, s in self.classes)
        return HeadFamily(taus, sigmas)

    def class_of_column(self) -> np.ndarray:
        """Class index (of :meth:`family`) of every column."""
        return np.concatenate([np.arange(len(self.atoms)),
                               np.repeat(np.arange(len(self.classes)) + len(self.atoms), self.pool)]).astype(int)

    def forms(self) -> np.ndarray:
        """All forms, shape (size, d, d) (deterministic in ``seed``)."""
        rng = np.random.default_rng(self.seed)
        family = self.family()
        out = [family.class_forms(j, 1, self.d, rng) for j in range(len(self.atoms))]
        out += [family.class_forms(len(self.atoms) + j, self.pool, self.d, rng) for j in range(len(self.classes))]
        return np.concatenate(out)

    def to_dict(self) -> dict:
        """A JSON-able dict."""
        return {"atoms": list(self.atoms), "classes": [list(c) for c in self.classes], "pool": self.pool,
                "d": self.d, "seed": self.seed}

    @classmethod
    def from_dict(cls, data: dict) -> "Dictionary":
        """Rebuild from :meth:`to_dict` output."""
        return cls(tuple(data["atoms"]), tuple(tuple(c) for c in data["classes"]), data["pool"], data["d"],
                   data["seed"])


@dataclass(frozen=True)
class ExpressibleLoss:
    """``U_L`` at each depth, the branch that won, and ``B_L`` beside it (all on the report set).

    Attributes
    ----------
    depths : tuple of int
    loss, loss_se : tuple of float
        ``U_L`` (report-set loss of the selected model) and its SE.
    atomic, atomic_se : tuple of float
        ``B_L`` on the same contexts.
    difference, difference_se : tuple of float
        ``U_L − B_L`` and its paired SE.
    branch : tuple of str
        Which of :data:`BRANCHES` won at each depth.
    allocations : tuple of dict
        The winner at each depth, with its ``"gain"``: ``{"columns": [...], "counts": [...]}`` over
        :attr:`dictionary`'s columns, or a recipe with a ``"kind"``: ``"cosine"`` (``"temperatures"``),
        ``"balanced"`` (the arguments of :func:`balanced_forms`) or ``"forms"`` (explicit ``"forms"`` and
        their ``"counts"``); ``"repeat": r`` repeats each head ``r`` times (a nested copy).
        :meth:`forms` and :meth:`model` rebuild the ``L`` forms.
    branch_losses : tuple of dict
        Every candidate's report-set loss and paired difference from ``B_L`` per depth.
    mixture, mixture_se, kkt_residual : float
        The mixture limit over the dictionary (report-set loss) and its KKT residual.
    dictionary : Dictionary
    setting : dict
        ``spectrum, d, P, k, n_fit, n_select, n_report``.

    References
    ----------
    Paper eqs. (59)-(63).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> u = ExpressibleLoss.from_dict(shipped_expressible(PowerLawSpectrum(0, 0, 16), 64).to_dict())
    >>> u.depths[:3], u.branch[0]
    ((1, 2, 4), 'atomic')
    """

    depths: tuple
    loss: tuple
    loss_se: tuple
    atomic: tuple
    atomic_se: tuple
    difference: tuple
    difference_se: tuple
    branch: tuple
    allocations: tuple
    branch_losses: tuple
    mixture: float
    mixture_se: float
    kkt_residual: float
    dictionary: Dictionary
    setting: dict

    def at(self, depth: int) -> tuple[float, float]:
        """``(U_L, SE)`` at a depth of :attr:`depths`."""
        i = self.depths.index(int(depth))
        return self.loss[i], self.loss_se[i]

    def crossover_depth(self) -> int | None:
        """The first depth from which diverse heads win at every deeper depth: where the atomic range ends.

        The smallest depth ``L_c`` of :attr:`depths` such that the branch at ``L_c`` and every deeper depth is
        one of :data:`DIVERSE_BRANCHES` (heads of non-cosine forms in the winner); None if the deepest depth's
        winner is atomic, refined or nested. Below ``L_c`` a few cosine temperatures are the best found (they saturate
        after a few heads); from ``L_c`` on, the exchangeable-heads law ``plateau + c/L`` of a diffuse branch.

        Examples
        --------
        >>> from theory import PowerLawSpectrum
        >>> shipped_expressible(PowerLawSpectrum(0, 0, 16), 64).crossover_depth()
        32
        """
        diverse = [branch in DIVERSE_BRANCHES for branch in self.branch]
        if not diverse or not diverse[-1]:
            return None
        first = len(diverse)
        while first > 0 and diverse[first - 1]:
            first -= 1
        return int(self.depths[first])

    def forms(self, depth: int) -> tuple[np.ndarray, float]:
        """The winner's ``L`` forms (in layer order) and gain at ``depth``: ``(forms (L, d, d), g)``."""
        if isinstance(depth, bool) or int(depth) not in self.depths:
            raise ValueError(f"depth must be one of {self.depths}; got {depth!r}")
        alloc = self.allocations[self.depths.index(int(depth))]
        return _allocation_forms(alloc, self.dictionary), float(alloc["gain"])

    def model(self, depth: int) -> "ExpressibleModel":
        """``U_L``'s model at ``depth``: its ``L`` forms and gain (:class:`ExpressibleModel`), with its branch and loss.

        Examples
        --------
        >>> from theory import PowerLawSpectrum
        >>> m = shipped_expressible(PowerLawSpectrum(0, 0, 16), 64).model(4)
        >>> m.forms.shape, m.depth
        ((4, 16, 16), 4)
        """
        forms, gain = self.forms(depth)
        i = self.depths.index(int(depth))
        return ExpressibleModel(forms=forms, gain=gain, branch=self.branch[i], loss=self.loss[i],
                                loss_se=self.loss_se[i])

    def to_dict(self) -> dict:
        """A JSON-able dict."""
        out = {key: list(getattr(self, key)) for key in ("depths", "loss", "loss_se", "atomic", "atomic_se",
                                                           "difference", "difference_se", "branch")}
        out.update(allocations=[dict(a) for a in self.allocations], branch_losses=[dict(b) for b in self.branch_losses],
                   mixture=self.mixture, mixture_se=self.mixture_se, kkt_residual=self.kkt_residual,
                   dictionary=self.dictionary.to_dict(), setting=dict(self.setting))
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "ExpressibleLoss":
        """Rebuild from :meth:`to_dict` output."""
        data = dict(data)
        for key in ("depths", "loss", "loss_se", "atomic", "atomic_se", "difference", "difference_se", "branch",
                    "allocations", "branch_losses"):
            data[key] = tuple(data[key])
        data["dictionary"] = Dictionary.from_dict(data["dictionary"])
        return cls(**data)


@dataclass(frozen=True, eq=False)
class ExpressibleModel:
    """One model of the controlled class: ``ŷ = g (1/L) Σ_ℓ u_{D_ℓ}`` (paper eq. 60), as ``L`` forms and a gain.

    Attributes
    ----------
    forms : ndarray, shape (L, d, d)
        The query-key form ``D_ℓ`` of each layer (read-only); ``u_D`` is
        :func:`theory.head_families.form_reads`.
    gain : float
        ``g``.
    branch : str
        The branch of :data:`BRANCHES` it comes from.
    loss, loss_se : float
        Its report-set loss and SE (``U_L``).

    References
    ----------
    Paper eqs. (59)-(60).

    Examples
    --------
    >>> m = ExpressibleModel(forms=np.stack([np.eye(2)] * 3), gain=1.5, branch="atomic", loss=1.0, loss_se=0.1)
    >>> m.depth, m.forms.flags.writeable
    (3, False)
    """

    forms: np.ndarray
    gain: float
    branch: str
    loss: float
    loss_se: float

    def __post_init__(self) -> None:
        forms = np.array(self.forms, dtype=np.float64, copy=True)
        if forms.ndim != 3 or forms.shape[1] != forms.shape[2] or forms.shape[0] < 1:
            raise ValueError(f"forms must have shape (L, d, d) with L >= 1; got {forms.shape}")
        forms.setflags(write=False)
        object.__setattr__(self, "forms", forms)
        object.__setattr__(self, "gain", float(self.gain))

    @property
    def depth(self) -> int:
        """``L``."""
        return int(self.forms.shape[0])

    def __repr__(self) -> str:
        return (f"ExpressibleModel(depth={self.depth}, d={self.forms.shape[1]}, gain={self.gain:.6g}, "
                f"branch={self.branch!r}, loss={self.loss:.6g} ± {self.loss_se:.2g})")


def balanced_forms(temperatures, sigma: float, antisymmetric: float, seed: int, d: int) -> np.ndarray:
    """``L`` balanced forms ``τ_ℓ (I + σ S_ℓ + ρ A_ℓ)`` with ``Σ_ℓ S_ℓ = Σ_ℓ A_ℓ = 0``, regenerated from a seed.

    ``S_ℓ`` are :func:`theory.head_families.random_symmetric` matrices and ``A_ℓ`` antisymmetric
    ones ``(Z − Zᵀ)/√(2d)``, both projected onto sum zero and rescaled by ``√(L/(L−1))`` (each keeps
    the law of one draw); they are drawn from ``numpy.random.default_rng([seed, L])``, the depth's own
    stream. At ``L = 2`` this is an antithetic pair ``τ (I ± (σ S + ρ A))``; at ``L = 1`` the cosine head.

    Parameters
    ----------
    temperatures : sequence of float
        ``τ_ℓ > 0``, one per layer (``L`` of them).
    sigma, antisymmetric : float
        ``σ >= 0`` and ``ρ >= 0``.
    seed : int
    d : int

    Returns
    -------
    ndarray, shape (L, d, d)

    References
    ----------
    Paper eqs. (9)-(10) (a general query-key form) and (60) (the mean of the heads is what balance keeps).

    Examples
    --------
    >>> forms = balanced_forms([4.0, 4.0, 4.0], 0.5, 0.25, seed=1, d=3)
    >>> bool(np.allclose(forms.mean(axis=0), 4.0 * np.eye(3)))
    True
    """
    taus = np.asarray(temperatures, dtype=np.float64).reshape(-1)
    if taus.size < 1 or not np.all(np.isfinite(taus)) or np.any(taus <= 0):
        raise ValueError(f"temperatures must be a non-empty sequence of finite numbers > 0; got {temperatures!r}")
    for name, value in (("sigma", sigma), ("antisymmetric", antisymmetric)):
        if not np.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0; got {value!r}")
    d = check_positive_int("d", d)
    L = taus.size
    eye = np.eye(d)
    if L == 1:
        return taus[:, None, None] * eye
    stream = np.random.default_rng([int(seed), L])
    S = random_symmetric(L, d, stream)
    Z = stream.standard_normal((L, d, d))
    A = (Z - np.swapaxes(Z, 1, 2)) / np.sqrt(2.0 * d)
    scale = np.sqrt(L / (L - 1.0))
    S = (S - S.mean(axis=0)) * scale
    A = (A - A.mean(axis=0)) * scale
    return taus[:, None, None] * (eye + float(sigma) * S + float(antisymmetric) * A)


def herd(gram: np.ndarray, cross: np.ndarray, depth: int) -> np.ndarray:
    """Equal-weight kernel herding: ``L`` heads chosen greedily, each step minimising the mixture's loss.

    With ``G = E[u uᵀ]`` and ``h = E[u y*]`` over the candidate heads (e.g. the atoms of a Frank-Wolfe
    measure), the equal-weight average of the heads counted by ``n`` with its best gain has loss
    ``E y*² − (hᵀn)² / (nᵀ G n)`` (paper eq. 60); each step adds the head that minimises it.

    Parameters
    ----------
    gram : ndarray, shape (m, m)
    cross : ndarray, shape (m,)
    depth : int

    Returns
    -------
    ndarray of int, shape (m,)
        Counts adding up to ``depth``.

    References
    ----------
    Paper eqs. (59)-(60); kernel herding (Chen, Welling & Smola 2010) with the gain fitted at each step.

    Examples
    --------
    >>> G = np.array([[1.0, 0.0], [0.0, 1.0]]); h = np.array([0.5, 0.5])
    >>> herd(G, h, 4).tolist()   # two orthogonal heads of equal use: alternate
    [2, 2]
    """
    G = np.asarray(gram, dtype=np.float64)
    h = np.asarray(cross, dtype=np.float64)
    L = check_positive_int("depth", depth)
    if G.ndim != 2 or G.shape != (h.size, h.size):
        raise ValueError(f"gram must have shape (m, m) and cross (m,); got {G.shape} and {h.shape}")
    counts = np.zeros(h.size, dtype=np.int64)
    Gn, quad, lin = np.zeros(h.size), 0.0, 0.0
    diag = np.diag(G)
    for _ in range(L):
        q = quad + 2.0 * Gn + diag
        v = lin + h
        gain = np.where((q > 0) & (v > 0), v * v / np.maximum(q, 1e-300), -np.inf)
        j = int(np.argmax(gain))
        counts[j] += 1
        quad, lin = float(q[j]), float(v[j])
        Gn = Gn + G[:, j]
    return counts


def _allocation_forms(alloc: dict, dictionary: "Dictionary") -> np.ndarray:
    """The ``L`` forms of a stored allocation (any branch), in layer order."""
    kind = alloc.get("kind", "dictionary")
    d = dictionary.d
    if kind == "dictionary":
        forms = np.repeat(dictionary.forms()[alloc["columns"]], alloc["counts"], axis=0)
    elif kind == "cosine":
        forms = np.asarray(alloc["temperatures"], dtype=np.float64)[:, None, None] * np.eye(d)
    elif kind == "balanced":
        forms = balanced_forms(alloc["temperatures"], alloc["sigma"], alloc["antisymmetric"], alloc["seed"], d)
    elif kind == "forms":
        forms = np.repeat(np.asarray(alloc["forms"], dtype=np.float64), alloc["counts"], axis=0)
    else:
        raise ValueError(f"unknown allocation kind {kind!r}")
    return np.repeat(forms, int(alloc.get("repeat", 1)), axis=0)


def _counts_vector(size: int, columns, counts) -> np.ndarray:
    n = np.zeros(size, dtype=np.int64)
    np.add.at(n, np.asarray(columns, dtype=np.int64), np.asarray(counts, dtype=np.int64))
    return n


def _round_to(total: int, shares: np.ndarray) -> np.ndarray:
    """Largest-remainder rounding of ``total · shares`` to integers adding up to ``total``."""
    raw = shares / shares.sum() * total
    n = np.floor(raw).astype(np.int64)
    for j in np.argsort(-(raw - n))[: total - int(n.sum())]:
        n[j] += 1
    return n


def _realise(family: HeadFamily, dictionary: Dictionary, depth: int) -> np.ndarray:
    """Counts over the dictionary's columns for ``L π_k`` heads per class: distinct pool heads per class."""
    column_class = dictionary.class_of_column()
    base = dictionary.family()
    per_class = _round_to(depth, np.asarray(family.weights))
    counts = np.zeros(dictionary.size, dtype=np.int64)
    for (tau, sigma), n_k in zip(zip(family.temperatures, family.sigmas), per_class):
        if n_k == 0:
            continue
        cls = next(j for j, (t, s) in enumerate(zip(base.temperatures, base.sigmas)) if t == tau and s == sigma)
        columns = np.flatnonzero(column_class == cls)
        for i in range(n_k):  # distinct heads first, cycling through the pool when n_k exceeds it
            counts[columns[i % columns.size]] += 1
    return counts


def _gain(G: np.ndarray, h: np.ndarray, counts: np.ndarray) -> float:
    quad = float(counts @ G @ counts)
    return float(h @ counts) / quad * counts.sum() if quad > 0 else 0.0


def best_expressible(depths, spectrum, P: int, k: int = 2, *, n_fit: int = 1 << 15, n_select: int = 1 << 15,
                     n_report: int = 1 << 17, pool: int = 48, sigmas=DEFAULT_SIGMAS, n_class_temperatures: int = 4,
                     measure=None, rng=0, progress=None) -> ExpressibleLoss:
    """``U_L``: the best expressible loss found at each depth (an upper bound on ``R*_L``), with its branch.

    Parameters
    ----------
    depths : int or sequence of int
        Depths ``L >= 1``. A depth's value depends only on its own halving chain ``L, L/2, ...``
        (computed whether asked or not; see the module docstring), not on the other depths asked.
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Data spectra (eq. 2).
    P, k : int
        Context length and top-k, ``1 <= k <= P``.
    n_fit, n_select, n_report : int
        Contexts of the three independent sets (each ``>= 256``).
    pool : int
        Random forms per diffuse class in the dictionary (``>= 2``).
    sigmas : sequence of float
        Spreads ``σ > 0`` of the diffuse classes.
    n_class_temperatures : int
        Diffuse classes are formed at the ``n`` temperatures of largest weight in the best
        non-negative mixture of cosine heads (fitted on the fit set).
    measure : object with ``forms`` (m, d, d) and ``weights`` (m,), optional
        The measure of forms the quadrature branch herds from, e.g. the Frank-Wolfe measure
        ``theory.mixture_limit.shipped_infinite_mixture(spectrum, P, k)``; None (default) leaves the
        branch out.
    rng : int or numpy.random.Generator
        Seeds the three context sets, the dictionary and the balanced branch's per-depth streams.
    progress : callable, optional
        ``progress(message)`` is called at each stage (the report set takes longest).

    Returns
    -------
    ExpressibleLoss

    Raises
    ------
    ValueError, TypeError
        A depth below 1 or not an integer, ``k > P``, sets smaller than 256 contexts, ``σ <= 0``,
        a measure whose forms are not (m, d, d) with m non-negative weights.

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``exchangeable_heads``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> u = best_expressible((1, 2), PowerLawSpectrum(0, 0, 4), 8, n_fit=512, n_select=512, n_report=512, pool=4)
    >>> u.branch[0] in ("atomic", "refined"), all(d <= 3 * s for d, s in zip(u.difference, u.difference_se))
    (True, True)
    """
    depth_list = sorted(set(int(L) for L in check_depths(depths, "depths")))
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    n_fit = check_positive_int("n_fit", n_fit, minimum=MIN_CONTEXTS)
    n_select = check_positive_int("n_select", n_select, minimum=MIN_CONTEXTS)
    n_report = check_positive_int("n_report", n_report, minimum=MIN_CONTEXTS)
    pool = check_positive_int("pool", pool, minimum=2)
    n_class_temperatures = check_positive_int("n_class_temperatures", n_class_temperatures)
    sigmas = tuple(float(s) for s in np.atleast_1d(np.asarray(sigmas, dtype=np.float64)))
    if not sigmas or any(not np.isfinite(s) or s <= 0 for s in sigmas):
        raise ValueError(f"sigmas must be non-empty and > 0; got {sigmas}")
    rng = check_generator(rng, "rng", allow_seed=True)
    d = spectrum.d
    measure = _measure(measure, d)
    say = progress or (lambda message: None)
    fit_rng, select_rng, report_rng, dict_rng, balanced_rng = rng.spawn(5)
    balanced_seed = int(balanced_rng.integers(2**31))
    chain = _halving_closure(depth_list)

    say(f"fit set: {n_fit} contexts")
    fit = draw_contexts(spectrum, P, k, n_fit, fit_rng)
    atoms = tuple(float(t) for t in default_temperatures(spectrum))
    cosine_fit = form_reads(np.asarray(atoms)[:, None, None] * np.eye(d), fit)
    cosine_mix = mixture_limit(cosine_fit, fit.target)
    order = np.argsort(-cosine_mix.weights)[:n_class_temperatures]
    class_taus = sorted(atoms[j] for j in order if cosine_mix.weights[j] > 0) or [atoms[int(np.argmax(cosine_mix.weights))]]
    dictionary = Dictionary(atoms=atoms, classes=tuple((t, s) for t in class_taus for s in sigmas), pool=pool, d=d,
                            seed=int(dict_rng.integers(2**31)))
    forms = dictionary.forms()
    say(f"dictionary: {dictionary.size} heads ({len(atoms)} cosine atoms, {len(dictionary.classes)} random-form "
        f"classes of {pool})")
    U_fit = np.concatenate([cosine_fit, form_reads(forms[len(atoms):], fit)], axis=1)
    n = fit.n
    G, h, s2 = U_fit.T @ U_fit / n, U_fit.T @ fit.target / n, float(fit.target @ fit.target / n)
    family = dictionary.family()
    column_class = dictionary.class_of_column()
    # per-class moments of the dictionary on the fit set (the pool is the dictionary's own)
    means = np.stack([U_fit[:, column_class == c].mean(axis=1) for c in range(family.n_classes)], axis=1)
    within = np.stack([U_fit[:, column_class == c].var(axis=1, ddof=1) if np.sum(column_class == c) > 1
                       else np.zeros(n) for c in range(family.n_classes)], axis=1)
    sizes = tuple(int(np.sum(column_class == c)) for c in range(family.n_classes))
    moments = ClassMoments(means, within, sizes, fit.target)
    n_atoms = len(atoms)
    if measure is not None:
        measure_fit = form_reads(measure[0], fit)
        measure_moments = (measure_fit.T @ measure_fit / n, measure_fit.T @ fit.target / n)

    candidates_by_depth, explicit_by_depth, done = {}, {}, {}
    for L in chain:
        say(f"depth {L}: searching the branches on the fit set")
        half = done.get(L // 2, {}) if L % 2 == 0 else {}  # warm starts only from the depth's own halving chain
        cands = {}
        atomic_counts, _, _ = average_of_heads(G[:n_atoms, :n_atoms], h[:n_atoms], s2, L,
                                               _doubled(half.get("atomic"), L))
        cands["atomic"] = np.concatenate([atomic_counts, np.zeros(dictionary.size - n_atoms, dtype=np.int64)])
        law = fit_form_law(moments, L, temperatures=family.temperatures, sigmas=family.sigmas, start=half.get("law"))
        cands["diffuse"] = _realise(law, dictionary, L)
        best_combination = None
        for start in (cands["diffuse"], cands["atomic"], _doubled(half.get("combination"), L)):
            if start is None:
                continue
            counts, _, value = average_of_heads(G, h, s2, L, start)
            if best_combination is None or value < best_combination[1]:
                best_combination = (counts, value)
        cands["combination"] = best_combination[0]
        candidates_by_depth[L] = cands  # the nested copy joins at selection, once the L/2 winner is known
        atomic_taus = np.repeat(np.asarray(atoms), atomic_counts)
        explicit = {}
        if L <= 2:
            explicit["refined"] = _refined(atomic_taus, atoms, fit)
        if L >= 2:
            explicit["balanced"] = _balanced(L, class_taus, atomic_taus, balanced_seed, fit)
        if measure is not None:
            counts = average_of_heads(*measure_moments, s2, L, herd(*measure_moments, L))[0]
            used_atoms = np.flatnonzero(counts)
            explicit["quadrature"] = {"kind": "forms", "forms": measure[0][used_atoms].tolist(),
                                      "counts": counts[used_atoms].tolist()}
        explicit_by_depth[L] = explicit
        done[L] = {"atomic": atomic_counts, "combination": cands["combination"],
                   "law": np.array([_weight_of(law, t, s) for t, s in zip(family.temperatures, family.sigmas)])}

    # Only the heads some candidate or the mixture limit uses are read on the large sets (nested copies
    # reuse earlier winners' heads): the same numbers as reading the whole dictionary, at a fraction of the cost.
    mix = mixture_limit(U_fit, fit.target)
    used = np.flatnonzero(np.any([c > 0 for cands in candidates_by_depth.values() for c in cands.values()], axis=0)
                          | (mix.weights > 0))
    column = np.full(dictionary.size, -1)
    column[used] = np.arange(used.size)

    def on_used(counts: np.ndarray) -> np.ndarray:
        assert np.all(column[np.flatnonzero(counts)] >= 0), "a candidate uses a head that was not read"
        return counts[used]

    say(f"selection set: {n_select} contexts ({used.size} of {dictionary.size} heads in use)")
    select = draw_contexts(spectrum, P, k, n_select, select_rng)
    U_sel = form_reads(forms[used], select)
    say(f"report set: {n_report} contexts")
    report = draw_contexts(spectrum, P, k, n_report, report_rng)
    U_rep = form_reads(forms[used], report)

    mix_err = (U_rep @ mix.weights[used] - report.target) ** 2
    mix = replace(mix, loss=float(mix_err.mean()), loss_se=_se(mix_err))
    results, winners = {}, {}
    for L in chain:
        # every candidate as (allocation without its gain, gain, summed reads on the selection and report sets)
        cands = {}
        for name, counts in candidates_by_depth[L].items():
            columns = np.flatnonzero(counts)
            cands[name] = ({"columns": columns.tolist(), "counts": counts[columns].tolist()}, _gain(G, h, counts),
                           U_sel @ on_used(counts), U_rep @ on_used(counts))
        for name, alloc in explicit_by_depth[L].items():
            these = _allocation_forms(alloc, dictionary)
            fit_sum = _summed_reads(these, fit)
            cands[name] = (alloc, L * float(fit_sum @ fit.target) / float(fit_sum @ fit_sum),
                           _summed_reads(these, select), _summed_reads(these, report))
        if L % 2 == 0 and L // 2 in winners:  # the same function as the L/2 winner: each head twice
            alloc, gain, sel_sum, rep_sum = winners[L // 2]
            if alloc.get("kind", "dictionary") == "dictionary":
                alloc = {"columns": alloc["columns"], "counts": [2 * c for c in alloc["counts"]]}
            else:
                alloc = {**alloc, "repeat": 2 * int(alloc.get("repeat", 1))}
            cands["nested"] = (alloc, gain, 2.0 * sel_sum, 2.0 * rep_sum)
        sel_loss = {name: float(np.mean((c[2] * c[1] / L - select.target) ** 2)) for name, c in cands.items()}
        # ties (e.g. a nested copy equal to a fresh candidate) go to the earlier branch of BRANCHES
        name = min(cands, key=lambda key: (sel_loss[key], BRANCHES.index(key)))
        winners[L] = cands[name]
        err = {key: (c[3] * c[1] / L - report.target) ** 2 for key, c in cands.items()}
        base = err["atomic"]
        results[L] = dict(
            loss=float(err[name].mean()), loss_se=_se(err[name]), atomic=float(base.mean()), atomic_se=_se(base),
            difference=float((err[name] - base).mean()), difference_se=_se(err[name] - base), branch=name,
            allocation={**cands[name][0], "gain": cands[name][1]},
            branch_losses={key: {"loss": float(e.mean()), "loss_se": _se(e), "minus_atomic": float((e - base).mean()),
                                 "minus_atomic_se": _se(e - base), "selection_loss": sel_loss[key]}
                           for key, e in err.items()})
    label = (f"PowerLawSpectrum(a={spectrum.a:g}, b={spectrum.b:g}, d={spectrum.d})" if hasattr(spectrum, "a")
             else repr(spectrum))
    column_of = {key: tuple(results[L][key] for L in depth_list) for key in next(iter(results.values()))}
    return ExpressibleLoss(
        depths=tuple(depth_list), loss=column_of["loss"], loss_se=column_of["loss_se"], atomic=column_of["atomic"],
        atomic_se=column_of["atomic_se"], difference=column_of["difference"],
        difference_se=column_of["difference_se"], branch=column_of["branch"], allocations=column_of["allocation"],
        branch_losses=column_of["branch_losses"], mixture=mix.loss, mixture_se=mix.loss_se,
        kkt_residual=mix.kkt_residual, dictionary=dictionary,
        setting={"spectrum": label, "d": d, "P": P, "k": k, "n_fit": n_fit, "n_select": n_select,
                 "n_report": n_report})


#: head-context reads per second of :func:`theory.head_families.form_reads`, seconds per drawn context and per depth's searches,
#: on one core of the machine the package was developed on (a time estimate, not a measurement to cite)
_READS_PER_SECOND, _SECONDS_PER_CONTEXT, _SECONDS_PER_SEARCH = 2e6, 1e-4, 2.0


def estimated_seconds(depths, *, n_fit: int = 1 << 15, n_select: int = 1 << 15, n_report: int = 1 << 17,
                      pool: int = 48, n_classes: int = 12) -> float:
    """A rough single-core estimate of :func:`best_expressible`'s run time (for a progress line).

    Counts the head reads of every branch (the dictionary on the fit set; the balanced grid, the
    refined searches and every candidate's heads on the selection and report sets, over each depth's
    halving chain) and the contexts drawn.

    References
    ----------
    Paper eq. (60) (each read is one head ``u_D`` on one context).

    Examples
    --------
    >>> estimated_seconds([1, 2, 4], n_fit=4096, n_select=4096, n_report=8192) < estimated_seconds([1, 2, 4])
    True
    """
    chain = _halving_closure(int(L) for L in check_depths(depths, "depths"))
    dictionary = 64 + pool * n_classes
    balanced_grid = len(BALANCED_SIGMAS) * (BALANCED_TEMPERATURE_STEPS + 4) + len(BALANCED_ANTISYMMETRIC) + BALANCED_DRAWS
    fit_reads = n_fit * (dictionary + sum(balanced_grid * L + (4 * REFINE_STEPS if L <= 2 else 0) for L in chain))
    large_reads = (n_select + n_report) * (min(dictionary, 64 + 8 * len(chain)) + 4 * sum(chain))
    searches = _SECONDS_PER_SEARCH * len(chain)  # the form-law fit and the local searches of each depth
    return (fit_reads + large_reads) / _READS_PER_SECOND + (n_fit + n_select + n_report) * _SECONDS_PER_CONTEXT + searches


def _halving_closure(depths) -> list:
    """The depths and every depth of their halving chains ``L, L/2, L/4, ...`` (while even), sorted."""
    out = set()
    for L in depths:
        L = int(L)
        out.add(L)
        while L % 2 == 0:
            L //= 2
            out.add(L)
    return sorted(out)


def _measure(measure, d: int):
    """``(forms (m, d, d), weights (m,))`` of the quadrature branch's measure, or None."""
    if measure is None:
        return None
    forms = np.asarray(getattr(measure, "forms", None), dtype=np.float64)
    weights = np.asarray(getattr(measure, "weights", None), dtype=np.float64)
    if forms.ndim != 3 or forms.shape[1:] != (d, d) or weights.shape != forms.shape[:1] or np.any(weights < 0):
        raise ValueError(f"measure must have forms of shape (m, {d}, {d}) and m non-negative weights; got forms "
                         f"{forms.shape} and weights {weights.shape}")
    keep = weights > 0
    return forms[keep], weights[keep]


def _summed_reads(forms: np.ndarray, contexts: Contexts, block: int = 64) -> np.ndarray:
    """``Σ_ℓ u_{D_ℓ}`` on every context (heads read in blocks, so memory stays that of ``block`` heads)."""
    out = np.zeros(contexts.n)
    for start in range(0, forms.shape[0], block):
        out += form_reads(forms[start:start + block], contexts).sum(axis=1)
    return out


def _fit_loss(summed: np.ndarray, target: np.ndarray) -> float:
    """Fit-set loss of ``g (1/L) Σ u`` with the best gain: ``E y*² − (E[s y*])² / E[s²]``."""
    quad = float(summed @ summed)
    return float(target @ target - (summed @ target) ** 2 / quad) / target.size if quad > 0 else float(
        target @ target / target.size)


def _refined(atomic_taus: np.ndarray, atoms, fit: Contexts) -> dict:
    """Cosine heads with continuous temperatures (``L <= 2``): golden-section on ``log τ``, one layer at a time.

    Starts from the atomic winner's temperatures; each coordinate is searched within one grid ratio
    either side (two rounds at ``L = 2``), the other head's reads held fixed.
    """
    d = fit.test_unit.shape[1]
    ratio = float(np.log(atoms[1] / atoms[0]))
    taus = [float(t) for t in atomic_taus]
    reads = [form_reads(t * np.eye(d)[None], fit)[:, 0] for t in taus]
    for _ in range(1 if len(taus) == 1 else 2):
        for i in range(len(taus)):
            others = sum(r for j, r in enumerate(reads) if j != i) if len(taus) > 1 else 0.0

            def loss(log_tau: float) -> float:
                return _fit_loss(others + form_reads(np.exp(log_tau) * np.eye(d)[None], fit)[:, 0], fit.target)

            centre = np.log(taus[i])
            best = _golden(loss, centre - ratio, centre + ratio, REFINE_STEPS)
            if loss(best) < loss(centre):
                taus[i] = float(np.exp(best))
                reads[i] = form_reads(taus[i] * np.eye(d)[None], fit)[:, 0]
    return {"kind": "cosine", "temperatures": sorted(taus)}


def _golden(f, lo: float, hi: float, steps: int) -> float:
    """Golden-section search of a unimodal ``f`` on ``[lo, hi]``: the best point found."""
    g = (np.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, e = b - g * (b - a), a + g * (b - a)
    fc, fe = f(c), f(e)
    for _ in range(steps):
        if fc <= fe:
            b, e, fe = e, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, e, fe
            e = a + g * (b - a)
            fe = f(e)
    return c if fc <= fe else e


def _balanced(L: int, class_taus, atomic_taus: np.ndarray, seed: int, fit: Contexts) -> dict:
    """The balanced branch at depth ``L >= 2``, chosen on the fit set.

    For each ``σ`` of :data:`BALANCED_SIGMAS` a common temperature ``τ`` by golden-section search on
    ``log τ`` (from half to four times the best cosine temperature: perturbed heads want a colder base);
    the atomic winner's temperatures as a second base; then ``ρ`` (:data:`BALANCED_ANTISYMMETRIC`), then
    :data:`BALANCED_DRAWS` draws of the directions.
    """
    d = fit.test_unit.shape[1]

    def value(alloc: dict) -> float:
        forms = balanced_forms(alloc["temperatures"], alloc["sigma"], alloc["antisymmetric"], alloc["seed"], d)
        return _fit_loss(_summed_reads(forms, fit), fit.target)

    centre = float(np.median(atomic_taus))
    best = None
    for sigma in BALANCED_SIGMAS:
        def at(log_tau: float, sigma=sigma) -> float:
            return value({"temperatures": [float(np.exp(log_tau))] * L, "sigma": sigma, "antisymmetric": 0.0,
                          "seed": seed})

        log_tau = _golden(at, np.log(centre / 2.0), np.log(centre * 4.0), BALANCED_TEMPERATURE_STEPS)
        alloc = {"kind": "balanced", "temperatures": [float(np.exp(log_tau))] * L, "sigma": sigma,
                 "antisymmetric": 0.0, "seed": seed}
        candidates = [alloc]
        if len(set(atomic_taus.tolist())) > 1:
            candidates.append({**alloc, "temperatures": [float(t) for t in atomic_taus]})
        for candidate in candidates:
            v = value(candidate)
            if best is None or v < best[1]:
                best = (candidate, v)
    chosen = best[0]
    for share in BALANCED_ANTISYMMETRIC:
        candidate = {**chosen, "antisymmetric": share * chosen["sigma"]}
        v = value(candidate)
        if v < best[1]:
            best = (candidate, v)
    chosen = best[0]
    for draw in range(1, BALANCED_DRAWS):
        candidate = {**chosen, "seed": seed + draw}
        v = value(candidate)
        if v < best[1]:
            best = (candidate, v)
    return best[0]


def _weight_of(family: HeadFamily, tau: float, sigma: float) -> float:
    for t, s, w in zip(family.temperatures, family.sigmas, family.weights):
        if t == tau and s == sigma:
            return w
    return 0.0


def _doubled(counts, depth: int):
    """The allocation of depth ``depth/2`` with every head twice (the same function), or None."""
    if counts is None or depth % 2 or int(np.sum(counts)) * 2 != depth:
        return None
    return np.asarray(counts, dtype=np.int64) * 2


def _se(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / np.sqrt(values.size))


def family_laws(spectrum, P: int, k: int = 2, *, depth: int = 128, n_contexts: int = 1 << 15, pool: int = 256,
                sigma: float = 0.5, rng=0) -> dict:
    """The exchangeable laws of three head families at one setting, paired against the cosine mixture.

    * ``cosine mixture``: heads drawn i.i.d. from the best non-negative mixture of cosine heads
      (its temperatures with its normalised weights as probabilities);
    * ``random forms``: ``τ (I + σ S)`` with ``τ`` the mixture's two heaviest temperatures, equally likely;
    * ``fitted form law``: atoms and random-form classes (σ ∈ {0.25, 0.5, 1}) at the mixture's temperatures,
      probabilities fitted (:func:`theory.head_families.fit_form_law`) at ``depth``, drawn stratified.

    The mixture and the fitted law are fitted on one set of ``n_contexts`` contexts; the laws are
    computed on another, with paired jackknife SEs of each family's plateau and ``c`` minus the
    cosine mixture's drawn the same way (the fitted law is drawn stratified, and stratified cosine
    atoms have ``c = 0``, so its ``coefficient_minus_cosine`` is its own ``c``).

    Returns
    -------
    dict
        Per family: ``plateau``, ``plateau_se``, ``coefficient``, ``coefficient_se``, ``shift``,
        ``stratified``, ``family`` (its ``to_dict``), and (but for the cosine mixture)
        ``plateau_minus_cosine``, ``..._se``, ``coefficient_minus_cosine``, ``..._se``.

    References
    ----------
    Paper eqs. (60)-(63); derivation page ``exchangeable_heads``.

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> laws = family_laws(PowerLawSpectrum(0, 0, 4), 8, n_contexts=512, pool=32, depth=8)
    >>> sorted(laws)
    ['cosine mixture', 'fitted form law', 'random forms']
    """
    spectrum = as_spectrum(spectrum)
    rng = check_generator(rng, "rng", allow_seed=True)
    fit_rng, eval_rng, pool_rng = rng.spawn(3)
    fit = draw_contexts(spectrum, P, k, n_contexts, fit_rng)
    atoms = default_temperatures(spectrum)
    mix = mixture_limit(form_reads(atoms[:, None, None] * np.eye(spectrum.d), fit), fit.target)
    support = np.flatnonzero(mix.weights > 0)
    heaviest = support[np.argsort(-mix.weights[support])][:2]
    cosine = CosineHeads(atoms[support], mix.weights[support])
    forms = RandomFormHeads(sorted(atoms[heaviest]), sigma)
    taus = tuple(float(t) for t in atoms[heaviest])
    candidates = HeadFamily(taus * 4, (0.0,) * len(taus) + tuple(s for s in DEFAULT_SIGMAS for _ in taus))
    moments, _ = class_moments(candidates, fit, pool, pool_rng)
    fitted = fit_form_law(moments, depth, temperatures=candidates.temperatures, sigmas=candidates.sigmas)
    contexts = draw_contexts(spectrum, P, k, n_contexts, eval_rng)
    out = {}
    for name, family, stratified in (("random forms", forms, False), ("fitted form law", fitted, True)):
        paired = paired_law_difference(cosine, family, contexts, pool=pool, rng=pool_rng, stratified=stratified)
        for key, law in (("cosine mixture", paired["first"]), (name, paired["second"])):
            if key in out and key == "cosine mixture":
                continue
            out[key] = {"plateau": law.plateau, "plateau_se": law.plateau_se, "coefficient": law.coefficient,
                        "coefficient_se": law.coefficient_se, "shift": law.shift, "stratified": law.stratified,
                        "family": (cosine if key == "cosine mixture" else family).to_dict()}
        out[name].update(plateau_minus_cosine=paired["plateau_difference"],
                         plateau_minus_cosine_se=paired["plateau_difference_se"],
                         coefficient_minus_cosine=paired["coefficient_difference"],
                         coefficient_minus_cosine_se=paired["coefficient_difference_se"])
    return out
