"""What the paper predicts: spectra, linear-attention laws, the top-k floor,
the ensemble (CLT) decomposition, depth-law fitting and :func:`predict_loss`.

``theory`` never imports ``numerics``. Formulas are written once in sympy
(see :mod:`theory.symbols`) and evaluated numerically from that source.
"""

from ._version import __version__  # noqa: F401 (re-exported)

from .decomposition import (
    Decomposition,
    ExchangeablePrediction,
    decompose,
    exchangeable_loss,
    predict_exchangeable_loss,
    predict_from_decomposition,
)
from .floor import (
    FloorEstimate,
    gamma_top_k,
    linear_floor_monte_carlo,
    linear_floor_semi_analytic,
    mean_direction_coefficient,
    top_k_moments,
)
from .fitting import DepthLawFit, GainFit, depth_law, fit_depth_law, fit_gain_law, fit_gap_law
from .linear import covariance_polynomial, effective_qk, population_loss, readout_coefficients
from .modewise import modewise_asymptote, modewise_integral, modewise_sum
from .polynomial_laws import (
    ValidityWindow,
    constrained_asymptote,
    constrained_exponent,
    constrained_loss,
    free_continuum_asymptote,
    free_continuum_loss,
    free_exponent,
    free_loss,
    validity_window,
)
from .predict import LossPrediction, SoftmaxCalibration, predict_loss
from .spectra import PowerLawSpectrum, Spectrum, as_spectrum, zeta

__all__ = [
    "Decomposition", "DepthLawFit", "FloorEstimate", "gamma_top_k", "linear_floor_monte_carlo",
    "linear_floor_semi_analytic", "mean_direction_coefficient", "top_k_moments", "ExchangeablePrediction", "LossPrediction", "PowerLawSpectrum",
    "SoftmaxCalibration", "Spectrum", "ValidityWindow", "as_spectrum", "constrained_asymptote",
    "constrained_exponent", "constrained_loss", "covariance_polynomial", "decompose", "depth_law",
    "effective_qk", "exchangeable_loss", "fit_depth_law", "fit_gain_law", "fit_gap_law", "GainFit", "free_continuum_asymptote",
    "free_continuum_loss", "free_exponent", "free_loss", "modewise_asymptote", "modewise_integral",
    "modewise_sum", "population_loss", "predict_exchangeable_loss", "predict_from_decomposition",
    "predict_loss", "readout_coefficients", "validity_window", "zeta",
]
