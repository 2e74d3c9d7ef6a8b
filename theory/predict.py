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
softmax    difficult   ``plateau + c/L`` (eq. 63 read as an exchangeable ensemble:
                       plateau = C, c = A − C) from an explicit calibration
========== =========== ============================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ._validation import check_choice, check_depths, check_positive_int
from .spectra import as_spectrum

__all__ = ["ATTENTIONS", "TASKS", "POLYNOMIALS", "LossPrediction", "SoftmaxCalibration", "predict_loss"]

ATTENTIONS = ("linear", "softmax")
TASKS = ("easy", "difficult")
POLYNOMIALS = ("constrained", "free")


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
            if isinstance(value, bool) or not np.isfinite(float(value)):
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

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> p = predict_loss([1, 2], PowerLawSpectrum(0, 0, 4), attention="softmax", task="easy")
    >>> p.loss.tolist()
    [0.0, 0.0]
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

    def to_dict(self) -> dict:
        """A JSON-able dict (arrays as lists)."""
        window = self.validity_window
        return {
            "attention": self.attention,
            "task": self.task,
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
            return SoftmaxCalibration(plateau=value["C"], coefficient=value["A"] - value["C"], source="A, C supplied")
        if keys == {"L0", "c"}:
            return SoftmaxCalibration(plateau=value["L0"], coefficient=value["c"], source="L0, c supplied")
    raise ValueError(
        "calibration must be a SoftmaxCalibration, a theory.decomposition.Decomposition, a theory.fitting.DepthLawFit, "
        f"or a mapping with keys {{'A', 'C'}} or {{'L0', 'c'}}; got {value!r}"
    )
