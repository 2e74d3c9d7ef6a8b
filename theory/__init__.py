"""What the paper predicts: spectra, linear-attention laws, the top-k floor,
the ensemble (CLT) decomposition, depth-law fitting and :func:`predict_loss`.

``theory`` never imports ``numerics``. Formulas are written once in sympy
(see :mod:`theory.symbols`) and evaluated numerically from that source.

The names below are imported on first use (PEP 562), so that importing a light
submodule (``theory.validation``, ``theory._version``) -- as ``idepth --help``
does -- does not import sympy and scipy.
"""

from __future__ import annotations

from ._version import __version__  # noqa: F401 (re-exported)

#: public name -> the submodule that defines it
_EXPORTS = {
    **dict.fromkeys(("Decomposition", "ExchangeablePrediction", "decompose", "exchangeable_loss",
                     "predict_exchangeable_loss", "predict_from_decomposition"), "decomposition"),
    **dict.fromkeys(("FloorEstimate", "gamma_top_k", "linear_floor_monte_carlo", "linear_floor_semi_analytic",
                     "mean_direction_coefficient", "top_k_moments"), "floor"),
    **dict.fromkeys(("DepthLawFit", "GainFit", "depth_law", "fit_depth_law", "fit_gain_law", "fit_gap_law"),
                    "fitting"),
    **dict.fromkeys(("covariance_polynomial", "effective_qk", "population_loss", "readout_coefficients"), "linear"),
    **dict.fromkeys(("modewise_asymptote", "modewise_integral", "modewise_sum"), "modewise"),
    **dict.fromkeys(("ValidityWindow", "constrained_asymptote", "constrained_exponent", "constrained_loss",
                     "free_continuum_asymptote", "free_continuum_loss", "free_exponent", "free_loss",
                     "validity_window"), "polynomial_laws"),
    **dict.fromkeys(("LossPrediction", "SoftmaxCalibration", "predict_loss"), "predict"),
    **dict.fromkeys(("PowerLawSpectrum", "Spectrum", "as_spectrum", "zeta"), "spectra"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'theory' has no attribute {name!r}")
    # only the submodule that owns the name: ``from theory import predict_loss`` does not pay for sympy's
    # symbolic layers (fitting, decomposition) until they are used
    import importlib

    owner = importlib.import_module(f".{module}", __name__)
    for public, home in _EXPORTS.items():
        if home == module:
            globals()[public] = getattr(owner, public)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
