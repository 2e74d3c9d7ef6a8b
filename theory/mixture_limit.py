"""``R*_∞``: the infinite-mixture limit of the softmax model, by fully corrective Frank–Wolfe over forms.

Stub: the public names below are stable (helper 44b consumes them); the computation follows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

import numpy as np

from theory.spectra import as_spectrum
from theory.validation import check_positive_int, check_top_k

__all__ = ["InfiniteMixture", "infinite_mixture", "shipped_infinite_mixture", "data_file_name", "SHIPPED_DIR"]

#: where the shipped results live, inside the ``theory`` package (written by ``idepth bracket compute``)
SHIPPED_DIR = ("data", "mixture_limit")


def data_file_name(a: float, b: float, d: int, P: int, k: int) -> str:
    """The shipped file of one setting: ``a{a}_b{b}_d{d}_P{P}_k{k}.json``.

    Examples
    --------
    >>> data_file_name(0, 0.25, 16, 64, 2)
    'a0_b0.25_d16_P64_k2.json'
    """
    return f"a{a:g}_b{b:g}_d{d}_P{P}_k{k}.json"


@dataclass(frozen=True)
class InfiniteMixture:
    """The fitted measure of forms ``μ = Σ_j w_j δ_{D_j}`` and gain ``g`` bracketing ``R*_∞``."""

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
    final: bool = False


def infinite_mixture(spectrum, P: int, k: int = 2, **options) -> InfiniteMixture:
    """Not yet implemented (stub)."""
    raise NotImplementedError("infinite_mixture is being written (issue 44, helper 44a)")


def shipped_infinite_mixture(spectrum, P: int, k: int = 2) -> "InfiniteMixture | None":
    """The shipped final ``R*_∞`` bracket of a power-law spectrum at ``(d, P, k)``, or None if there is none."""
    spectrum = as_spectrum(spectrum)
    P = check_positive_int("P", P)
    k = check_top_k(k, P)
    if not (hasattr(spectrum, "a") and spectrum.c_lambda == 1.0 and spectrum.c_omega == 1.0):
        return None
    entry = resources.files("theory").joinpath(*SHIPPED_DIR, data_file_name(spectrum.a, spectrum.b, spectrum.d, P, k))
    if not entry.is_file():
        return None
    data = json.loads(entry.read_text(encoding="utf-8"))
    if not data.get("final"):
        raise ValueError(f"the shipped file {entry} is not final (an interrupted run); rerun idepth bracket compute")
    return None
