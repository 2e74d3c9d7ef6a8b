"""Input and teacher spectra (paper eq. (2)) and the exponent ζ (eq. (34)).

Two spectrum types are accepted everywhere a ``spectrum`` is taken:

* :class:`PowerLawSpectrum` -- the paper's family ``λ_k = c_λ k^(-a)``,
  ``ω_k = c_ω k^(-b)``, ``k = 1..d`` (eq. 2), with ``c_λ = c_ω = 1`` by default
  (the normalisation that reproduces the paper's Table 3);
* :class:`Spectrum` -- any pair of positive eigenvalue arrays.

Both expose ``eigenvalues`` (λ, sorted descending), ``teacher_eigenvalues``
(ω, paired with λ), ``d``, ``lambda_1``, ``label_variance`` (``Σ λ_k ω_k``,
the variance of ``y = βᵀx``) and ``zeta`` (``None`` for a general spectrum).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Union

import numpy as np

from .validation import check_finite_array, check_nonnegative, check_positive, check_positive_int

__all__ = ["Spectrum", "PowerLawSpectrum", "SpectrumLike", "ZETA", "zeta", "as_spectrum"]



@cache
def _zeta_expression():
    """Paper eq. (34): ζ = (a + b - 1)/a, the exponent of the constrained law R ∝ L^(-ζ).

    Built on first use (``theory.spectra.ZETA``), so that importing spectra -- as the data
    sampler and ``idepth --help`` do -- does not import sympy.
    """
    from . import symbols as s

    return (s.a + s.b - 1) / s.a


@cache
def _zeta_numeric():
    import sympy as sp

    from . import symbols as s

    return sp.lambdify((s.a, s.b), _zeta_expression(), "math")


def __getattr__(name: str):
    if name == "ZETA":  # the sympy expression of eq. (34), built when first asked for
        return _zeta_expression()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def zeta(a: float, b: float) -> float:
    """The exponent ζ = (a + b - 1)/a of the linear-attention laws (paper eq. (34)).

    The constrained (repeated-update) loss decays as ``L^(-ζ)`` and the free
    polynomial loss as ``L^(-2ζ)`` (eqs. 34, 40); both need ``ζ > 0``, i.e.
    ``a + b > 1``.

    Parameters
    ----------
    a : float
        Input-spectrum exponent, ``a > 0``.
    b : float
        Teacher-spectrum exponent, ``b >= 0``.

    Returns
    -------
    float
        ``(a + b - 1)/a`` (may be <= 0, in which case no power law is predicted).

    References
    ----------
    Paper eq. (34).

    Examples
    --------
    >>> zeta(2.0, 1.0)
    1.0
    >>> zeta(0.5, 2.0)
    3.0
    """
    a = check_positive("a", a)
    b = check_nonnegative("b", b)
    return float(_zeta_numeric()(a, b))


def _readonly(array: np.ndarray) -> np.ndarray:
    array = np.array(array, dtype=np.float64, copy=True)
    array.setflags(write=False)
    return array


class _SpectrumBase:
    """Shared read-only interface (see module docstring)."""

    eigenvalues: np.ndarray
    teacher_eigenvalues: np.ndarray

    @property
    def lambda_1(self) -> float:
        """Largest input eigenvalue λ_1."""
        return float(self.eigenvalues[0])

    @property
    def lambda_d(self) -> float:
        """Smallest input eigenvalue λ_d."""
        return float(self.eigenvalues[-1])

    @property
    def label_variance(self) -> float:
        """Var(y) = E[(βᵀx)²] = Σ_k λ_k ω_k for β ~ N(0, Ω), x ~ N(0, Σ) (eqs. 1, 4)."""
        return float(np.dot(self.eigenvalues, self.teacher_eigenvalues))

    @property
    def condition_number(self) -> float:
        """λ_1/λ_d, which bounds the depth windows of eqs. (34) and (40)."""
        return self.lambda_1 / self.lambda_d

    def covariances(self, rotation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Σ = O diag(λ) Oᵀ and Ω = O diag(ω) Oᵀ for a rotation O (paper eq. (3)).

        Works batched: ``rotation`` of shape ``(..., d, d)`` gives ``(..., d, d)``.
        """
        rotation = np.asarray(rotation, dtype=np.float64)
        if rotation.shape[-2:] != (self.d, self.d):
            raise ValueError(f"rotation must have shape (..., {self.d}, {self.d}); got {rotation.shape}")
        sigma = (rotation * self.eigenvalues) @ np.swapaxes(rotation, -1, -2)
        omega = (rotation * self.teacher_eigenvalues) @ np.swapaxes(rotation, -1, -2)
        return sigma, omega

    @property
    def is_isotropic(self) -> bool:
        """True when both spectra are flat, so the data law is rotation invariant."""
        return bool(np.all(self.eigenvalues == self.eigenvalues[0]) and np.all(self.teacher_eigenvalues == self.teacher_eigenvalues[0]))


@dataclass(frozen=True, eq=False)
class Spectrum(_SpectrumBase):
    """A general spectrum: input eigenvalues λ_k and paired teacher eigenvalues ω_k.

    The pairs are sorted so that λ is non-increasing (the pairing is kept).

    Parameters
    ----------
    eigenvalues : array_like, shape (d,)
        Input-covariance eigenvalues λ_k > 0 (eq. 2-3).
    teacher_eigenvalues : array_like, shape (d,)
        Teacher-covariance eigenvalues ω_k > 0, paired with ``eigenvalues``.

    References
    ----------
    Paper eqs. (2)-(4).

    Examples
    --------
    >>> spec = Spectrum([1.0, 4.0], [1.0, 0.5])
    >>> spec.eigenvalues.tolist(), spec.teacher_eigenvalues.tolist()
    ([4.0, 1.0], [0.5, 1.0])
    >>> spec.label_variance
    3.0
    """

    eigenvalues: np.ndarray
    teacher_eigenvalues: np.ndarray
    zeta: None = field(default=None, init=False)

    def __post_init__(self) -> None:
        lam = check_finite_array("eigenvalues", self.eigenvalues, positive=True)
        omega = check_finite_array("teacher_eigenvalues", self.teacher_eigenvalues, positive=True)
        if lam.shape != omega.shape:
            raise ValueError(
                f"eigenvalues and teacher_eigenvalues must have the same length; got {lam.shape[0]} and {omega.shape[0]}"
            )
        order = np.argsort(-lam, kind="stable")
        object.__setattr__(self, "eigenvalues", _readonly(lam[order]))
        object.__setattr__(self, "teacher_eigenvalues", _readonly(omega[order]))

    @property
    def d(self) -> int:
        """Input dimension d (number of modes)."""
        return int(self.eigenvalues.shape[0])

    def __repr__(self) -> str:
        return f"Spectrum(d={self.d}, lambda_1={self.lambda_1:.6g}, lambda_d={self.lambda_d:.6g})"


@dataclass(frozen=True)
class PowerLawSpectrum(_SpectrumBase):
    """The paper's power-law spectra λ_k = c_λ k^(-a), ω_k = c_ω k^(-b), k = 1..d (eq. (2)).

    Parameters
    ----------
    a : float
        Input exponent, ``a >= 0``.
    b : float
        Teacher exponent, ``b >= 0``.
    d : int
        Input dimension, ``d >= 1``.
    c_lambda, c_omega : float, optional
        Prefactors (default 1, unnormalised, as the paper's numbers need).

    Attributes
    ----------
    zeta : float or None
        ``(a + b - 1)/a`` (eq. 34); ``None`` when ``a = 0`` (no power law).

    References
    ----------
    Paper eqs. (2), (34).

    Examples
    --------
    >>> spec = PowerLawSpectrum(a=2.0, b=1.0, d=4)
    >>> spec.eigenvalues.round(4).tolist()
    [1.0, 0.25, 0.1111, 0.0625]
    >>> spec.zeta
    1.0
    >>> PowerLawSpectrum(0, 0, d=128).label_variance
    128.0
    """

    a: float
    b: float
    d: int
    c_lambda: float = 1.0
    c_omega: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "a", check_nonnegative("a", self.a))
        object.__setattr__(self, "b", check_nonnegative("b", self.b))
        object.__setattr__(self, "d", check_positive_int("d", self.d))
        object.__setattr__(self, "c_lambda", check_positive("c_lambda", self.c_lambda))
        object.__setattr__(self, "c_omega", check_positive("c_omega", self.c_omega))

    # computed once per instance (cached_property writes to __dict__, allowed on a frozen dataclass)
    @property
    def modes(self) -> np.ndarray:
        """Mode indices k = 1..d."""
        return np.arange(1, self.d + 1, dtype=np.float64)

    @cached_property
    def eigenvalues(self) -> np.ndarray:  # type: ignore[override]
        """λ_k = c_λ k^(-a) (eq. 2)."""
        return _readonly(self.c_lambda * self.modes ** (-self.a))

    @cached_property
    def teacher_eigenvalues(self) -> np.ndarray:  # type: ignore[override]
        """ω_k = c_ω k^(-b) (eq. 2)."""
        return _readonly(self.c_omega * self.modes ** (-self.b))

    @property
    def zeta(self) -> float | None:
        """ζ = (a + b - 1)/a (eq. 34), or None when a = 0."""
        return None if self.a == 0 else zeta(self.a, self.b)


SpectrumLike = Union[Spectrum, PowerLawSpectrum]


def as_spectrum(spectrum: object, name: str = "spectrum") -> SpectrumLike:
    """Return ``spectrum`` if it is a spectrum object; raise TypeError otherwise.

    References
    ----------
    Paper eqs. (2)-(3) (what a spectrum is).

    Examples
    --------
    >>> as_spectrum(PowerLawSpectrum(1, 1, 8)).d
    8
    """
    if isinstance(spectrum, _SpectrumBase):
        return spectrum  # type: ignore[return-value]
    raise TypeError(
        f"{name} must be a theory.Spectrum or theory.PowerLawSpectrum; got {type(spectrum).__name__}"
    )
