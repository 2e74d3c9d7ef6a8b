"""What the paper predicts: spectra, linear-attention laws, the top-k floor,
the ensemble (CLT) decomposition, depth-law fitting and :func:`predict_loss`.

``theory`` never imports ``numerics``. Formulas are written once in sympy
(see :mod:`theory.symbols`) and evaluated numerically from that source.
"""

from .spectra import PowerLawSpectrum, Spectrum, as_spectrum, zeta

__all__ = ["PowerLawSpectrum", "Spectrum", "as_spectrum", "zeta"]

__version__ = "0.1.0"
