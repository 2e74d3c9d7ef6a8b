"""Shared sympy symbols: the single vocabulary for every symbolic formula.

Each formula of the paper is written once, as a sympy expression, in the
module that owns the concept (``theory/spectra.py`` owns eq. (34),
``theory/polynomial_laws.py`` owns eqs. (33)-(40), ...). Numeric code is
obtained from that expression with :func:`sympy.lambdify`, and the
``derivations`` package renders the very same objects into the docs.
This module only declares the symbols so that all those expressions
share them.
"""

from __future__ import annotations

import sympy as sp

__all__ = [
    "a", "b", "c_lambda", "c_omega", "zeta", "L", "lam", "lam1", "gamma", "n", "k",
    "beta_exp", "C", "tau", "tau0", "L0", "c_coef", "alpha", "A", "C_shared",
]

#: input-spectrum exponent a of eq. (2)
a = sp.Symbol("a", positive=True)
#: teacher-spectrum exponent b of eq. (2)
b = sp.Symbol("b", nonnegative=True)
#: prefactors c_λ, c_ω of eq. (2)
c_lambda = sp.Symbol("c_lambda", positive=True)
c_omega = sp.Symbol("c_omega", positive=True)
#: the exponent ζ = (a + b - 1)/a of eq. (34), kept as its own symbol where a law is stated in ζ
zeta = sp.Symbol("zeta", positive=True)
#: depth L (number of layers)
L = sp.Symbol("L", positive=True, integer=True)
#: an eigenvalue λ and the top eigenvalue λ_1
lam = sp.Symbol("lambda", nonnegative=True)
lam1 = sp.Symbol("lambda_1", positive=True)
#: effective step γ = κ v of eq. (27)
gamma = sp.Symbol("gamma", positive=True)
#: polynomial index n and mode index k
n = sp.Symbol("n", nonnegative=True, integer=True)
k = sp.Symbol("k", positive=True, integer=True)
#: loss-weighted time-scale density exponent β and prefactor C of eq. (55)
beta_exp = sp.Symbol("beta", positive=True)
C = sp.Symbol("C", positive=True)
tau = sp.Symbol("tau", positive=True)
tau0 = sp.Symbol("tau_0", positive=True)
#: depth law of eq. (16): R_L = L0 + c L^(-alpha)
L0 = sp.Symbol("L_0", nonnegative=True)
c_coef = sp.Symbol("c", positive=True)
alpha = sp.Symbol("alpha", positive=True)
#: ensemble decomposition of eq. (63): A_L (mean single-layer error), C_L (shared error)
A = sp.Symbol("A_L", real=True)
C_shared = sp.Symbol("C_L", real=True)
