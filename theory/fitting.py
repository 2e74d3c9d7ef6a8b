"""Fitting the depth law ``R_L = L0 + c L^(−alpha)`` (paper eqs. (16), (88)–(89)) and the gap law (eqs. (92)–(93)).

The paper fits eq. (16) by least squares on ``log R`` (eqs. 88-89) with
``c > 0``, ``alpha > 0``, ``L0 >= 0``; ``L0`` is fixed to 0 on the easy task.
The gap fit ``L0 − C_L = c L^(−alpha)`` (eqs. 92-93) uses the plateau ``L0``
of Table 1 and the measured shared error ``C_L``.

Method (one code path for every mode):

* parameters in optimiser coordinates ``(L0, log c, log alpha)`` -- the logs
  enforce ``c, alpha > 0``, a bound enforces ``L0 >= 0`` -- minimised with
  :func:`scipy.optimize.least_squares` (``trf``) and an analytic Jacobian;
* starting values from a grid over ``alpha`` on which ``(L0, c)`` enter
  linearly (a relative-error linearised fit);
* standard errors from the Gauss-Newton covariance ``s² (JᵀJ)⁻¹`` in the natural
  parameters ``(L0, c, alpha)``, ``s² = RSS/dof``, and ``t``-intervals with
  ``dof`` degrees of freedom; for losses from several seeds also a bootstrap
  over seeds (percentile intervals).

``R²`` is reported **on log R**: ``1 − Σ r_i² / Σ (log R_i − mean log R)²`` with
``r_i`` the log residuals that are minimised (the paper does not say on which
scale its ``R²`` is computed).

The law is written once in sympy (:data:`DEPTH_LAW`, :data:`GAP_LAW`,
:data:`LOG_RESIDUAL`); :func:`depth_law` is its lambdified form and the
hand-written, underflow-safe Jacobian is tested against the sympy derivative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np
import scipy
import sympy as sp
from scipy import optimize
from scipy.special import stdtrit

from . import symbols as s
from .validation import (
    check_depths,
    check_finite_array,
    check_generator,
    check_level,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_real,
)

__all__ = [
    "DEPTH_LAW",
    "GAP_LAW",
    "LOG_RESIDUAL",
    "PARAMETERS",
    "FLOOR_MODES",
    "DepthLawFit",
    "depth_law",
    "depth_law_log_jacobian",
    "fit_depth_law",
    "fit_gap_law",
    "GAIN_LAW",
    "GAIN_ALPHA_GRID",
    "GainFit",
    "fit_gain_law",
    "GapFit",
    "gap_fit",
    "DepthLawRangeFit",
    "fit_depth_law_ranges",
]

#: paper eq. (16): R_L = L0 + c L^(-alpha)
DEPTH_LAW = s.L0 + s.c_coef * s.L ** (-s.alpha)
#: paper eqs. (92)-(93): L0 - C_L = c L^(-alpha) (the depth law with zero floor, fitted to the gap)
GAP_LAW = s.c_coef * s.L ** (-s.alpha)
#: eq. (16) for the paired depth gain R_1 - R_L = c (1 - L^(-alpha)): the plateau L0 cancels
GAIN_LAW = sp.simplify(DEPTH_LAW.subs(s.L, 1) - DEPTH_LAW)
#: an observed loss R_L (the data of eqs. 88-89)
R_observed = sp.Symbol("R_obs", positive=True)
#: paper eqs. (88)-(89): the residual whose squares are summed, log R_L - log(L0 + c L^(-alpha))
LOG_RESIDUAL = sp.log(R_observed) - sp.log(DEPTH_LAW)

#: parameter names, in the order of estimates, standard errors and covariance
PARAMETERS = ("L0", "c", "alpha")
#: how L0 is treated: fitted (L0 >= 0), fixed to zero (easy task), fixed to a given value
FLOOR_MODES = ("fitted", "zero", "fixed")

_depth_law_numeric = sp.lambdify((s.L, s.L0, s.c_coef, s.alpha), DEPTH_LAW, "numpy")

_ALPHA_GRID = np.geomspace(1e-3, 20.0, 161)
_N_STARTS = 3
_TOL = 1e-14


def _readonly(array: object, dtype=np.float64) -> np.ndarray:
    array = np.array(array, dtype=dtype, copy=True)
    array.setflags(write=False)
    return array


def _check_real(name: str, value: object, *, positive: bool = False) -> float:
    return check_positive(name, value) if positive else check_real(name, value)


def _check_law_parameters(L0: object, c: object, alpha: object) -> tuple[float, float, float]:
    return check_nonnegative("L0", L0), _check_real("c", c, positive=True), _check_real("alpha", alpha, positive=True)


# --------------------------------------------------------------------------- the law


def depth_law(depth: object, L0: float, c: float, alpha: float):
    """The depth law ``R_L = L0 + c L^(−alpha)``.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1``.
    L0 : float
        Floor (plateau), ``>= 0``.
    c : float
        Amplitude, ``> 0``.
    alpha : float
        Exponent, ``> 0``.

    Returns
    -------
    float or ndarray
        A float for a scalar ``depth``, else an array.

    References
    ----------
    Paper eq. (16).

    Examples
    --------
    >>> depth_law(4, L0=0.5, c=2.0, alpha=1.0)
    1.0
    >>> depth_law([1, 2], L0=0.0, c=1.0, alpha=2.0).tolist()
    [1.0, 0.25]
    """
    depths = check_depths(depth, "depth")
    L0, c, alpha = _check_law_parameters(L0, c, alpha)
    values = np.asarray(_depth_law_numeric(depths.astype(np.float64), L0, c, alpha), dtype=np.float64)
    return float(values[0]) if np.ndim(depth) == 0 else values


def _log_model(log_depth: np.ndarray, L0: float, log_c: float, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """``log(L0 + c L^-alpha)`` and ``w = c L^-alpha / (L0 + c L^-alpha)``, safe against underflow of ``L^-alpha``."""
    log_power = log_c - alpha * log_depth  # log(c L^-alpha)
    log_model = np.logaddexp(math.log(L0), log_power) if L0 > 0 else log_power
    return log_model, np.exp(log_power - log_model)


def depth_law_log_jacobian(depth: object, L0: float, c: float, alpha: float) -> np.ndarray:
    """Gradient of ``log(L0 + c L^(−alpha))`` with respect to ``(L0, c, alpha)``, one row per depth.

    With ``M = L0 + c L^(−alpha)`` and ``w = c L^(−alpha)/M``: ``∂ log M/∂L0 = 1/M``,
    ``∂ log M/∂c = w/c``, ``∂ log M/∂alpha = −w log L``. Evaluated in log space so
    that ``L^(−alpha)`` may underflow. The residual of eqs. (88)-(89) is
    ``log R − log M``, so its Jacobian is minus this matrix.

    Parameters
    ----------
    depth : int or array_like of int
        Depth(s) ``L >= 1``.
    L0, c, alpha : float
        Law parameters (``L0 >= 0``, ``c > 0``, ``alpha > 0``).

    Returns
    -------
    ndarray, shape (n_depths, 3)
        Columns in the order of :data:`PARAMETERS`.

    References
    ----------
    Paper eqs. (16), (88)-(89).

    Examples
    --------
    >>> depth_law_log_jacobian([1, 2], L0=1.0, c=1.0, alpha=1.0).round(4).tolist()
    [[0.5, 0.5, -0.0], [0.6667, 0.3333, -0.231]]
    """
    depths = check_depths(depth, "depth")
    L0, c, alpha = _check_law_parameters(L0, c, alpha)
    log_depth = np.log(depths.astype(np.float64))
    log_model, weight = _log_model(log_depth, L0, math.log(c), alpha)
    return np.column_stack([np.exp(-log_model), weight / c, -weight * log_depth])


# --------------------------------------------------------------------------- the result


@dataclass(frozen=True, eq=False)
class DepthLawFit:
    """Result of :func:`fit_depth_law` or :func:`fit_gap_law`.

    Attributes
    ----------
    L0, c, alpha : float
        Estimates. For a fixed floor ``L0`` is the given value; for the gap fit ``L0 = 0``
        (the gap law has no floor) and ``plateau`` holds the paper's ``L0``.
    L0_se, c_se, alpha_se : float
        Standard errors (``0`` for a fixed ``L0``; NaN when ``dof == 0`` or the Jacobian is singular).
    covariance : ndarray, shape (3, 3)
        Covariance of ``(L0, c, alpha)`` (read-only; zero row/column for a fixed ``L0``).
    r_squared : float
        ``R²`` on the log scale: ``1 − Σ residuals² / Σ (log y − mean log y)²`` (NaN if all ``y`` are equal).
    residuals : ndarray
        ``log y − log(fitted law)`` per depth, in the input order.
    depths : ndarray of int
        The depths.
    values : ndarray
        The fitted data ``y`` per depth: the losses (their mean over seeds if 2-d), or the gaps
        ``plateau − C_L`` for the gap fit.
    n : int
        Number of fitted points (depths).
    dof : int
        ``n`` minus the number of free parameters (3 if ``floor_mode == 'fitted'``, else 2).
    floor_mode : {'fitted', 'zero', 'fixed'}
        How ``L0`` was treated.
    quantity : {'loss', 'gap'}
        What was fitted: ``R_L`` (eq. 16) or ``plateau − C_L`` (eq. 92).
    plateau : float or None
        The plateau ``L0`` of the gap fit (Table 1); None for a loss fit.
    level : float
        Default coverage of :meth:`interval`.
    n_seeds : int
        Number of rows averaged (1 for 1-d input).
    bootstrap_samples : ndarray, shape (n_bootstrap, 3), or None
        Refitted ``(L0, c, alpha)`` on seeds resampled with replacement.
    manifest : Mapping
        ``package_version`` (``theory.__version__``), ``scipy_version``, ``method``,
        ``n_bootstrap``, ``seed`` (an int seed, else None) and ``rng_state`` (the
        generator's state before resampling, when a Generator was passed).

    References
    ----------
    Paper eqs. (16), (88)-(89), (92)-(93).

    Examples
    --------
    >>> fit = fit_depth_law([1, 2, 4, 8], [2.5, 1.5, 1.0, 0.75])
    >>> round(fit.L0, 6), round(fit.c, 6), round(fit.alpha, 6)
    (0.5, 2.0, 1.0)
    >>> round(fit.predict(16), 6)
    0.625
    """

    L0: float
    c: float
    alpha: float
    L0_se: float
    c_se: float
    alpha_se: float
    covariance: np.ndarray
    r_squared: float
    residuals: np.ndarray
    depths: np.ndarray
    values: np.ndarray
    n: int
    dof: int
    floor_mode: str
    quantity: str
    plateau: float | None
    level: float
    n_seeds: int
    bootstrap_samples: np.ndarray | None
    manifest: Mapping

    @property
    def estimates(self) -> dict[str, float]:
        """``{'L0': ..., 'c': ..., 'alpha': ...}``."""
        return {"L0": self.L0, "c": self.c, "alpha": self.alpha}

    @property
    def standard_errors(self) -> dict[str, float]:
        """``{'L0': ..., 'c': ..., 'alpha': ...}`` standard errors."""
        return {"L0": self.L0_se, "c": self.c_se, "alpha": self.alpha_se}

    def predict(self, depth: object):
        """The fitted law ``L0 + c L^(−alpha)`` (the gap ``c L^(−alpha)`` for a gap fit) at ``depth``.

        Examples
        --------
        >>> fit = fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], floor=0)
        >>> fit.predict([8, 16]).round(6).tolist()
        [0.125, 0.0625]
        """
        return depth_law(depth, self.L0, self.c, self.alpha)

    def interval(self, name: str, *, level: float | None = None, method: str = "wald") -> tuple[float, float]:
        """Confidence interval for one parameter.

        Parameters
        ----------
        name : {'L0', 'c', 'alpha'}
            Parameter.
        level : float, optional
            Coverage in (0, 1); default :attr:`level`.
        method : {'wald', 'bootstrap'}
            ``'wald'``: ``estimate ± t_{dof} · se`` (NaN when ``dof == 0``; ``(L0, L0)`` for a
            fixed floor). ``'bootstrap'``: percentile interval of :attr:`bootstrap_samples`
            (needs a bootstrap).

        Examples
        --------
        >>> fit = fit_depth_law([1, 2, 4, 8, 16], [1.02, 0.49, 0.26, 0.124, 0.063], floor=0)
        >>> lo, hi = fit.interval("alpha")
        >>> bool(lo < 1.0 < hi)
        True
        """
        if name not in PARAMETERS:
            raise ValueError(f"name must be one of {', '.join(repr(p) for p in PARAMETERS)}; got {name!r}")
        level = self.level if level is None else check_level(level)
        if method == "wald":
            estimate, se = self.estimates[name], self.standard_errors[name]
            if self.dof <= 0:
                return (float("nan"), float("nan"))
            half = float(stdtrit(self.dof, 0.5 + level / 2.0)) * se  # Student-t quantile
            return (estimate - half, estimate + half)
        if method == "bootstrap":
            if self.bootstrap_samples is None:
                raise ValueError(
                    "method 'bootstrap' needs a bootstrap: fit losses of shape (n_seeds, n_depths) with n_bootstrap > 0"
                )
            column = self.bootstrap_samples[:, PARAMETERS.index(name)]
            lo, hi = np.percentile(column, [50.0 * (1.0 - level), 50.0 * (1.0 + level)])
            return (float(lo), float(hi))
        raise ValueError(f"method must be one of 'wald', 'bootstrap'; got {method!r}")

    def to_dict(self) -> dict:
        """A JSON-serialisable dict (NaN written as None), including intervals at :attr:`level`.

        Examples
        --------
        >>> import json
        >>> d = fit_depth_law([1, 2, 4], [1.0, 0.5, 0.25], floor=0).to_dict()
        >>> d["floor_mode"], sorted(d["estimates"])
        ('zero', ['L0', 'alpha', 'c'])
        >>> _ = json.dumps(d, allow_nan=False)
        """
        intervals = {name: list(self.interval(name)) for name in PARAMETERS}
        bootstrap = None
        if self.bootstrap_samples is not None:
            bootstrap = {
                "n_bootstrap": int(self.bootstrap_samples.shape[0]),
                "intervals": {name: list(self.interval(name, method="bootstrap")) for name in PARAMETERS},
                "standard_errors": dict(zip(PARAMETERS, np.std(self.bootstrap_samples, axis=0, ddof=1).tolist())),
            }
        return _json_clean(
            {
                "law": "L0 - C_L = c L^-alpha" if self.quantity == "gap" else "R_L = L0 + c L^-alpha",
                "quantity": self.quantity,
                "floor_mode": self.floor_mode,
                "plateau": self.plateau,
                "estimates": self.estimates,
                "standard_errors": self.standard_errors,
                "covariance": self.covariance.tolist(),
                "level": self.level,
                "intervals": intervals,
                "r_squared": self.r_squared,
                "r_squared_scale": "log",
                "residuals": self.residuals.tolist(),
                "depths": self.depths.tolist(),
                "values": self.values.tolist(),
                "n": self.n,
                "dof": self.dof,
                "n_seeds": self.n_seeds,
                "bootstrap": bootstrap,
                "manifest": dict(self.manifest),
            }
        )


def _json_clean(value):
    if isinstance(value, Mapping):
        return {str(k): _json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_clean(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


# --------------------------------------------------------------------------- the fit


def _residuals_and_jacobian(theta: np.ndarray, log_depth: np.ndarray, log_values: np.ndarray, floor: float | None):
    """Log residuals and their Jacobian in optimiser coordinates.

    ``theta = (L0, log c, log alpha)`` if ``floor`` is None (fitted), else ``(log c, log alpha)``.
    """
    if floor is None:
        L0, log_c, log_alpha = theta
    else:
        L0, (log_c, log_alpha) = floor, theta
    alpha = math.exp(log_alpha)
    log_model, weight = _log_model(log_depth, max(L0, 0.0), log_c, alpha)
    residuals = log_values - log_model
    # d(-log M)/d(log c) = -w ; d(-log M)/d(log alpha) = alpha w log L ; d(-log M)/dL0 = -1/M
    columns = [-weight, alpha * weight * log_depth]
    if floor is None:
        columns.insert(0, -np.exp(-log_model))
    return residuals, np.column_stack(columns)


def _starting_points(log_depth: np.ndarray, values: np.ndarray, floor: float | None) -> list[np.ndarray]:
    """Best grid points over alpha; (L0, c) from a relative-error linear fit at each alpha."""
    log_values = np.log(values)
    weights = 1.0 / values  # log R - log M ≈ (R - M)/R
    candidates = []
    for alpha in _ALPHA_GRID:
        x = np.exp(-alpha * log_depth)
        if floor is None:
            design = np.column_stack([weights, weights * x])
            (L0, c), *_ = np.linalg.lstsq(design, weights * values, rcond=None)
            if L0 < 0:
                L0 = 0.0
                c = np.dot(weights * x, weights * values) / np.dot(weights * x, weights * x)
        else:
            L0 = floor
            if floor == 0:
                c = math.exp(np.mean(log_values + alpha * log_depth))  # exact log-space optimum
            else:
                c = np.dot(weights * x, weights * (values - floor)) / np.dot(weights * x, weights * x)
        if not np.isfinite(c) or c <= 0:
            continue
        log_model, _ = _log_model(log_depth, L0, math.log(c), alpha)
        cost = float(np.sum((log_values - log_model) ** 2))
        theta = [math.log(c), math.log(alpha)]
        if floor is None:
            theta.insert(0, L0)
        candidates.append((cost, np.array(theta)))
    if not candidates:  # every linearised c was <= 0 (e.g. all data below a fixed floor)
        theta = [math.log(float(np.max(values))), 0.0]
        if floor is None:
            theta.insert(0, 0.0)
        return [np.array(theta)]
    candidates.sort(key=lambda item: item[0])
    return [theta for _, theta in candidates[:_N_STARTS]]


#: range searched for the exponent alpha of eq. (16)
ALPHA_RANGE = (1e-4, 100.0)
_LOG_C_LIMIT = 700.0


def _optimise(log_depth: np.ndarray, values: np.ndarray, floor: float | None, starts: list[np.ndarray]) -> np.ndarray:
    log_values = np.log(values)
    # alpha is searched in [ALPHA_RANGE]: data that do not decay (e.g. R rising with L) would
    # otherwise send log alpha to +inf (overflow) or c to 0; a fit at a bound is still returned
    lo_a, hi_a = (math.log(v) for v in ALPHA_RANGE)
    if floor is None:
        bounds = ([0.0, -_LOG_C_LIMIT, lo_a], [np.inf, _LOG_C_LIMIT, hi_a])
    else:
        bounds = ([-_LOG_C_LIMIT, lo_a], [_LOG_C_LIMIT, hi_a])
    best = None
    for start in starts:
        start = np.clip(np.array(start, dtype=np.float64), np.asarray(bounds[0]), np.asarray(bounds[1]))
        if floor is None:
            start[0] = max(start[0], 0.0)
        result = optimize.least_squares(
            lambda theta: _residuals_and_jacobian(theta, log_depth, log_values, floor)[0],
            start,
            jac=lambda theta: _residuals_and_jacobian(theta, log_depth, log_values, floor)[1],
            bounds=bounds,
            method="trf",
            x_scale="jac",
            xtol=_TOL,
            ftol=_TOL,
            gtol=_TOL,
            max_nfev=2000,
        )
        if best is None or result.cost < best.cost:
            best = result
    return best.x


def _natural(theta: np.ndarray, floor: float | None) -> tuple[float, float, float]:
    if floor is None:
        return float(max(theta[0], 0.0)), math.exp(theta[1]), math.exp(theta[2])
    return float(floor), math.exp(theta[0]), math.exp(theta[1])


def _covariance(log_depth: np.ndarray, residuals: np.ndarray, L0: float, c: float, alpha: float, fitted_floor: bool, dof: int) -> np.ndarray:
    """Gauss-Newton covariance s² (JᵀJ)⁻¹ in (L0, c, alpha); NaN if dof == 0 or J is rank deficient."""
    log_model, weight = _log_model(log_depth, L0, math.log(c), alpha)
    jacobian = np.column_stack([np.exp(-log_model), weight / c, -weight * log_depth])  # = d log M
    free = [0, 1, 2] if fitted_floor else [1, 2]
    jacobian = jacobian[:, free]
    full = np.zeros((3, 3))
    singular_values = np.linalg.svd(jacobian, compute_uv=False)
    if dof <= 0 or singular_values[-1] <= 1e-12 * singular_values[0]:
        full[np.ix_(free, free)] = np.nan
        return full
    variance = float(np.sum(residuals**2)) / dof
    full[np.ix_(free, free)] = variance * np.linalg.inv(jacobian.T @ jacobian)
    return full


def _fit(depths, data, floor, *, quantity, plateau, level, n_bootstrap, rng, data_name) -> DepthLawFit:
    depth_array = check_depths(depths, "depths")
    if np.ndim(depths) != 1:
        raise ValueError(f"depths must be a 1-d sequence of depths; got shape {np.shape(depths)}")
    values = check_finite_array(data_name, data, positive=True, ndim=None)
    if values.ndim not in (1, 2):
        raise ValueError(f"{data_name} must have shape (n_depths,) or (n_seeds, n_depths); got shape {values.shape}")
    if values.shape[-1] != depth_array.size:
        raise ValueError(
            f"{data_name} must have {depth_array.size} values per row (one per depth, len(depths) = {depth_array.size}); "
            f"got shape {values.shape}"
        )
    if floor is None:
        floor_mode, floor_value = "fitted", None
    else:
        floor_value = check_nonnegative("floor", floor)
        floor_mode = "zero" if floor_value == 0 else "fixed"
    n_free = 3 if floor_value is None else 2
    n_distinct = np.unique(depth_array).size
    if n_distinct < n_free:
        raise ValueError(
            f"depths must contain at least {n_free} distinct depths to fit {n_free} parameters "
            f"(floor mode {floor_mode!r}); got {n_distinct} distinct in {depth_array.tolist()}"
        )
    level = check_level(level)
    n_bootstrap = check_positive_int("n_bootstrap", n_bootstrap, minimum=0)
    generator = check_generator(rng, allow_none=True, allow_seed=True)
    seed = None if generator is None or isinstance(rng, np.random.Generator) else int(rng)  # for the manifest
    rows = values if values.ndim == 2 else values[np.newaxis, :]
    n_seeds = rows.shape[0]
    if n_bootstrap > 0:
        if values.ndim != 2 or n_seeds < 2:
            raise ValueError(
                f"n_bootstrap > 0 resamples seeds: {data_name} must have shape (n_seeds, n_depths) with n_seeds >= 2; "
                f"got shape {values.shape}"
            )
        if generator is None:
            raise ValueError("rng must be a numpy.random.Generator or an int seed when n_bootstrap > 0; got None")

    mean_values = rows.mean(axis=0)
    log_depth = np.log(depth_array.astype(np.float64))
    theta = _optimise(log_depth, mean_values, floor_value, _starting_points(log_depth, mean_values, floor_value))
    L0, c, alpha = _natural(theta, floor_value)
    log_model, _ = _log_model(log_depth, L0, math.log(c), alpha)
    log_values = np.log(mean_values)
    residuals = log_values - log_model
    dof = depth_array.size - n_free
    covariance = _covariance(log_depth, residuals, L0, c, alpha, floor_value is None, dof)
    total = float(np.sum((log_values - log_values.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residuals**2)) / total if total > 0 else float("nan")

    from ._version import __version__

    manifest = {
        "package_version": __version__,
        "scipy_version": scipy.__version__,
        "method": "scipy.optimize.least_squares (trf) on log residuals, paper eqs. (88)-(89)",
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "rng_state": None,
    }
    samples = None
    if n_bootstrap > 0:
        if seed is None:
            manifest["rng_state"] = generator.bit_generator.state
        indices = generator.integers(0, n_seeds, size=(n_bootstrap, n_seeds))
        samples = np.empty((n_bootstrap, 3))
        for b, index in enumerate(indices):
            resampled = rows[index].mean(axis=0)
            samples[b] = _natural(_optimise(log_depth, resampled, floor_value, [theta]), floor_value)

    return DepthLawFit(
        L0=L0,
        c=c,
        alpha=alpha,
        L0_se=float(np.sqrt(covariance[0, 0])),
        c_se=float(np.sqrt(covariance[1, 1])),
        alpha_se=float(np.sqrt(covariance[2, 2])),
        covariance=_readonly(covariance),
        r_squared=r_squared,
        residuals=_readonly(residuals),
        depths=_readonly(depth_array, np.int64),
        values=_readonly(mean_values),
        n=int(depth_array.size),
        dof=int(dof),
        floor_mode=floor_mode,
        quantity=quantity,
        plateau=plateau,
        level=level,
        n_seeds=int(n_seeds),
        bootstrap_samples=None if samples is None else _readonly(samples),
        manifest=MappingProxyType(manifest),
    )


def fit_depth_law(
    depths: object,
    losses: object,
    floor: float | None = None,
    *,
    level: float = 0.95,
    n_bootstrap: int = 0,
    rng: np.random.Generator | int | None = None,
) -> DepthLawFit:
    """Fit ``R_L = L0 + c L^(−alpha)`` by least squares on ``log R`` (``c, alpha > 0``, ``L0 >= 0``).

    Minimises ``Σ_L (log R_L − log(L0 + c L^(−alpha)))²``. See the module
    docstring for the method (reparametrisation, grid start, analytic Jacobian,
    Gauss-Newton standard errors).

    Parameters
    ----------
    depths : array_like of int, shape (n_depths,)
        Depths ``L >= 1`` (repeats allowed; at least 3 distinct with a fitted floor, else 2).
    losses : array_like, shape (n_depths,) or (n_seeds, n_depths)
        Losses ``R_L > 0``. For 2-d input the mean over seeds is fitted.
    floor : None or float, optional
        ``None``: ``L0`` fitted (``>= 0``); ``0``: ``L0`` fixed at 0 (the easy task);
        a value ``> 0``: ``L0`` fixed at that value.
    level : float, default 0.95
        Default coverage of :meth:`DepthLawFit.interval`.
    n_bootstrap : int, default 0
        Number of bootstrap refits resampling seeds with replacement (2-d ``losses`` only).
    rng : numpy.random.Generator or int, optional
        Randomness of the bootstrap (required when ``n_bootstrap > 0``).

    Returns
    -------
    DepthLawFit

    Raises
    ------
    ValueError
        Mismatched lengths, too few (distinct) depths, non-positive or non-finite
        losses, non-integer or non-positive depths, a negative floor, a level outside
        (0, 1) -- each naming the argument.

    References
    ----------
    Paper eqs. (16), (88)-(89).

    Examples
    --------
    >>> fit = fit_depth_law([1, 2, 4, 8, 16], [2.5, 1.5, 1.0, 0.75, 0.625])
    >>> round(fit.alpha, 6), fit.floor_mode, fit.dof
    (1.0, 'fitted', 2)
    >>> seeds = [[2.6, 1.5, 1.0, 0.76, 0.62], [2.4, 1.5, 1.0, 0.74, 0.63]]
    >>> fit = fit_depth_law([1, 2, 4, 8, 16], seeds, n_bootstrap=20, rng=0)
    >>> fit.n_seeds, fit.bootstrap_samples.shape, fit.manifest["seed"]
    (2, (20, 3), 0)
    """
    return _fit(
        depths, losses, floor, quantity="loss", plateau=None, level=level, n_bootstrap=n_bootstrap, rng=rng,
        data_name="losses",
    )


def fit_gap_law(
    depths: object,
    shared_errors: object,
    plateau: float,
    *,
    level: float = 0.95,
    n_bootstrap: int = 0,
    rng: np.random.Generator | int | None = None,
) -> DepthLawFit:
    """Fit the gap law ``L0 − C_L = c L^(−alpha)`` with the plateau ``L0`` given.

    The gaps ``plateau − C_L`` are fitted with :func:`fit_depth_law` semantics and a
    zero floor (least squares on ``log(L0 − C_L)``). In the returned fit ``L0 = 0``
    (the floor of the gap law), ``plateau`` is the given ``L0``, ``quantity == 'gap'``,
    and :meth:`DepthLawFit.predict` returns the gap.

    Parameters
    ----------
    depths : array_like of int, shape (n_depths,)
        Depths ``L >= 1`` (at least 2 distinct).
    shared_errors : array_like, shape (n_depths,) or (n_seeds, n_depths)
        Shared errors ``C_L`` (e.g. :attr:`theory.decomposition.Decomposition.C`); every
        entry must be below ``plateau``.
    plateau : float
        ``L0`` (the paper takes it from Table 1).
    level, n_bootstrap, rng
        As in :func:`fit_depth_law`.

    Returns
    -------
    DepthLawFit

    References
    ----------
    Paper eqs. (92)-(93), Table 1.

    Examples
    --------
    >>> fit = fit_gap_law([1, 2, 4, 8], [1.0, 1.5, 1.75, 1.875], plateau=2.0)
    >>> round(fit.alpha, 6), round(fit.c, 6), fit.quantity
    (1.0, 1.0, 'gap')
    """
    plateau = _check_real("plateau", plateau)
    shared = check_finite_array("shared_errors", shared_errors, ndim=None)
    gaps = plateau - shared
    if np.any(gaps <= 0):
        worst = float(shared.flat[int(np.argmin(gaps))])
        raise ValueError(
            f"shared_errors must all be < plateau = {plateau!r} (the gap L0 - C_L is fitted on a log scale); "
            f"got {worst!r}"
        )
    return _fit(
        depths, gaps, 0.0, quantity="gap", plateau=plateau, level=level, n_bootstrap=n_bootstrap, rng=rng,
        data_name="shared_errors",
    )


# ------------------------------------------------------------------------------------------- the gain law
#: the α grid of :func:`fit_gain_law` (log-spaced)
GAIN_ALPHA_GRID = np.geomspace(0.01, 10.0, 601)
#: Δχ² of the two-sigma profile interval
_DELTA_CHI2_2SIGMA = 4.0
_gain_basis = sp.lambdify((s.L, s.alpha), sp.simplify(GAIN_LAW / s.c_coef), "numpy")


@dataclass(frozen=True)
class GainFit:
    """Weighted least-squares fit of the gain law ``g_L = R_1 − R_L = c (1 − L^-α)`` (:data:`GAIN_LAW`, eq. 16).

    Attributes
    ----------
    alpha, c : float
        Best fit (``c ≥ 0``).
    alpha_lo, alpha_hi : float
        Two-sigma profile interval of α (``χ²(α) ≤ χ²_min + 4 max(1, χ²_min/dof)``: a fit worse
        than its errors widens the interval by the Birge ratio); an end at the grid's edge
        (``0.01`` or ``10``) means the data do not bound α on that side.
    c_se : float
        SE of ``c`` at the best α.
    chi2 : float
        ``χ²`` at the best fit (gains treated as independent across depths).
    dof : int
        Depths minus two.

    References
    ----------
    Paper eq. (16); the depth gains of eqs. (61)-(63).

    Examples
    --------
    >>> fit = fit_gain_law([1, 2, 4, 8, 16], [0.0, 0.5, 0.75, 0.875, 0.9375], [0.0, 0.01, 0.01, 0.01, 0.01])
    >>> round(fit.alpha, 2), round(fit.c, 3), fit.covers(1.0)
    (1.0, 1.0, True)
    """

    alpha: float
    alpha_lo: float
    alpha_hi: float
    c: float
    c_se: float
    chi2: float
    dof: int

    def covers(self, alpha: float) -> bool:
        """Whether ``alpha`` lies in the two-sigma profile interval."""
        return self.alpha_lo <= alpha <= self.alpha_hi

    def overlaps(self, lo: float, hi: float) -> bool:
        """Whether the two-sigma interval meets ``[lo, hi]``."""
        return self.alpha_lo <= hi and self.alpha_hi >= lo

    @property
    def bounded(self) -> bool:
        """Both ends of the interval inside the grid (the data bound α on both sides)."""
        return self.alpha_lo > GAIN_ALPHA_GRID[0] and self.alpha_hi < GAIN_ALPHA_GRID[-1]

    def interval_text(self) -> str:
        lo = f"{self.alpha_lo:.3g}" if self.alpha_lo > GAIN_ALPHA_GRID[0] else f"< {GAIN_ALPHA_GRID[1]:.2g}"
        hi = f"{self.alpha_hi:.3g}" if self.alpha_hi < GAIN_ALPHA_GRID[-1] else f"> {GAIN_ALPHA_GRID[-2]:.3g}"
        return f"[{lo}, {hi}]"


def fit_gain_law(depths: Sequence[int], gains: Sequence[float], ses: Sequence[float]) -> GainFit:
    """Fit ``R_1 − R_L = c (1 − L^-α)``, ``c ≥ 0``, to paired depth gains by a profile over α.

    For each α on :data:`GAIN_ALPHA_GRID` the best ``c`` is a weighted linear least-squares
    solution (weights ``1/SE²``, depths ``L > 1``); the α with the smallest ``χ²`` is the fit
    and ``{α : χ²(α) ≤ χ²_min + 4 max(1, χ²_min/dof)}`` its two-sigma interval (widened by
    the Birge ratio when the law fits worse than the SEs allow).

    Parameters
    ----------
    depths : sequence of int
        Must contain at least two depths above 1.
    gains, ses : sequence of float
        ``R_1 − R_L`` and its paired SE per depth (the entry at ``L = 1`` is ignored).

    Returns
    -------
    GainFit

    Raises
    ------
    ValueError
        Fewer than two depths above 1, or a non-positive or non-finite SE.

    References
    ----------
    Paper eq. (16); the depth gains of eqs. (61)-(63).

    Examples
    --------
    >>> fit_gain_law([1, 2, 4], [0.0, 0.1, 0.2], [0.0, 0.01, 0.01]).dof
    0
    """
    depths = np.asarray(depths, dtype=np.float64)
    gains = np.asarray(gains, dtype=np.float64)
    ses = np.asarray(ses, dtype=np.float64)
    if not (depths.shape == gains.shape == ses.shape):
        raise ValueError(f"depths, gains and ses must have one shape; got {depths.shape}, {gains.shape}, {ses.shape}")
    keep = depths > 1
    if keep.sum() < 2:
        raise ValueError(f"depths must hold at least two depths above 1; got {depths.tolist()}")
    L, g, s = depths[keep], gains[keep], ses[keep]
    if not (np.all(np.isfinite(s)) and np.all(s > 0) and np.all(np.isfinite(g))):
        raise ValueError("gains must be finite and ses finite and positive at every depth above 1")
    w = 1.0 / s**2
    f = _gain_basis(L[None, :], GAIN_ALPHA_GRID[:, None])  # (alpha, depth): 1 − L^-α, from GAIN_LAW
    c = np.maximum((w * f * g).sum(axis=1) / (w * f * f).sum(axis=1), 0.0)
    chi2 = (w * (g[None, :] - c[:, None] * f) ** 2).sum(axis=1)
    best = int(np.argmin(chi2))
    dof = int(keep.sum() - 2)
    birge = max(1.0, float(chi2[best]) / dof) if dof > 0 else 1.0  # a poor fit widens the interval
    inside = GAIN_ALPHA_GRID[chi2 <= chi2[best] + _DELTA_CHI2_2SIGMA * birge]
    c_se = float(1.0 / math.sqrt((w * f[best] ** 2).sum()))
    return GainFit(alpha=float(GAIN_ALPHA_GRID[best]), alpha_lo=float(inside.min()), alpha_hi=float(inside.max()),
                   c=float(c[best]), c_se=c_se * math.sqrt(birge), chi2=float(chi2[best]), dof=dof)


# ------------------------------------------------------------------------------------------- fits of a study's means
@dataclass(frozen=True)
class GapFit:
    """The gap fit of :func:`gap_fit`: the exponent of ``L0 − C_L = c L^-α``, or why there is none.

    Attributes
    ----------
    ok : bool
        Whether the fit was made.
    alpha, alpha_se, r_squared : float
        Exponent, its Gauss-Newton SE and ``R²`` on the log scale (NaN when not ``ok``).
    reason : str
        Why the gap cannot be fitted (empty when ``ok``).

    References
    ----------
    Paper eqs. (92)-(93), Table 5.

    Examples
    --------
    >>> GapFit(False, reason="only 2 depths with C_L defined").alpha
    nan
    """

    ok: bool
    alpha: float = math.nan
    alpha_se: float = math.nan
    r_squared: float = math.nan
    reason: str = ""


def gap_fit(depths: Sequence[int], C: Sequence[float], L0: float) -> GapFit:
    """The paper's gap fit ``L0 − C_L = c L^-α`` (:func:`fit_gap_law`) over the depths ``L ≥ 2`` with ``C_L`` finite.

    Not ``ok`` (with the reason) when some ``C_L ≥ L0`` (the logarithm is undefined) or
    fewer than three depths remain.

    References
    ----------
    Paper eqs. (92)-(93), Table 5.

    Examples
    --------
    >>> out = gap_fit([2, 4, 8, 16], [1.5, 1.75, 1.875, 1.9375], 2.0)
    >>> out.ok, round(out.alpha, 3)
    (True, 1.0)
    >>> gap_fit([2, 4, 8], [1.5, 2.5, 1.9], 2.0).reason
    'C_L = 2.5 at L = 4 is not below L0 = 2'
    """
    depths = np.asarray(depths, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    keep = (depths >= 2) & np.isfinite(C)
    L, shared = depths[keep], C[keep]
    if np.any(shared >= L0):
        first = int(np.argmax(shared >= L0))
        return GapFit(False, reason=f"C_L = {shared[first]:.4g} at L = {int(L[first])} is not below L0 = {L0:.4g}")
    if L.size < 3:
        return GapFit(False, reason=f"only {L.size} depths with C_L defined")
    fit = fit_gap_law(L.astype(np.int64), shared, L0)
    return GapFit(True, alpha=float(fit.alpha), alpha_se=float(fit.standard_errors["alpha"]),
                  r_squared=float(fit.r_squared))


@dataclass(frozen=True)
class DepthLawRangeFit:
    """One fit of :func:`fit_depth_law_ranges`: the depth law over ``depths[start:]``.

    Attributes
    ----------
    start : int
        Index of the first fitted depth (0: all depths, as the paper fits).
    depths : tuple of int
        The fitted depths.
    fit : DepthLawFit or None
        None when the fit failed (``reason`` says why).
    alpha_se, L0_se : float
        Bootstrap SEs over seeds when there is a bootstrap, else the Gauss-Newton ones.
    bootstrap : bool
        Whether the SEs are bootstrap SEs.
    reason : str

    References
    ----------
    Paper eqs. (16), (88)-(89).

    Examples
    --------
    >>> DepthLawRangeFit(0, (1, 2, 4), None, reason="no fit").fit is None
    True
    """

    start: int
    depths: tuple
    fit: DepthLawFit | None
    alpha_se: float = math.nan
    L0_se: float = math.nan
    bootstrap: bool = False
    reason: str = ""


def fit_depth_law_ranges(depths: Sequence[int], losses: object, *, n_bootstrap: int = 200,
                         rng: int | None = None) -> tuple[DepthLawRangeFit, ...]:
    """Fit eq. (16) to losses ``(n_seeds, n_depths)`` over all depths and, when the mean first rises, from its peak on.

    The second range starts at the depth of the largest mean loss when that is neither the
    first depth nor one of the last two (the range the data define, not a chosen cut). SEs
    are bootstrap SEs over seeds (``n_bootstrap`` resamples, ``rng`` an int seed used afresh by
    each range) when there are several seeds, else Gauss-Newton SEs. A range whose fit fails
    is returned with ``fit=None`` and the reason.

    References
    ----------
    Paper eqs. (16), (88)-(89).

    Examples
    --------
    >>> L = np.array([1, 2, 4, 8])
    >>> (whole,) = fit_depth_law_ranges(L, [0.5 + 2.0 / L], rng=0)
    >>> whole.depths, round(whole.fit.alpha, 6), whole.bootstrap
    ((1, 2, 4, 8), 1.0, False)
    """
    depths = [int(L) for L in depths]
    losses = np.atleast_2d(np.asarray(losses, dtype=np.float64))
    peak = int(np.argmax(losses.mean(axis=0)))
    starts = [0] + ([peak] if 0 < peak <= len(depths) - 3 else [])
    out = []
    for start in starts:
        sub_depths = tuple(depths[start:])
        try:
            fit = fit_depth_law(sub_depths, losses[:, start:], n_bootstrap=n_bootstrap if len(losses) > 1 else 0,
                                rng=rng)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            out.append(DepthLawRangeFit(start, sub_depths, None, reason=str(exc)))
            continue
        boot = fit.bootstrap_samples
        if boot is not None and len(boot) > 1:
            alpha_se, L0_se = float(np.std(boot[:, 2], ddof=1)), float(np.std(boot[:, 0], ddof=1))
        else:
            alpha_se, L0_se = fit.alpha_se, fit.L0_se
        out.append(DepthLawRangeFit(start, sub_depths, fit, alpha_se, L0_se, boot is not None))
    return tuple(out)
