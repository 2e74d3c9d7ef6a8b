"""Measured defaults of the softmax/difficult law ``R_L = L0 + c/L`` (data, not theory).

The paper gives no closed form for the nonlinear plateau of the top-k task: the
law ``R_L = C_L + (A_L − C_L)/L`` (paper eq. 63) is an identity, and its ``1/L``
reading needs the plateau ``C_∞`` and the disagreement ``Δ_∞`` from a
measurement. This module reads the measurements this package ships in
``theory/data/softmax_defaults.json``: for each size ``(d, N, P, k)``, each
training regime and each spectrum ``(a, b)`` of a grid, the fitted
``L0`` (``= C_∞``) and ``c`` (``= Δ_∞``) of ``R_L = L0 + c/L`` (paper eq. 16 with
``alpha = 1``), with their covariance and the provenance of the numbers
(package version, sizes, training regime, seeds, date, and the command that
regenerates the file: ``idepth study defaults``).

:func:`softmax_default` returns the entry for a spectrum, interpolating
linearly over ``(a, b)`` (piecewise linear on a Delaunay triangulation of the grid
points; along the line when the grid is one-dimensional) and refusing, with a
ValueError naming what the file has, any size or spectrum outside the grid. It
is what :func:`theory.predict_loss` uses for ``attention='softmax',
task='difficult'`` with ``calibration='lazy'`` (a regime name of the file); its default,
``regime='expressible'``, is ``U_L`` of :mod:`theory.expressible`.

``theory`` never imports ``numerics``: the file is produced by
:func:`numerics.experiments.study.make_softmax_defaults` and only read here.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Mapping

import numpy as np

from .validation import check_positive_int
from .spectra import as_spectrum

__all__ = [
    "DEFAULTS_FORMAT",
    "SoftmaxDefault",
    "SoftmaxDefaults",
    "load_softmax_defaults",
    "softmax_default",
]

#: format tag of the JSON file
DEFAULTS_FORMAT = "idepth-softmax-defaults/1"
_PACKAGED = "data/softmax_defaults.json"
#: two (a, b) closer than this are the same grid point
_GRID_ATOL = 1e-12


@dataclass(frozen=True)
class SoftmaxDefault:
    """One measured (or interpolated) calibration of ``R_L = L0 + c/L`` (paper eqs. 16, 63).

    Attributes
    ----------
    a, b : float
        Spectrum exponents (eq. 2).
    d, N, P, k : int
        Input dimension, hidden width, context length, top-k.
    regime : str
        Training regime of the measurement (see the file's provenance).
    L0, c : float
        Plateau ``C_∞`` and coefficient ``Δ_∞`` of ``R_L = L0 + c/L``.
    covariance : tuple or None
        2 x 2 covariance of ``(L0, c)``.
    interpolated : bool
        True when ``(a, b)`` is not a grid point.
    source : str
        Where the numbers come from (file, regime, grid points used).

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> entry = SoftmaxDefault(0.0, 0.0, 16, 16, 64, 2, "lazy", 3.0, 1.5)
    >>> entry.L0 + entry.c / 2
    3.75
    """

    a: float
    b: float
    d: int
    N: int
    P: int
    k: int
    regime: str
    L0: float
    c: float
    covariance: tuple | None = None
    interpolated: bool = False
    source: str = ""
    extra: Mapping = field(default_factory=dict, compare=False, repr=False)

    @property
    def C_inf(self) -> float:
        """``C_∞ = L0`` (the shared error as L → ∞, eq. 63)."""
        return self.L0

    @property
    def Delta_inf(self) -> float:
        """``Δ_∞ = c`` (the disagreement ``A − C`` as L → ∞, eq. 63)."""
        return self.c


@dataclass(frozen=True)
class SoftmaxDefaults:
    """The contents of a defaults file: entries and provenance.

    Attributes
    ----------
    entries : tuple of SoftmaxDefault
    provenance : Mapping
        ``package_version``, ``date``, ``command``, ``sizes``, ``regimes``, ``seeds``, ...
    default_regime : str
        The regime used when none is asked for.
    path : str
        Where the file was read from.

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> defaults = load_softmax_defaults()
    >>> defaults.default_regime in defaults.regimes
    True
    """

    entries: tuple
    provenance: Mapping
    default_regime: str
    path: str = ""

    @property
    def regimes(self) -> tuple:
        """Regimes present in the file."""
        return tuple(sorted({e.regime for e in self.entries}))

    @property
    def sizes(self) -> tuple:
        """The ``(d, N, P, k)`` sizes present in the file."""
        return tuple(sorted({(e.d, e.N, e.P, e.k) for e in self.entries}))

    def describe_sizes(self) -> str:
        """The sizes present in the file, as text (the error messages name them).

        References
        ----------
        Paper eqs. (16), (63): the law ``R_L = L0 + c/L`` whose ``(L0, c)`` were measured at these sizes.

        Examples
        --------
        >>> load_softmax_defaults().describe_sizes().startswith("(d=")
        True
        """
        return ", ".join(f"(d={d}, N={N}, P={P}, k={k})" for d, N, P, k in self.sizes)

    def grid(self, *, d: int, P: int, k: int, regime: str | None = None) -> tuple:
        """The grid entries of one size and regime (``N`` is the one the file has for ``d``).

        Raises
        ------
        ValueError
            If the file has no entry for this size or regime (naming the sizes it has).

        Examples
        --------
        >>> defaults = load_softmax_defaults()
        >>> d, N, P, k = defaults.sizes[0]
        >>> len(defaults.grid(d=d, P=P, k=k)) >= 1
        True
        """
        regime = self.default_regime if regime is None else regime
        if regime not in self.regimes:
            raise ValueError(f"regime must be one of {', '.join(map(repr, self.regimes))} (in {self.path}); got {regime!r}")
        rows = tuple(e for e in self.entries if (e.d, e.P, e.k, e.regime) == (d, P, k, regime))
        if not rows:
            raise ValueError(
                f"no measured softmax defaults for d={d}, P={P}, k={k} (regime {regime!r}); the defaults file "
                f"{self.path} has {self.describe_sizes()}: pass a calibration for other sizes"
            )
        widths = sorted({e.N for e in rows})
        if len(widths) > 1:  # the file is written with one N per (d, P, k); refuse to guess otherwise
            raise ValueError(f"the defaults file has several widths N={widths} for d={d}, P={P}, k={k}; pass a calibration")
        return rows

    def lookup(self, a: float, b: float, *, d: int, P: int, k: int, regime: str | None = None) -> SoftmaxDefault:
        """The entry at spectrum ``(a, b)``: a grid point verbatim, else linear interpolation inside the grid.

        Parameters
        ----------
        a, b : float
            Spectrum exponents (eq. 2).
        d, P, k : int
            Sizes; must be in :attr:`sizes`.
        regime : str, optional
            Default :attr:`default_regime`.

        Raises
        ------
        ValueError
            Size or regime not in the file, or ``(a, b)`` outside the grid (the message
            names the grid).

        References
        ----------
        Paper eqs. (16), (63).

        Examples
        --------
        >>> defaults = load_softmax_defaults()
        >>> first = defaults.entries[0]
        >>> defaults.lookup(first.a, first.b, d=first.d, P=first.P, k=first.k, regime=first.regime).L0 == first.L0
        True
        """
        rows = self.grid(d=d, P=P, k=k, regime=regime)
        point = np.array([float(a), float(b)])
        coords = np.array([[e.a, e.b] for e in rows])
        exact = np.flatnonzero(np.all(np.abs(coords - point) <= _GRID_ATOL, axis=1))
        if exact.size:
            return rows[int(exact[0])]
        weights = _linear_weights(coords, point)
        if weights is None:
            grid = ", ".join(f"({e.a:g}, {e.b:g})" for e in rows)
            raise ValueError(
                f"spectrum (a={a:g}, b={b:g}) is outside the grid of measured softmax defaults for d={d}, P={P}, k={k} "
                f"(regime {rows[0].regime!r}: (a, b) in {{{grid}}}); interpolation is linear inside the grid only — "
                "pass a calibration"
            )
        used = np.flatnonzero(weights > 0)
        L0 = float(sum(weights[i] * rows[i].L0 for i in used))
        c = float(sum(weights[i] * rows[i].c for i in used))
        cov = None
        if all(rows[i].covariance is not None for i in used):  # independent measurements: Σ w_i² Cov_i
            cov = sum(weights[i] ** 2 * np.asarray(rows[i].covariance) for i in used)
            cov = tuple(map(tuple, np.asarray(cov).tolist()))
        corners = ", ".join(f"({rows[i].a:g}, {rows[i].b:g})" for i in used)
        return SoftmaxDefault(
            a=float(a), b=float(b), d=rows[0].d, N=rows[0].N, P=rows[0].P, k=rows[0].k, regime=rows[0].regime,
            L0=L0, c=c, covariance=cov, interpolated=True,
            source=f"{self.path}: linear interpolation between grid points {corners}",
        )


def _linear_weights(coords: np.ndarray, point: np.ndarray) -> np.ndarray | None:
    """Barycentric weights of ``point`` in a triangulation of ``coords`` (None if outside the grid)."""
    n = coords.shape[0]
    if n == 1:
        return None
    centred = coords - coords.mean(axis=0)
    rank = np.linalg.matrix_rank(centred, tol=_GRID_ATOL)
    if rank == 0:
        return None
    if rank == 1:  # grid along a line: 1-d interpolation, refuse off the line
        direction = centred[np.argmax(np.linalg.norm(centred, axis=1))]
        direction = direction / np.linalg.norm(direction)
        origin = coords.mean(axis=0)
        offset = point - origin
        if abs(offset[0] * direction[1] - offset[1] * direction[0]) > _GRID_ATOL:
            return None
        t = coords @ direction
        tp = float(point @ direction)
        order = np.argsort(t)
        position = np.searchsorted(t[order], tp)
        if position == 0 or position == n:
            return None
        lo, hi = order[position - 1], order[position]
        weights = np.zeros(n)
        frac = (tp - t[lo]) / (t[hi] - t[lo])
        weights[lo], weights[hi] = 1.0 - frac, frac
        return weights
    from scipy.spatial import Delaunay

    tri = Delaunay(coords)
    simplex = int(tri.find_simplex(point, tol=_GRID_ATOL))
    if simplex < 0:
        return None
    transform = tri.transform[simplex]
    bary = transform[:2] @ (point - transform[2])
    bary = np.append(bary, 1.0 - bary.sum())
    weights = np.zeros(n)
    weights[tri.simplices[simplex]] = np.clip(bary, 0.0, 1.0)
    return weights / weights.sum()


def _entry(raw: Mapping, path: str) -> SoftmaxDefault:
    try:
        cov = raw.get("covariance")
        return SoftmaxDefault(
            a=float(raw["a"]), b=float(raw["b"]), d=int(raw["d"]), N=int(raw["N"]), P=int(raw["P"]), k=int(raw["k"]),
            regime=str(raw["regime"]), L0=float(raw["L0"]), c=float(raw["c"]),
            covariance=None if cov is None else tuple(map(tuple, cov)),
            source=f"{path}: measured at (a={float(raw['a']):g}, b={float(raw['b']):g}), regime {raw['regime']!r}",
            extra={key: value for key, value in raw.items() if key not in {"a", "b", "d", "N", "P", "k", "regime", "L0", "c", "covariance"}},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"softmax defaults file {path} has a malformed entry {dict(raw)!r}: {exc}") from None


def _parse(data: Mapping, path: str) -> SoftmaxDefaults:
    if not isinstance(data, Mapping) or data.get("format") != DEFAULTS_FORMAT:
        raise ValueError(f"{path} is not an {DEFAULTS_FORMAT} file")
    entries = tuple(_entry(raw, path) for raw in data.get("entries", ()))
    if not entries:
        raise ValueError(f"softmax defaults file {path} has no entries")
    for e in entries:
        if not (math.isfinite(e.L0) and math.isfinite(e.c)):
            raise ValueError(f"softmax defaults file {path}: non-finite L0/c at (a={e.a:g}, b={e.b:g})")
    regime = str(data.get("default_regime", entries[0].regime))
    return SoftmaxDefaults(entries=entries, provenance=dict(data.get("provenance", {})), default_regime=regime, path=path)


@lru_cache(maxsize=1)
def _packaged() -> SoftmaxDefaults:
    resource = resources.files("theory").joinpath(_PACKAGED)
    with resource.open("r", encoding="utf-8") as fh:
        return _parse(json.load(fh), f"theory/{_PACKAGED}")


def load_softmax_defaults(path: str | Path | None = None) -> SoftmaxDefaults:
    """Read a softmax-defaults file (default: the one shipped in ``theory/data``).

    Parameters
    ----------
    path : str or Path, optional
        A file written by :func:`numerics.experiments.study.make_softmax_defaults`.

    Returns
    -------
    SoftmaxDefaults

    Raises
    ------
    FileNotFoundError, ValueError
        Missing file, wrong format or malformed entries.

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> defaults = load_softmax_defaults()
    >>> defaults.provenance["command"].startswith("idepth study defaults")
    True
    """
    if path is None:
        return _packaged()
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"softmax defaults file {str(path)!r} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"softmax defaults file {str(path)!r} is not valid JSON: {exc}") from None
    return _parse(data, str(path))


def softmax_default(spectrum, P: int, k: int = 2, *, regime: str | None = None, defaults: SoftmaxDefaults | None = None) -> SoftmaxDefault:
    """The measured ``(L0, c)`` of ``R_L = L0 + c/L`` for a power-law spectrum at sizes in the defaults file.

    Parameters
    ----------
    spectrum : theory.PowerLawSpectrum
        Gives ``(a, b)`` and ``d`` (``c_λ = c_ω = 1`` as in the measurements).
    P, k : int
        Context length and top-k.
    regime : str, optional
        Training regime (default: the file's ``default_regime``).
    defaults : SoftmaxDefaults, optional
        Default: the packaged file.

    Returns
    -------
    SoftmaxDefault

    Raises
    ------
    ValueError
        A general spectrum, other prefactors, or sizes/spectra outside the grid; or a regime whose measurements
        at this spectrum are recorded as not following ``L0 + c/L`` (their verdict and free-exponent α are named).

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> from theory import PowerLawSpectrum
    >>> defaults = load_softmax_defaults()
    >>> e = defaults.entries[0]
    >>> softmax_default(PowerLawSpectrum(e.a, e.b, e.d), e.P, e.k, regime=e.regime).c == e.c
    True
    """
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_positive_int("k", k)
    defaults = load_softmax_defaults() if defaults is None else defaults
    if not hasattr(spectrum, "a"):
        raise ValueError(
            "the measured softmax defaults are for the paper's power-law spectra (eq. 2); "
            f"got a general spectrum {spectrum!r}: pass a calibration"
        )
    if spectrum.c_lambda != 1.0 or spectrum.c_omega != 1.0:
        raise ValueError(
            "the measured softmax defaults are for c_lambda = c_omega = 1 (eq. 2 as the paper uses it); "
            f"got c_lambda={spectrum.c_lambda:g}, c_omega={spectrum.c_omega:g}: pass a calibration"
        )
    entry = defaults.lookup(spectrum.a, spectrum.b, d=spectrum.d, P=P, k=k, regime=regime)
    _check_law_fits(defaults, entry, spectrum, P, k)
    return entry


#: the verdict the measurements record for a spectrum whose loss follows ``L0 + c/L`` (``numerics`` names it)
LAW_FITS = "inverse-depth"


def _check_law_fits(defaults: SoftmaxDefaults, entry: SoftmaxDefault, spectrum, P: int, k: int) -> None:
    """Refuse an entry (or an interpolation between entries) measured as not following ``L0 + c/L``.

    The file records, per grid point, the study's verdict on the free-exponent fit (``verdict``,
    ``alpha_free_fit``, ``alpha_interval``); a prediction ``L0 + c/L`` read from a point whose verdict is not
    :data:`LAW_FITS` would state a law the measurement did not find. Points without a recorded verdict pass.
    """
    rows = defaults.grid(d=spectrum.d, P=P, k=k, regime=entry.regime)
    if entry.interpolated:
        coords = np.array([[e.a, e.b] for e in rows])
        weights = _linear_weights(coords, np.array([entry.a, entry.b]))
        used = [rows[i] for i in np.flatnonzero(weights > 0)] if weights is not None else list(rows)
    else:
        used = [entry]
    failing = [e for e in used if e.extra.get("verdict", LAW_FITS) != LAW_FITS]
    if failing:
        def describe(e: SoftmaxDefault) -> str:
            alpha, interval = e.extra.get("alpha_free_fit"), e.extra.get("alpha_interval")
            fit = f"measured α = {alpha:.2f}" if isinstance(alpha, (int, float)) else "no α recorded"
            if isinstance(interval, (list, tuple)) and len(interval) == 2:
                fit += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
            return f"(a, b) = ({e.a:g}, {e.b:g}): {e.extra['verdict']!r}, {fit}"

        raise ValueError(
            f"regime {entry.regime!r} is not described by L0 + c/L at this spectrum: the measurements it would be read "
            f"from are recorded as not following the law ({'; '.join(map(describe, failing))}; regimes whose law fits: "
            f"{', '.join(map(repr, _fitting_regimes(defaults))) or 'none'}); use regime='expressible' or a calibration "
            "of your own")


def _fitting_regimes(defaults: SoftmaxDefaults) -> tuple:
    return tuple(r for r in defaults.regimes
                 if all(e.extra.get("verdict", LAW_FITS) == LAW_FITS for e in defaults.entries if e.regime == r))
