"""``predict_loss``: the predicted loss of a depth-L attention model, from the paper's laws.

One entry point for the four (attention, task) cases of the paper:

========== =========== ============================================================
attention  task        law
========== =========== ============================================================
linear     easy        exact finite-d population loss of the constrained residual
                       ``(1 − γλ/L)^L`` (eqs. 29–34, default) or of the optimal free
                       polynomial of degree ≤ L (eqs. 35–40, ``polynomial="free"``)
linear     difficult   top-k floor ``T − hᵀG†h`` of the best degree-L covariance
                       polynomial (eqs. 41–54): the irreducible floor plus the
                       polynomial-approximation term, which vanishes as L grows
softmax    easy        0 for every L ≥ 1 (one layer retrieves the exact match,
                       section 3.2 / Fig. 4)
softmax    difficult   ``regime="expressible"`` (default): ``U_L``, the best expressible
                       loss found at each depth -- the lower envelope of the cosine-atom,
                       diffuse-form, combined, refined, balanced and quadrature head
                       branches (:mod:`theory.expressible`), an upper bound on the optimum
                       ``R*_L``, with its model (``result.model(L)``) and the other side of
                       the bracket, the infinite-mixture limit ``R*_∞``
                       (:mod:`theory.mixture_limit`: ``plateau``, ``plateau_gap``,
                       ``alpha_predicted``); read from the shipped results at d = 16,
                       P = 64, top-2 for the Table 1 spectra, computed otherwise;
                       ``regime="heads"``: ``B_L``, the best equal-weight average of L cosine
                       heads (eq. 60, :mod:`theory.softmax_bounds`), also an upper bound;
                       ``regime="exchangeable"`` with ``heads=`` a head distribution
                       (:class:`theory.head_families.HeadFamily`): the exact law
                       ``R_∞ + c/(L + L₀)`` of i.i.d. heads, computed, not fitted;
                       ``regime="calibrated"`` with ``calibration=``: ``plateau + c/L``
                       (eq. 63 with depth-independent A, C) from a measurement
========== =========== ============================================================

Each case takes its own keywords (:data:`KEYWORDS`); a keyword given to a case it does not
apply to is refused, naming the keywords that do apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .validation import check_choice, check_depths, check_positive_int
from .spectra import as_spectrum

__all__ = ["INTERVAL_Z", "ATTENTIONS", "TASKS", "POLYNOMIALS", "REGIMES", "KEYWORDS", "KINDS", "LossPrediction",
           "SoftmaxCalibration", "predict_loss"]

ATTENTIONS = ("linear", "softmax")
#: a prediction's interval is ± this many SE (the two-sided 95 % normal quantile)
INTERVAL_Z = 1.959963984540054
#: the most memory ``regime='expressible'`` may use when it computes U_L where nothing is shipped (its contexts)
COMPUTE_MEMORY_BYTES = 4 * 2**30
#: how the softmax/difficult loss is predicted (see the module table); the first is the default
REGIMES = ("expressible", "heads", "exchangeable", "calibrated")
#: regime names that were renamed: the old name is refused with an error naming the new one
RENAMED_REGIMES = {"converged": "heads"}
TASKS = ("easy", "difficult")
POLYNOMIALS = ("constrained", "free")
FLOOR_METHODS = ("auto", "semi_analytic", "monte_carlo")
NORMS = ("layer", "rms")

#: the keywords of :func:`predict_loss` that apply to each case ``(attention, task, variant)``; the
#: variant is the polynomial (linear/easy) or the regime (softmax/difficult, ``"heads, width"``
#: when a width is given: the pre-norm ``norm`` applies only then). Any other keyword is refused.
KEYWORDS = {
    ("linear", "easy", "constrained"): ("polynomial", "gamma"),
    ("linear", "easy", "free"): ("polynomial",),
    ("linear", "difficult", ""): ("P", "k", "floor_method", "n_samples", "rng"),
    ("softmax", "easy", ""): (),
    ("softmax", "difficult", "expressible"): ("regime", "P", "k", "n_samples", "rng"),
    ("softmax", "difficult", "heads"): ("regime", "P", "k", "n_samples", "rng", "width"),
    ("softmax", "difficult", "heads, width"): ("regime", "P", "k", "n_samples", "rng", "width", "norm"),
    ("softmax", "difficult", "exchangeable"): ("regime", "heads", "P", "k", "n_samples", "rng"),
    ("softmax", "difficult", "calibrated"): ("regime", "calibration", "P", "k"),
}

#: what the number of each case is (``LossPrediction.kind``)
KINDS = {
    ("linear", "easy"): "exact population loss of the stated covariance polynomial",
    ("linear", "difficult"): "floor of the best degree-L covariance polynomial (the optimum of the linear model)",
    ("softmax", "easy"): "infimum of the loss (reached as the temperature -> 0)",
    ("softmax", "difficult", "expressible"): "U_L: best expressible loss found (an upper bound on the optimum R*_L)",
    ("softmax", "difficult", "heads"): "B_L: best average of L cosine heads (an expressible loss, an upper bound on R*_L)",
    ("softmax", "difficult", "exchangeable"): "exchangeable law R_inf + c/(L + L0) of i.i.d. heads (computed, not fitted)",
    ("softmax", "difficult", "calibrated"): "calibrated law plateau + c/L (a measured depth law, not a bound)",
}

#: default of each keyword when it applies (``None``: see :func:`predict_loss`)
DEFAULTS = {"polynomial": "constrained", "gamma": None, "P": None, "k": 2, "floor_method": "auto", "n_samples": 4096,
            "rng": None, "calibration": None, "regime": None, "norm": "layer", "width": None, "heads": None}

#: fewest Monte-Carlo contexts per set of the heads regime (what theory.softmax_bounds accepts)
MIN_BOUND_CONTEXTS = 16


@dataclass(frozen=True)
class SoftmaxCalibration:
    """Calibration of the softmax/difficult law ``R_L = plateau + coefficient / L`` (eq. 63).

    Build it from a measurement: :meth:`from_decomposition` (``plateau = C_L``,
    ``coefficient = A_L − C_L`` measured at one depth, with their covariance),
    :meth:`from_fit` (a fitted ``L0`` and ``c`` of eq. 16), or directly.

    Parameters
    ----------
    plateau : float
        ``C`` (or ``L0``), the loss as ``L → ∞``.
    coefficient : float
        ``A − C`` (or ``c``), the part removed by averaging over layers.
    covariance : array_like, shape (2, 2), optional
        Covariance of ``(plateau, coefficient)``; gives the prediction an interval.
    source : str
        Where the numbers come from (kept in the prediction's assumptions).

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> cal = SoftmaxCalibration(plateau=2.0, coefficient=8.0, source="example")
    >>> cal.plateau + cal.coefficient / 4
    4.0
    """

    plateau: float
    coefficient: float
    covariance: tuple | None = None
    source: str = "user-supplied"

    def __post_init__(self) -> None:
        for name in ("plateau", "coefficient"):
            value = getattr(self, name)
            try:
                finite = not isinstance(value, bool) and np.isfinite(float(value))
            except (TypeError, ValueError):  # a string, None, a list: not a number at all
                finite = False
            if not finite:
                raise ValueError(f"calibration {name} must be a finite number; got {value!r}")
            object.__setattr__(self, name, float(value))
        if self.plateau < 0:
            raise ValueError(f"calibration plateau must be >= 0 (a loss); got {self.plateau!r}")
        if self.covariance is not None:
            cov = np.asarray(self.covariance, dtype=np.float64)
            if cov.shape != (2, 2) or not np.all(np.isfinite(cov)):
                raise ValueError(f"calibration covariance must be a finite 2x2 array; got {self.covariance!r}")
            object.__setattr__(self, "covariance", tuple(map(tuple, cov.tolist())))

    @classmethod
    def from_decomposition(cls, decomposition) -> "SoftmaxCalibration":
        """``plateau = C_L``, ``coefficient = A_L − C_L`` from a measured :class:`~theory.decomposition.Decomposition`.

        Examples
        --------
        >>> from theory.decomposition import decompose
        >>> cal = SoftmaxCalibration.from_decomposition(decompose([[1.0, 2.0], [3.0, 2.0]], [1.0, 1.0]))
        >>> cal.plateau, cal.coefficient
        (0.5, 1.0)
        """
        if decomposition.depth < 2:
            raise ValueError("decomposition must be measured at depth >= 2 (C_L is undefined at L = 1)")
        cov_ac = np.asarray(decomposition.covariance, dtype=np.float64)
        # (C, A − C) = T (A, C) with T = [[0, 1], [1, −1]]
        T = np.array([[0.0, 1.0], [1.0, -1.0]])
        cov = T @ cov_ac @ T.T if np.all(np.isfinite(cov_ac)) else None
        return cls(
            plateau=decomposition.C,
            coefficient=decomposition.A - decomposition.C,
            covariance=None if cov is None else cov,
            source=f"decomposition measured at L = {decomposition.depth} on {decomposition.n_contexts} contexts",
        )

    @classmethod
    def from_fit(cls, fit) -> "SoftmaxCalibration":
        """``plateau = L0``, ``coefficient = c`` from a :class:`~theory.fitting.DepthLawFit` (eq. 16)."""
        return cls(plateau=fit.L0, coefficient=fit.c, source=f"depth-law fit (alpha = {fit.alpha:.3g} fitted; law uses 1/L)")


@dataclass(frozen=True, eq=False)
class LossPrediction:
    """A predicted loss curve ``R_L`` and what it rests on.

    Attributes
    ----------
    depth : ndarray of int
        Depths ``L``.
    loss : ndarray
        Predicted ``R_L``.
    lower, upper : ndarray or None
        Interval (when the calibration carries a covariance).
    attention, task : str
        The case predicted.
    law : str
        The law used, with its paper equations.
    plateau : float
        ``R_∞`` of the law (0 for the linear easy task).
    coefficient : float or None
        Prefactor ``c`` of the asymptote ``plateau + c L^(−exponent)``.
    exponent : float or None
        The exponent of that asymptote (ζ, 2ζ, 1) or None.
    validity_window : object or None
        Depth window where the asymptotic law is meant to hold (see ``in_window``).
    in_window : ndarray of bool or None
        Whether each depth lies inside the validity window.
    assumptions : tuple of str
        Everything the number rests on, in words.
    branch : ndarray of str or None
        Softmax/difficult ``regime='expressible'``: the branch of ``U_L``'s model at each depth
        (:data:`theory.expressible.BRANCHES`; ``nested`` where a shallower depth's model, each head
        repeated, gives the value).
    plateau_gap : float or None
        Softmax/difficult ``regime='expressible'``: ``plateau`` (the upper estimate of ``R*_∞``, the
        infinite-mixture limit) minus its lower estimate; None where no limit is shipped.
    alpha_predicted : float or None
        The exponent of ``R*_L − R*_∞`` predicted by the head kernel's spectrum, with
        ``alpha_interval`` (low, high); None where no limit is shipped.
    kind : str
        What the number is (:data:`KINDS`), e.g. ``"U_L: best expressible loss found (an upper
        bound on the optimum R*_L)"`` for the default softmax prediction on the difficult task (the
        winning branch at each depth is named in :attr:`assumptions`).

    The ``repr`` is a short summary (case, kind, depths, losses); every field stays an
    attribute and :meth:`to_dict` holds them all.

    References
    ----------
    Paper eqs. (16), (29)–(40), (41)–(54), (60)–(63) (see :func:`predict_loss`).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> p = predict_loss([1, 2], PowerLawSpectrum(0, 0, 4), attention="softmax", task="easy")
    >>> p.loss.tolist()
    [0.0, 0.0]
    >>> p
    LossPrediction: softmax attention, easy task
      kind: infimum of the loss (reached as the temperature -> 0)
      L:    [1, 2]
      R_L:  [0, 0]
    """

    depth: np.ndarray
    loss: np.ndarray
    attention: str
    task: str
    law: str
    plateau: float
    coefficient: float | None = None
    exponent: float | None = None
    validity_window: object | None = None
    in_window: np.ndarray | None = None
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    assumptions: tuple = field(default_factory=tuple)
    kind: str = ""
    branch: np.ndarray | None = None
    plateau_gap: float | None = None
    alpha_predicted: float | None = None
    alpha_interval: tuple | None = None
    models: Mapping | None = field(default=None, repr=False)

    def model(self, depth: int):
        """``U_L``'s model at ``depth`` (softmax/difficult, ``regime='expressible'``): its ``L`` forms and gain.

        Returns
        -------
        theory.expressible.ExpressibleModel
            ``forms`` (L, d, d) and ``gain``: ``ŷ = g (1/L) Σ_ℓ u_{D_ℓ}`` (paper eq. 60), whose loss on the
            report set is :attr:`loss` at that depth.

        Raises
        ------
        ValueError
            A case without models, or a depth not predicted.

        Examples
        --------
        >>> from theory import PowerLawSpectrum
        >>> u = predict_loss([1, 4], PowerLawSpectrum(0, 0, 16), attention="softmax", task="difficult", P=64)
        >>> u.model(4).forms.shape
        (4, 16, 16)
        """
        if self.models is None:
            raise ValueError("model(depth) applies to attention='softmax', task='difficult', regime='expressible' "
                             f"only; this prediction is {self.attention}/{self.task} ({self.kind})")
        if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or int(depth) not in self.models:
            raise ValueError(f"depth must be one of the predicted depths {sorted(self.models)}; got {depth!r}")
        return self.models[int(depth)]

    def __repr__(self) -> str:
        def numbers(values, limit=8):
            values = np.atleast_1d(values)
            shown = [f"{float(v):.6g}" for v in values[:limit]]
            return "[" + ", ".join(shown) + (f", ... ({len(values)} in all)" if len(values) > limit else "") + "]"

        lines = [f"LossPrediction: {self.attention} attention, {self.task} task", f"  kind: {self.kind}",
                 f"  L:    {numbers(self.depth)}", f"  R_L:  {numbers(self.loss)}"]
        if self.lower is not None:
            lines.append(f"  95 %: {numbers(self.lower)} .. {numbers(self.upper)}")
        if self.plateau_gap is not None:
            lines.append(f"  R*_inf: {self.plateau:.6g} (upper), {self.plateau_gap:.2g} above its lower estimate")
        if self.alpha_predicted is not None and self.alpha_interval is not None:
            lines.append(f"  alpha predicted: {self.alpha_predicted:.3g} [{self.alpha_interval[0]:.3g}, "
                         f"{self.alpha_interval[1]:.3g}]")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """A JSON-able dict (arrays as lists)."""
        window = self.validity_window
        return {
            "attention": self.attention,
            "task": self.task,
            "kind": self.kind,
            "law": self.law,
            "depth": self.depth.tolist(),
            "loss": self.loss.tolist(),
            "lower": None if self.lower is None else self.lower.tolist(),
            "upper": None if self.upper is None else self.upper.tolist(),
            "plateau": self.plateau,
            "coefficient": self.coefficient,
            "exponent": self.exponent,
            "validity_window": None if window is None else {"lower": window.lower, "upper": window.upper, "statement": window.statement},
            "in_window": None if self.in_window is None else self.in_window.tolist(),
            "assumptions": list(self.assumptions),
            "branch": None if self.branch is None else self.branch.tolist(),
            "plateau_gap": self.plateau_gap,
            "alpha_predicted": self.alpha_predicted,
            "alpha_interval": None if self.alpha_interval is None else list(self.alpha_interval),
        }


def _readonly(array) -> np.ndarray:
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


def _calibration(value) -> SoftmaxCalibration:
    if isinstance(value, SoftmaxCalibration):
        return value
    if hasattr(value, "A") and hasattr(value, "C") and hasattr(value, "covariance"):
        return SoftmaxCalibration.from_decomposition(value)
    if hasattr(value, "L0") and hasattr(value, "alpha"):
        return SoftmaxCalibration.from_fit(value)
    if isinstance(value, Mapping):
        keys = set(value)
        if keys == {"A", "C"}:
            for name in ("A", "C"):
                try:
                    SoftmaxCalibration(plateau=0.0, coefficient=value[name])  # a finite number, or refused
                except ValueError:
                    raise ValueError(f"calibration {name} must be a finite number; got {value[name]!r}") from None
            return SoftmaxCalibration(plateau=value["C"], coefficient=value["A"] - value["C"], source="A, C supplied")
        if keys == {"L0", "c"}:
            return SoftmaxCalibration(plateau=value["L0"], coefficient=value["c"], source="L0, c supplied")
    raise ValueError(
        "calibration must be a SoftmaxCalibration, a theory.decomposition.Decomposition, a theory.fitting.DepthLawFit, "
        f"or a mapping with keys {{'A', 'C'}} or {{'L0', 'c'}}; got {value!r}"
    )


def _linear_easy(depths, spectrum, polynomial, gamma):
    from . import polynomial_laws as laws

    if polynomial == "constrained":
        loss = laws.constrained_loss(depths, spectrum, gamma)
        law = (
            "constrained residual r_L(λ) = (1 − γλ/L)^L, exact finite-d population loss Σ_k λ_k ω_k r_L(λ_k)² "
            f"(eqs. 29–30, 33; γ = {'L/λ_1 (γ*, eq. 34)' if gamma is None else gamma})"
        )
        asymptote, exponent_of = laws.constrained_asymptote, laws.constrained_exponent
    else:
        loss = laws.free_loss(depths, spectrum)
        law = "optimal free residual of degree ≤ L with r(0) = 1, exact discrete optimum (eqs. 35–37)"
        asymptote, exponent_of = laws.free_continuum_asymptote, laws.free_exponent
    assumptions = [
        "population loss (P → ∞) of the linear model whose covariance polynomial is the stated residual (eqs. 26–30)",
        "no label noise (eq. 1)",
    ]
    coefficient = exponent = window = in_window = None
    if getattr(spectrum, "zeta", None) is not None and spectrum.zeta > 0:
        exponent = float(exponent_of(spectrum))
        coefficient = float(asymptote(1, spectrum))
        window = laws.validity_window(spectrum, polynomial)
        in_window = np.asarray(window.contains(depths))
        assumptions.append(f"continuum asymptote {coefficient:.6g}·L^(−{exponent:.6g}) holds for {window.statement}")
        if polynomial == "free":
            assumptions.append(
                "on a discrete power-law spectrum the exact free optimum falls faster than the continuum L^(−2ζ) "
                "(isolated top eigenvalues; see the package's notes on eq. 40)"
            )
    else:
        assumptions.append("no power-law asymptote: needs a PowerLawSpectrum with a + b > 1 (ζ > 0, eq. 34)")
    return dict(loss=np.asarray(loss, dtype=np.float64), law=law, plateau=0.0, coefficient=coefficient, exponent=exponent,
                validity_window=window, in_window=in_window, assumptions=tuple(assumptions))



def _linear_difficult(depths, spectrum, P, k, floor_method, n_samples, rng):
    from . import floor

    if P is None:
        raise ValueError("P (context length) is required for attention='linear', task='difficult' (the floor depends on P)")
    P = check_positive_int("P", P)
    k = check_positive_int("k", k)
    if k > P:
        raise ValueError(f"k must be an integer in [1, P] = [1, {P}]; got k={k}")
    floor_method = check_choice("floor_method", floor_method, FLOOR_METHODS)
    max_depth = int(depths.max())
    isotropic_inputs = bool(np.all(spectrum.eigenvalues == spectrum.eigenvalues[0]))
    if floor_method == "auto":
        # the task ranks by cosine similarity (eq. 6); the exact semi-analytic cosine route needs Σ ∝ I
        floor_method = "semi_analytic" if isotropic_inputs else "monte_carlo"
    if floor_method == "semi_analytic":
        ranking = "cosine" if isotropic_inputs else "inner_product"
        estimate = floor.linear_floor_semi_analytic(spectrum, P, k, max_depth, ranking=ranking)
    else:
        estimate = floor.linear_floor_monte_carlo(spectrum, P, k, max_depth, n_samples, 0 if rng is None else rng)
    loss = estimate.floor_by_degree[depths - 1]
    se = estimate.standard_error_by_degree[depths - 1]
    lower = upper = None
    if floor_method == "monte_carlo":
        lower, upper = loss - INTERVAL_Z * se, loss + INTERVAL_Z * se
    return dict(
        loss=np.asarray(loss, dtype=np.float64), lower=lower, upper=upper,
        law="best degree-L covariance polynomial on the top-k task: R_L = T − hᵀG†h (eqs. 41–54)",
        plateau=float(estimate.floor_by_degree[-1]), coefficient=None, exponent=None,
        assumptions=(
            f"top-{k} aggregation over P = {P} context tokens (eq. 6), population over contexts",
            f"floor evaluated by the {floor_method.replace('_', '-')} route ({estimate.ranking} ranking)"
            + (f", {estimate.n_samples} sampled contexts" if floor_method == "monte_carlo" else ""),
            "the linear model is taken to realise the optimal covariance polynomial of degree L (eq. 24 with free B_ℓ, m_r); "
            f"plateau = value at the largest depth asked for (L = {max_depth})",
        ),
    )


def _softmax_difficult(depths, calibration, spectrum=None, P=None, k=2):
    """Softmax/difficult: ``plateau + c/L`` from a calibration, or from the measured defaults.

    A regime name (``"lazy"``) as ``calibration`` takes ``(L0, c)`` from
    :mod:`theory.softmax_defaults` for this spectrum and ``(d, P, k)``, interpolated linearly
    over ``(a, b)`` inside the measured grid, and refuses other sizes and spectra.
    """
    if calibration is None:
        from .softmax_defaults import load_softmax_defaults

        shipped = load_softmax_defaults()
        raise ValueError(
            "regime='calibrated' needs calibration=...: a SoftmaxCalibration, a measured theory.decomposition."
            "Decomposition, a theory.fitting.DepthLawFit, a mapping {'A': ..., 'C': ...} or {'L0': ..., 'c': ...}, "
            f"or a regime name of the shipped measurements (calibration={shipped.default_regime!r}: "
            f"{shipped.describe_sizes()}, exponent fixed at 1); for a prediction without a measurement use "
            "regime='expressible' (the default)")
    if isinstance(calibration, str):
        from .softmax_defaults import load_softmax_defaults, softmax_default

        regime = calibration
        defaults = load_softmax_defaults()
        if regime not in defaults.regimes:  # a typo, or a file name: say what a name may be before anything else
            raise ValueError(
                f"calibration={regime!r} is not a regime of the shipped measurements ({', '.join(map(repr, defaults.regimes))}"
                f", in {defaults.path}); a measured calibration is a SoftmaxCalibration(...), a theory.decomposition."
                "Decomposition, a theory.fitting.DepthLawFit, or a mapping {'A': ..., 'C': ...} or {'L0': ..., 'c': ...}")
        if P is None:
            raise ValueError(
                f"calibration={regime!r} reads the shipped measurements, which exist for {defaults.describe_sizes()}: "
                "pass P=... (the context length), or a measured calibration instead: SoftmaxCalibration(...), a "
                "theory.decomposition.Decomposition (A_L, C_L at one depth), a theory.fitting.DepthLawFit, or a "
                "mapping {'A': ..., 'C': ...} or {'L0': ..., 'c': ...}"
            )
        P = check_positive_int("P", P)
        k = check_positive_int("k", k)
        try:
            entry = softmax_default(spectrum, P, k, regime=regime)
        except ValueError as exc:
            raise ValueError(f"calibration={regime!r} reads the shipped measurements, and {exc}") from None
        defaults = load_softmax_defaults()
        prov = defaults.provenance
        cal = SoftmaxCalibration(
            plateau=entry.L0, coefficient=entry.c, covariance=entry.covariance,
            source=(
                f"measured defaults ({entry.source}; d={entry.d}, N={entry.N}, P={entry.P}, k={entry.k}, regime "
                f"{entry.regime!r}: {prov.get('regimes', {}).get(entry.regime, '')}; package {prov.get('package_version')}, "
                f"{prov.get('date')}; regenerate with: {prov.get('command')})"
            ),
        )
    else:
        cal = _calibration(calibration)
    L = depths.astype(np.float64)
    loss = cal.plateau + cal.coefficient / L
    lower = upper = None
    if cal.covariance is not None:
        cov = np.asarray(cal.covariance)
        w = np.stack([np.ones_like(L), 1.0 / L])  # d loss / d (plateau, coefficient)
        se = np.sqrt(np.maximum(np.einsum("in,ij,jn->n", w, cov, w), 0.0))
        lower, upper = loss - INTERVAL_Z * se, loss + INTERVAL_Z * se
    return dict(
        loss=loss, law="R_L = plateau + c/L: exchangeable ensemble of L heads, R_L = C + (A − C)/L (eqs. 60–63)",
        plateau=cal.plateau, coefficient=cal.coefficient, exponent=1.0, lower=lower, upper=upper,
        assumptions=(
            f"calibration: {cal.source}",
            "A_L and C_L taken independent of depth (the paper finds C_L → C_∞, A_L − C_L → Δ_∞; eq. 63 alone does not imply 1/L)",
        ),
    )


def _doubling_envelope(depths: np.ndarray, loss: np.ndarray, *, with_origin: bool = False):
    """Running minimum along doubling chains: a depth-L/2 model with every layer twice is a depth-L model
    with the same function (the nested construction), so an expressible loss never rises along L, 2L, 4L...
    With ``with_origin``, also the index of the depth whose value each entry takes."""
    out = np.array(loss, dtype=np.float64)
    origin = np.arange(out.size)
    index = {int(L): i for i, L in enumerate(depths)}
    for i in np.argsort(depths):
        half = index.get(int(depths[i]) // 2) if depths[i] % 2 == 0 else None
        if half is not None and out[half] < out[i]:
            out[i], origin[i] = out[half], origin[half]
    return (out, origin) if with_origin else out


def _softmax_heads(depths, spectrum, P, k, n_samples, rng, norm, width):
    from .softmax_bounds import softmax_bounds

    if P is None:
        raise ValueError("P (context length) is required for regime='heads' (the bounds depend on P)")
    n_samples = check_positive_int("n_samples", n_samples, minimum=MIN_BOUND_CONTEXTS)
    similarity = "cosine" if width is None else "prenorm"
    unique = np.unique(depths)
    bounds = softmax_bounds(spectrum, P, k, depths=tuple(int(L) for L in unique), similarity=similarity, width=width,
                            norm=norm, n_contexts=n_samples, rng=0 if rng is None else rng)
    values = _doubling_envelope(unique, np.array([bounds.at(int(L))[0] for L in unique]))
    loss = values[np.searchsorted(unique, depths)]
    se = np.array([bounds.at(int(L))[1] for L in depths])
    half = INTERVAL_Z * np.nan_to_num(se, nan=0.0)
    what = "exact cosine similarity" if width is None else f"the pre-norm ({norm}) similarity at width N = {width}"
    return dict(
        loss=loss, lower=loss - half, upper=loss + half,
        law="B_L: best equal-weight average of L softmax heads with one common gain (eq. 60; theory.softmax_bounds)",
        plateau=bounds.mixture, coefficient=None, exponent=None,
        assumptions=(
            f"each layer of the controlled model (M(0), fixed H_x, eqs. 59-60) is a softmax head over {what} with "
            "its own temperature; heads whose form is not a multiple of the identity are not searched "
            "(regime='expressible' searches them)",
            f"Monte Carlo: {bounds.n_seeds} seeds x {bounds.n_contexts} fit + {bounds.n_contexts} held-out contexts, "
            f"top-{k} of P = {P}; interval = ±1.96 SE over seeds; plateau = B_∞ (best non-negative mixture) = "
            f"{bounds.mixture:.6g} ± {bounds.mixture_se:.2g}; non-increasing along doublings by nesting",
        ),
    )


def _softmax_expressible(depths, spectrum, P, k, n_samples, rng):
    import sys

    from .expressible import ExpressibleModel, _halving_closure, best_expressible, estimated_seconds, shipped_expressible

    if P is None:
        raise ValueError("P (context length) is required for regime='expressible' (the loss depends on P)")
    asked = np.unique(depths)
    # every depth of the asked depths' halving chains, so a depth's value (its own and its nested copies')
    # does not depend on which other depths are asked
    unique = np.array(_halving_closure(asked.tolist()), dtype=np.int64)
    shipped = shipped_expressible(spectrum, P, k) if rng is None and n_samples is None else None
    # each depth from one source, whatever else is asked: the shipped file where it has the depth, else computed
    from_file = [int(L) for L in unique if shipped is not None and int(L) in shipped.depths]
    missing = [int(L) for L in unique if int(L) not in from_file]
    sources, results = [], {}
    if from_file:
        sources.append(f"depths {from_file}: shipped results theory/data/expressible ({shipped.setting['n_report']} "
                       "report contexts; regenerate with: idepth expressible run)")
        results.update({L: shipped for L in from_file})
    if missing:
        n = check_positive_int("n_samples", 4096 if n_samples is None else n_samples, minimum=256)
        sizes = dict(n_fit=n, n_select=n, n_report=2 * n, pool=32)
        # each context holds a d x d rotation (eq. 3): the report set alone is 2n of them, in float64
        needed = 2 * (2 * n) * spectrum.d ** 2 * 8
        if needed > COMPUTE_MEMORY_BYTES:
            raise ValueError(f"computing U_L at d = {spectrum.d} (depths {missing}) needs about {needed / 2**30:.0f} GiB "
                             f"for its {2 * n} report contexts (at most {COMPUTE_MEMORY_BYTES / 2**30:.0f} GiB); "
                             f"pass a smaller d or n_samples{_shipped_note(spectrum, P, k)}")
        print(f"predict_loss: computing U_L at depths {missing} ({n} fit + {n} selection + {2 * n} report contexts; "
              f"about {estimated_seconds(missing, **sizes):.0f} s on one core){_shipped_note(spectrum, P, k)}",
              file=sys.stderr, flush=True)
        limit = _infinite_mixture(spectrum, P, k)  # its Frank-Wolfe measure feeds the quadrature branch
        computed = best_expressible(missing, spectrum, P, k, **sizes, measure=limit, rng=0 if rng is None else rng)
        sources.append(f"depths {missing}: computed now: {n} fit + {n} selection + {2 * n} report contexts, "
                       "32 random forms per class")
        results.update({L: computed for L in missing})
    at = {L: results[int(L)].at(int(L)) for L in unique}
    values, origin = _doubling_envelope(unique, np.array([at[L][0] for L in unique]), with_origin=True)
    models, branches, ses = {}, {}, {}
    for i, L in enumerate(unique):
        source = int(unique[origin[i]])
        model = results[source].model(source)
        if source != int(L):  # the shallower model with each head repeated: the same function
            model = ExpressibleModel(forms=np.repeat(model.forms, int(L) // source, axis=0), gain=model.gain,
                                     branch="nested", loss=model.loss, loss_se=model.loss_se)
        models[int(L)], branches[int(L)], ses[int(L)] = model, model.branch, at[source][1]
    position = np.searchsorted(unique, depths)
    loss = values[position]
    se = np.array([ses[int(L)] for L in unique])[position]
    models = {int(L): models[int(L)] for L in asked}
    limit = _infinite_mixture(spectrum, P, k)
    first = results[int(unique[0])]
    if limit is not None:
        plateau, gap = float(limit.upper), float(limit.upper - limit.lower)
        alpha, interval = float(limit.alpha_predicted), tuple(float(v) for v in limit.alpha_interval)
        limit_words = (f"plateau = R*_inf's upper estimate {plateau:.6g} ± {float(limit.upper_se):.2g} (the Frank-Wolfe "
                       f"mixture on its report set), its lower estimate {float(limit.lower):.6g} (fit-set optimum minus "
                       f"the Frank-Wolfe gap; theory.mixture_limit); alpha predicted by the head kernel's spectrum "
                       f"{alpha:.3g} [{interval[0]:.3g}, {interval[1]:.3g}]")
    else:
        plateau, gap, alpha, interval = first.mixture, None, None, None
        limit_words = (f"no infinite-mixture limit is shipped for this setting: plateau = the mixture limit over U_L's "
                       f"dictionary ({first.mixture:.6g} ± {first.mixture_se:.2g}), an upper estimate of R*_inf only; "
                       "plateau_gap and alpha_predicted are None")
    return dict(
        loss=loss, lower=loss - INTERVAL_Z * se, upper=loss + INTERVAL_Z * se,
        law="U_L: lower envelope of the atomic (cosine), diffuse (random forms), combined, refined (continuous "
            "temperature), balanced (sum-zero forms) and quadrature (herded limit measure) head branches "
            "(eq. 60; theory.expressible.best_expressible)",
        plateau=plateau, plateau_gap=gap, alpha_predicted=alpha, alpha_interval=interval, coefficient=None,
        exponent=None, branch=np.array([branches[int(L)] for L in unique])[position], models=models,
        assumptions=(
            "each layer of the controlled model (M(0), fixed H_x, eqs. 59-60) is a softmax head over a learned "
            "quadratic form; every candidate is L explicit forms and a gain (result.model(L)), written as weights of "
            "the LayerNorm model at N > d, so U_L is a loss the model reaches: an upper bound on the optimum R*_L, "
            "not a trained loss",
            "source: " + "; ".join(sources) + "; the winning branch by depth: "
            + ", ".join(f"L={int(L)}: {branches[int(L)]}" for L in asked),
            "interval = ±1.96 report-set SE; non-increasing along doublings by nesting; " + limit_words,
        ),
    )


def _infinite_mixture(spectrum, P, k):
    """The shipped infinite-mixture limit R*_∞ of the setting (theory.mixture_limit), or None."""
    from .mixture_limit import shipped_infinite_mixture

    return shipped_infinite_mixture(spectrum, P, k)


def _shipped_note(spectrum, P, k) -> str:
    """Why a softmax U_L is computed: the shipped sizes, named (never a silent extrapolation)."""
    from .expressible import SHIPPED_DIR
    from importlib import resources

    names = sorted(entry.name for entry in resources.files("theory").joinpath(*SHIPPED_DIR).iterdir()
                   if entry.name.endswith(".json"))
    return f"; shipped: {', '.join(n[:-5] for n in names)} at depths 1-128 by doubling" if names else ""


def _softmax_exchangeable(depths, spectrum, P, k, n_samples, rng, heads):
    from .head_families import HeadFamily, draw_contexts, exchangeable_law

    if not isinstance(heads, HeadFamily):
        raise ValueError("regime='exchangeable' needs heads=... (a theory.head_families.HeadFamily: the law the "
                         f"layers' heads are drawn from); got {_short(heads)}")
    if P is None:
        raise ValueError("P (context length) is required for regime='exchangeable'")
    n = check_positive_int("n_samples", 4096 if n_samples is None else n_samples, minimum=256)
    contexts = draw_contexts(spectrum, P, k, n, 0 if rng is None else rng)
    law = exchangeable_law(heads, contexts, rng=1 if rng is None else rng)
    loss = law.loss(depths.astype(np.float64))
    se = np.hypot(law.plateau_se, law.coefficient_se / (depths + law.shift))
    return dict(
        loss=loss, lower=loss - INTERVAL_Z * se, upper=loss + INTERVAL_Z * se,
        law="R_L = R_inf + c/(L + L0): L i.i.d. heads, gain re-fitted at each depth (eqs. 60-63 with constant A, C)",
        plateau=law.plateau, coefficient=law.coefficient, exponent=1.0,
        assumptions=(
            f"heads drawn i.i.d. from {heads.name} ({heads.n_classes} classes); R_inf = s - h^2/q = "
            f"{law.plateau:.6g} ± {law.plateau_se:.2g}, c = h^2 v/q^2 = {law.coefficient:.6g} ± "
            f"{law.coefficient_se:.2g}, L0 = v/q = {law.shift:.4g}: moments of the heads on {n} fresh contexts, "
            f"pool of {law.pool} heads per class (computed, not fitted)",
            "an expectation over draws: by Maurey's argument some draw of L heads reaches it, so it bounds R*_L",
        ),
    )


def predict_loss(
    depth,
    spectrum,
    *,
    attention: str = "linear",
    task: str = "easy",
    polynomial: str | None = None,
    gamma: float | None = None,
    P: int | None = None,
    k: int | None = None,
    floor_method: str | None = None,
    n_samples: int | None = None,
    rng=None,
    calibration=None,
    regime: str | None = None,
    norm: str | None = None,
    width: int | None = None,
    heads=None,
) -> LossPrediction:
    """Predicted loss ``R_L`` of a depth-L attention model (see the module table).

    Each keyword after ``task`` applies to some cases only (:data:`KEYWORDS`); passing one
    (other than ``None``) to a case it does not apply to raises ValueError naming the keywords
    that do apply.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1``: a scalar or a 1-d array.
    spectrum : theory.Spectrum or theory.PowerLawSpectrum
        Input and teacher spectra (eq. 2).
    attention : {'linear', 'softmax'}
    task : {'easy', 'difficult'}
    polynomial : {'constrained', 'free'}, optional
        Linear/easy: the repeated-update residual (eq. 33, default) or the free optimum (eq. 36).
    gamma : float, optional
        Linear/easy constrained: the effective step γ = κv, ``0 < γ < 2L/λ_1``; default ``γ* = L/λ_1``.
    P : int, optional
        Context length (linear/difficult and softmax/difficult: required;
        ``'calibrated'`` without a calibration: required, to select the measured defaults).
    k : int, optional
        Top-k of the difficult task (eq. 6); default 2.
    floor_method : {'auto', 'semi_analytic', 'monte_carlo'}, optional
        Linear/difficult: how the floor ``T − hᵀG†h`` is evaluated (eqs. 47–54).
        ``'auto'`` (default) uses the exact semi-analytic route with cosine ranking when the
        input spectrum is flat, and Monte Carlo (eq. 54) otherwise; ``'semi_analytic'`` on
        an anisotropic spectrum ranks by inner product (eq. 44), which overstates the
        cosine-ranked floor by 7–150 % on the paper's Table 3 rows.
    n_samples : int, optional
        Monte-Carlo contexts (default 4096): of the linear floor (``floor_method`` Monte
        Carlo, at least 4) or per set of the softmax ``'heads'`` bounds (at least
        :data:`MIN_BOUND_CONTEXTS`); fewer are refused.
    rng : numpy.random.Generator or int, optional
        Randomness for Monte Carlo (default seed 0).
    regime : {'expressible', 'heads', 'exchangeable', 'calibrated'}, optional
        Softmax/difficult (needs ``P``). ``'expressible'`` (default unless ``calibration`` is
        given): ``U_L``, the best expressible loss found -- an upper bound on the optimum
        ``R*_L`` (:func:`theory.expressible.best_expressible`); read from the shipped results
        (d = 16, P = 64, top-2, the Table 1 spectra, depths 1-128 by doubling) when neither
        ``n_samples`` nor ``rng`` is given, else computed with ``n_samples`` fit and selection
        contexts and twice as many report contexts (about a minute on one core).
        ``'heads'``: ``B_L``, the best average of L cosine heads
        (:func:`theory.softmax_bounds.softmax_bounds`, ``n_samples`` contexts per set).
        ``'exchangeable'``: the exact law ``R_∞ + c/(L + L₀)`` of L heads drawn i.i.d. from
        ``heads``. ``'calibrated'`` (the default when ``calibration`` is given):
        ``plateau + c/L`` from ``calibration``. The former name ``'converged'`` (of ``B_L``)
        is refused with an error naming ``'heads'``.
    calibration : optional
        ``regime='calibrated'``: :class:`SoftmaxCalibration`, a measured
        :class:`~theory.decomposition.Decomposition`, a :class:`~theory.fitting.DepthLawFit`,
        a mapping ``{'A', 'C'}`` / ``{'L0', 'c'}``, or the name of a regime of the shipped
        training measurements (``'lazy'``: ``theory/data/softmax_defaults.json``, at the sizes
        that file records, :meth:`~theory.softmax_defaults.SoftmaxDefaults.describe_sizes`;
        exponent fixed at 1). Sizes or spectra outside the file are refused, and so is a regime
        whose measurements there are recorded as not following ``L0 + c/L`` (``'converged'``:
        flat), naming the recorded verdict and free-exponent α.
    width : int, optional
        ``regime='heads'``: the hidden width N of the pre-norm similarity; default exact cosine.
    norm : {'layer', 'rms'}, optional
        ``regime='heads'`` with ``width``: the model's pre-norm (default ``'layer'``).
    heads : theory.head_families.HeadFamily, optional
        ``regime='exchangeable'``: the law the layers' heads are drawn from.

    Returns
    -------
    LossPrediction
        ``depth`` and ``loss`` (and ``lower``/``upper`` when there is an interval) have the
        shape of ``depth``: a 0-d array for a scalar depth, a 1-d array for a sequence.
        ``attention``, ``task``, ``kind`` (what the number is), ``law`` (with its equations),
        ``plateau`` (``R_∞``), ``coefficient`` and ``exponent`` of the asymptote when the law
        has one, ``validity_window``/``in_window`` (linear/easy), ``assumptions`` (in words).
        Softmax/difficult ``'expressible'``: ``branch`` (per depth), ``plateau`` = the upper
        estimate of ``R*_∞``, ``plateau_gap`` (to its lower estimate), ``alpha_predicted`` and
        ``alpha_interval`` (None where no limit is shipped), and ``model(L)``: ``U_L``'s ``L``
        forms and gain. A depth's value depends only on that depth (its halving chain), not
        on the other depths asked; depths without shipped data are computed, with a progress
        line on stderr giving a time estimate and the shipped files.

    Raises
    ------
    ValueError
        Unknown ``attention``/``task``/``polynomial``/``regime``, a keyword that does not
        apply to the case, a depth that is not an integer >= 1 or an array of more than one
        dimension, γ outside the stable range, missing ``P``, ``k > P``, too few ``n_samples``.

    References
    ----------
    Paper eqs. (16), (29)–(40), (41)–(54), (60)–(63).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=1024)
    >>> p = predict_loss([1, 4, 16], spec)
    >>> p.exponent  # ζ = (a + b − 1)/a
    1.0
    >>> bool(p.loss[0] > p.loss[1] > p.loss[2])
    True
    >>> u = predict_loss([1, 2, 128], PowerLawSpectrum(0, 0, 16), attention="softmax", task="difficult", P=64)
    >>> u.kind
    'U_L: best expressible loss found (an upper bound on the optimum R*_L)'
    >>> bool(u.loss[0] >= u.loss[1] >= u.loss[2])
    True
    >>> float(predict_loss(8, spec, attention="softmax", task="difficult", calibration={"L0": 2.0, "c": 8.0}).loss)
    3.0
    >>> predict_loss(8, spec, attention="softmax", task="difficult", P=64, regime="converged")
    Traceback (most recent call last):
    ...
    ValueError: regime='converged' was renamed: the best average of cosine heads (B_L) is regime='heads'
    >>> predict_loss(8, spec, attention="softmax", task="difficult", P=64, polynomial="free")
    Traceback (most recent call last):
    ...
    ValueError: polynomial='free' does not apply to attention='softmax', task='difficult', regime='expressible'; what applies there: regime, P, k, n_samples, rng
    """
    attention = check_choice("attention", attention, ATTENTIONS)
    task = check_choice("task", task, TASKS)
    given = {name: value for name, value in dict(
        polynomial=polynomial, gamma=gamma, P=P, k=k, floor_method=floor_method, n_samples=n_samples, rng=rng,
        calibration=calibration, regime=regime, norm=norm, width=width, heads=heads).items() if value is not None}
    if attention == "linear" and task == "easy":
        variant = check_choice("polynomial", given.get("polynomial", DEFAULTS["polynomial"]), POLYNOMIALS)
    elif attention == "softmax" and task == "difficult":
        if given.get("regime") in RENAMED_REGIMES:
            raise ValueError(f"regime={given['regime']!r} was renamed: the best average of cosine heads (B_L) is "
                             f"regime={RENAMED_REGIMES[given['regime']]!r}")
        variant = check_choice("regime", given.get("regime", "calibrated" if calibration is not None else REGIMES[0]),
                               REGIMES)
        variant += ", width" if variant == "heads" and width is not None else ""
    else:
        variant = ""
    _check_keywords(attention, task, variant, given)
    values = {**DEFAULTS, **given}
    depths = check_depths(depth)
    scalar = np.ndim(depth) == 0
    spectrum = as_spectrum(spectrum)
    if attention == "linear" and task == "easy":
        parts = _linear_easy(depths, spectrum, variant, values["gamma"])
    elif attention == "linear":
        parts = _linear_difficult(depths, spectrum, values["P"], values["k"], values["floor_method"],
                                  values["n_samples"], values["rng"])
    elif task == "easy":
        parts = dict(
            loss=np.zeros(depths.shape), law="zero loss for every L >= 1 (exact-match retrieval, section 3.2)",
            plateau=0.0, coefficient=0.0, exponent=None,
            assumptions=(
                "one softmax layer can put all attention on the exact match as its temperature → 0 "
                "(query/key norms grow, Fig. 4c); the prediction is the infimum, reached only in that limit",
            ),
        )
    elif variant.startswith("heads"):
        norm = check_choice("norm", values["norm"], NORMS)
        parts = _softmax_heads(depths, spectrum, values["P"], values["k"], values["n_samples"], values["rng"],
                               norm, width)
    elif variant == "expressible":
        parts = _softmax_expressible(depths, spectrum, values["P"], values["k"], given.get("n_samples"),
                                     given.get("rng"))
    elif variant == "exchangeable":
        parts = _softmax_exchangeable(depths, spectrum, values["P"], values["k"], given.get("n_samples"),
                                      given.get("rng"), heads)
    else:
        parts = _softmax_difficult(depths, calibration, spectrum, values["P"], values["k"])
        if parts["coefficient"] < 0:
            raise ValueError(f"calibration coefficient must be >= 0 (the loss falls with depth); got {parts['coefficient']!r}")
    parts["kind"] = KINDS.get((attention, task), KINDS.get((attention, task, variant.split(",")[0]), ""))
    shape = () if scalar else depths.shape  # a scalar depth gives 0-d arrays, as numpy ufuncs do
    for key in ("loss", "lower", "upper", "in_window", "branch"):
        if parts.get(key) is not None:
            parts[key] = _readonly(np.reshape(parts[key], shape))
    return LossPrediction(depth=_readonly(np.reshape(depths, shape)), attention=attention, task=task, **parts)


def _check_keywords(attention: str, task: str, variant: str, given: Mapping) -> None:
    """The one rule: a keyword given to a case it does not apply to (:data:`KEYWORDS`) is refused."""
    applicable = KEYWORDS[(attention, task, variant)]
    for name, value in given.items():
        if name not in applicable:
            case = f"attention={attention!r}, task={task!r}"
            if attention == "linear" and task == "easy":
                case += f", polynomial={variant!r}"
            elif variant:
                regime, _, with_width = variant.partition(", ")
                case += f", regime={regime!r}" + (" with width" if with_width else " without width" if name == "norm" else "")
            raise ValueError(f"{name}={_short(value)} does not apply to {case}; what applies there: "
                             f"{', '.join(applicable) or 'no keyword'}")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
