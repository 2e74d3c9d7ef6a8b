"""The measured defaults of :func:`theory.predict_loss` for softmax attention: fits of ``R_L = L0 + c/L``."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import os
import tempfile
from typing import Sequence

import numpy as np

from numerics.io import check_output_file, json_clean, write_json
from theory.validation import check_choice

from ..criteria import standard_error
from .curves import summarise_seeds
from ..execution import Execution, as_execution
from .regime_plans import TRAINED_REGIMES, StudyScale
from .regimes import metric_arrays, train_regimes

__all__ = ["fit_inverse_depth", "make_softmax_defaults"]


def fit_inverse_depth(depths: Sequence[int], losses, ses=None) -> tuple[float, float, np.ndarray]:
    """Least-squares ``(L0, c)`` of ``R_L = L0 + c/L`` (paper eq. 63 read with fixed A, C; eq. 16 with alpha = 1).

    ``losses`` may be (seeds x depths): the seed means are fitted, with weights ``1/ses²`` if ``ses`` (one per
    depth) is given. Returns ``L0``, ``c`` and their covariance ``s² (XᵀWX)⁻¹`` (``s²`` from the weighted
    residuals) plus, with two seeds or more, the seed scatter of the means
    (:func:`~numerics.experiments.criteria.standard_error`; one curve has none).

    References
    ----------
    Paper eqs. (16), (63).

    Examples
    --------
    >>> L0, c, cov = fit_inverse_depth([1, 2, 4, 8], [3.0, 2.0, 1.5, 1.25])
    >>> round(L0, 9), round(c, 9)
    (1.0, 2.0)
    >>> [round(v, 9) for v in fit_inverse_depth([1, 2, 4], [2.5, 1.75, 1.375], ses=[0.1, 0.2, 0.3])[:2]]
    [1.0, 1.5]
    """
    depths = np.asarray(depths, dtype=np.float64)
    values = np.atleast_2d(np.asarray(losses, dtype=np.float64))
    mean = values.mean(axis=0)
    # the design of R = C + (A − C)/L in (C, A − C): columns [1, 1/L]
    X = np.column_stack([np.ones_like(depths), 1.0 / depths])
    w = np.ones_like(depths) if ses is None else 1.0 / np.asarray(ses, dtype=np.float64) ** 2
    if ses is not None:  # rows scaled by √w: ordinary least squares of the scaled rows is the weighted fit
        X, mean = X * np.sqrt(w)[:, None], mean * np.sqrt(w)
    coef, *_ = np.linalg.lstsq(X, mean, rcond=None)
    resid = mean - X @ coef
    dof = max(len(depths) - 2, 1)
    s2 = float(resid @ resid) / dof
    XtX_inv = np.linalg.inv(X.T @ X)
    cov = s2 * XtX_inv
    if values.shape[0] > 1:  # seed scatter of the means (undefined for one curve), propagated through the linear fit
        var_mean = w * standard_error(values, axis=0) ** 2
        H = XtX_inv @ X.T
        cov = cov + H @ np.diag(var_mean) @ H.T
    return float(coef[0]), float(coef[1]), cov


def make_softmax_defaults(
    out_path: str | os.PathLike,
    *,
    scale: str | StudyScale = "quick",
    spectra: Sequence[tuple] | None = None,
    regimes: Sequence[str] = ("lazy", "converged"),
    default_regime: str = "lazy",
    execution: Execution | None = None,
    command: str | None = None,
) -> dict:
    """Train (through the store) and fit ``(L0, c)`` over a spectrum grid; write the defaults JSON.

    For each size of ``scale``, spectrum (default the scale's ``all_spectra``) and regime: the
    fit of ``R_L = L0 + c/L`` (:func:`fit_inverse_depth`) and ``C_L``, ``A_L − C_L`` at the
    largest depth, in the file :func:`theory.predict_loss` reads
    (:data:`theory.softmax_defaults.DEFAULTS_FORMAT`; ``default_regime`` is the one it reads
    with ``regime='calibrated'``). The execution's ``store_dir`` (default: a temporary
    directory) is a cache, not provenance; progress shows on a terminal unless told otherwise.
    ``command`` is recorded (default: the equivalent ``idepth study defaults`` command).
    Returns the data written.

    References
    ----------
    Paper eqs. (16), (61)-(63).

    Examples
    --------
    >>> import tempfile, pathlib  # doctest: +SKIP
    >>> data = make_softmax_defaults(pathlib.Path(tempfile.mkdtemp()) / "d.json", scale="smoke",
    ...                              regimes=("converged",), default_regime="converged",
    ...                              execution=Execution(workers=1))  # doctest: +SKIP
    """
    import sys

    from theory import __version__

    s = StudyScale.of(scale)
    regimes = tuple(check_choice("regime", r, TRAINED_REGIMES) for r in regimes)
    if default_regime not in regimes:
        raise ValueError(f"default_regime must be one of the regimes {regimes}; got {default_regime!r}")
    spectra = tuple((float(a), float(b)) for a, b in (s.all_spectra if spectra is None else spectra))
    out_path = check_output_file(out_path, "out_path", suffixes=("json",))
    execution = as_execution(execution)
    if execution.progress is None:
        execution = dataclasses.replace(execution, progress=sys.stderr.isatty())
    plan = dataclasses.replace(s, spectra=spectra, extra_spectra=(), regimes=regimes)
    with contextlib.ExitStack() as stack:  # without a store: a temporary one, removed afterwards
        if execution.store_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="idepth-defaults-store-"))
            execution = dataclasses.replace(execution, store_dir=tmp)
        _, measured, _, _ = train_regimes(plan, execution.store_dir, execution)

    entries = []
    for (d, P, N) in s.sizes:
        for (a, b) in spectra:
            for regime in regimes:
                depths = s.depths_of(regime)
                R, A, C = metric_arrays([[measured[(regime, (d, P, N), (a, b), L, seed)] for L in depths]
                                          for seed in s.seeds])
                L0, c, cov = fit_inverse_depth(depths, R)
                point = summarise_seeds(regime, (d, P, N), (a, b), s.k, depths, R, A, C)
                entries.append(json_clean({
                    "a": a, "b": b, "d": d, "N": N, "P": P, "k": s.k, "regime": regime, "L0": L0, "c": c,
                    "covariance": cov.tolist(), "depths": list(depths), "R_mean": point.R.mean.tolist(),
                    "R_se": point.R.se.tolist(), "C_at_Lmax": float(point.C.mean[-1]), "A_minus_C_at_Lmax": float(point.gap.mean[-1]),
                    "alpha_free_fit": point.alpha, "alpha_interval": list(point.alpha_interval), "verdict": point.verdict,
                }))
    if command is None:
        spectra_arg = ";".join(f"{a:g},{b:g}" for a, b in spectra)
        command = (f"idepth study defaults --scale {s.name} --spectra '{spectra_arg}' --regimes {','.join(regimes)} "
                   f"--default-regime {default_regime} --out {out_path}")
    data = {
        "format": "idepth-softmax-defaults/1",
        "default_regime": default_regime,
        "provenance": {
            "package_version": __version__,
            "date": _dt.date.today().isoformat(),
            "command": command,
            "model": "nonlinear (eqs. 9-10, M(0)), task 'difficult' (eq. 6)",
            "fit": "R_L = L0 + c/L by least squares on the seed means (eq. 16 with alpha = 1; eq. 63 with fixed A, C); "
                   "covariance from residuals plus seed scatter",
            "sizes": [list(size) for size in s.sizes],
            "spectra": [list(sp) for sp in spectra],
            "seeds": list(s.seeds),
            "depths": {r: list(s.depths_of(r)) for r in regimes},
            "regimes": {r: s.describe(r) for r in regimes},
            "c_lambda": 1.0,
            "c_omega": 1.0,
        },
        "entries": entries,
    }
    write_json(out_path, data)
    return data
