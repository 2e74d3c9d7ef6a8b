"""The result of :mod:`theory.mixture_limit`: the fitted measure of forms bracketing ``R*_∞``, and its file.

:class:`InfiniteMixture` holds the measure, its gain, the two estimates of the bracket and what they were
measured with; :func:`load_infinite_mixture` reads a result file and refuses one that is not final (an
interrupted run). Split from :mod:`theory.mixture_limit` (which computes and ships the results) so that
reading a shipped result does not need the Frank–Wolfe machinery.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from theory.head_kernel import KernelSpectrum

__all__ = ["InfiniteMixture", "load_infinite_mixture"]


@dataclass(frozen=True)
class InfiniteMixture:
    """The fitted measure of forms ``μ = Σ_j w_j δ_{D_j}`` and gain ``g`` bracketing ``R*_∞``.

    Attributes
    ----------
    forms : ndarray, shape (m, d, d)
        The atoms ``D_j`` (general, not only symmetric forms).
    weights : ndarray, shape (m,)
        ``w_j > 0``, summing to 1.
    gain : float
        ``g``.
    upper, upper_se : float
        The mixture's loss on the independent report set and its SE: an estimate of a value ``≥ R*_∞``.
    lower : float
        ``fit_loss − gap``: below the fit-set optimum over measures of mass ``g`` up to the oracle's
        reach; the in-sample optimum itself is biased low (module docstring).
    fit_loss : float
        The mixture's loss on the fit set.
    gap : float
        The final Frank–Wolfe duality gap ``2 g δ``: the largest over the last iterate's oracle call and
        the further calls of :func:`confirm_gap` (when run; ``setting["gap_checks"]``).
    alpha_predicted : float
        The depth exponent the kernel spectrum predicts for ``R*_L − R*_∞`` (:class:`KernelSpectrum`).
    alpha_interval : tuple of float
    kernel : KernelSpectrum or None
    herding : dict
        ``{"depths": [...], "excess": [...]}``: ``g²`` times the squared quadrature error of equal-weight
        kernel herding of ``μ`` at each depth (report set), the balanced-points excess step (iii) names.
    fit_size : dict
        The final atoms' weights and gain re-fitted on the first ``n`` fit contexts, for each ``n``:
        in-sample and report-set loss (:func:`weights_fit_size`; the atoms come from fresh search pools,
        so the weights are what sees the fit set).
    versus_expressible : dict
        The report-set loss of the shipped ``U_L`` model at its deepest depth and the paired difference
        ``upper − U_L`` with its SE (empty when no ``U_L`` is shipped).
    history : tuple of dict
        Per iteration: ``iteration``, ``atoms``, ``fit_loss``, ``report_loss``, ``gap``, ``gain``, ``seconds``.
    setting : dict
        ``a``, ``b``, ``d``, ``P``, ``k``, the set sizes, the seeds and the oracle's options.
    cpu_seconds : float
        Process CPU time of the computation (summed over resumed parts).
    final : bool
        True only for a finished run.

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> m = InfiniteMixture(forms=np.eye(2)[None], weights=np.ones(1), gain=1.0, upper=1.0, upper_se=0.1,
    ...                     lower=0.9, fit_loss=0.95, gap=0.05, alpha_predicted=1.0, alpha_interval=(1.0, 1.0))
    >>> InfiniteMixture.from_dict(m.to_dict()).gap
    0.05
    """

    forms: np.ndarray
    weights: np.ndarray
    gain: float
    upper: float
    upper_se: float
    lower: float
    fit_loss: float
    gap: float
    alpha_predicted: float
    alpha_interval: tuple
    kernel: KernelSpectrum | None = None
    herding: dict = field(default_factory=dict)
    versus_expressible: dict = field(default_factory=dict)
    fit_size: dict = field(default_factory=dict)
    history: tuple = ()
    setting: dict = field(default_factory=dict)
    cpu_seconds: float = 0.0
    final: bool = False

    @property
    def atoms(self) -> int:
        """Number of atoms ``m``."""
        return int(self.weights.size)

    @property
    def crossover_depth(self) -> float:
        """The kernel's effective rank ``(Σλ)²/Σλ²``: beyond about this depth balanced points reach ``L^{-2}``."""
        return float("nan") if self.kernel is None else float(self.kernel.effective_rank)

    def to_dict(self) -> dict:
        """A JSON-able dict (arrays as nested lists)."""
        keys = ("gain", "upper", "upper_se", "lower", "fit_loss", "gap", "alpha_predicted", "herding",
                "versus_expressible", "fit_size", "setting", "cpu_seconds", "final")
        out = {key: getattr(self, key) for key in keys}
        out.update(forms=np.asarray(self.forms).tolist(), weights=np.asarray(self.weights).tolist(),
                   alpha_interval=list(self.alpha_interval), history=[dict(h) for h in self.history],
                   kernel=None if self.kernel is None else
                   {**asdict(self.kernel), "eigenvalues": np.asarray(self.kernel.eigenvalues).tolist(),
                    "decay_interval": list(self.kernel.decay_interval), "fit_range": list(self.kernel.fit_range),
                    "alpha_interval": list(self.kernel.alpha_interval)})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "InfiniteMixture":
        """Rebuild from :meth:`to_dict` output."""
        data = dict(data)
        kernel = data.pop("kernel", None)
        if kernel is not None:
            kernel = KernelSpectrum(**{**kernel, "eigenvalues": np.asarray(kernel["eigenvalues"]),
                                       "decay_interval": tuple(kernel["decay_interval"]),
                                       "fit_range": tuple(kernel["fit_range"]),
                                       "alpha_interval": tuple(kernel["alpha_interval"])})
        return cls(**{**data, "forms": np.asarray(data["forms"], dtype=np.float64),
                      "weights": np.asarray(data["weights"], dtype=np.float64),
                      "alpha_interval": tuple(data["alpha_interval"]), "history": tuple(data.get("history", ())),
                      "kernel": kernel})


def load_infinite_mixture(path) -> InfiniteMixture:
    """Read a result file written by :func:`theory.mixture_limit.infinite_mixture`; a file that is not final is refused.

    References
    ----------
    Paper eqs. (59)-(63); derivation page ``bracket``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "x.json"; _ = p.write_text('{"final": false}')
    ...     load_infinite_mixture(p)
    Traceback (most recent call last):
    ...
    ValueError: path x.json is not a final result (an unfinished or interrupted run); rerun idepth bracket compute
    """
    data = json.loads(Path(str(path)).read_text(encoding="utf-8")) if not hasattr(path, "read_text") \
        else json.loads(path.read_text(encoding="utf-8"))
    if not data.get("final"):
        raise ValueError(f"path {Path(str(path)).name} is not a final result (an unfinished or interrupted run); "
                         "rerun idepth bracket compute")
    return InfiniteMixture.from_dict(data)
