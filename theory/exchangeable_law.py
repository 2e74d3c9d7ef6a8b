"""The exchangeable-head depth law, written once in sympy (paper eqs. 60-63 read for i.i.d. heads).

Heads ``u_1, …, u_L`` drawn i.i.d. from a law ``μ`` have, given a context, mean ``m`` and
variance ``Var``; with ``s = E y*²``, ``h = E m y*``, ``q = E m²`` and ``v = E Var``:

* the average ``ū = (1/L) Σ u_ℓ`` has ``E ū² = q + v/L`` (:data:`AVERAGE_SECOND_MOMENT`);
* with a fixed gain ``g``: ``E R_L = s − 2gh + g²(q + v/L)`` (:data:`FIXED_GAIN_LOSS`), which is
  paper eq. (63) with ``C = s − 2gh + g²q`` (:data:`FIXED_GAIN_SHARED`) and ``A − C = g² v``;
* with the gain re-fitted at each depth: ``R_L = s − h²/(q + v/L)`` (:data:`REFITTED_LOSS`)
  ``= R_∞ + c/(L + L₀)`` with :data:`PLATEAU`, :data:`COEFFICIENT`, :data:`SHIFT`;
* a few-atom mixture: rounding its weights to ``n_j/L`` costs exactly ``δᵀGδ``
  (:data:`ROUNDING_EXCESS`), ``O(1/L²)``, and nothing once ``L π_j`` are integers;
* the depth at which a diffuse branch ``R_D + c_D/(L + L₀)`` overtakes a saturated atomic
  one at ``R_A``: :data:`CROSSOVER_DEPTH`.

``theory.head_families`` evaluates these on Monte-Carlo moments (its tests compare with the
lambdified expressions); ``derivations/exchangeable_heads.py`` derives each one, checked.
"""

from __future__ import annotations

import sympy as sp

from . import symbols as sym

__all__ = [
    "s", "h", "q", "v", "g", "L", "AVERAGE_SECOND_MOMENT", "FIXED_GAIN_LOSS", "FIXED_GAIN_SHARED",
    "FIXED_GAIN_DISAGREEMENT", "OPTIMAL_GAIN", "REFITTED_LOSS", "PLATEAU", "COEFFICIENT", "SHIFT", "SHIFTED_LAW",
    "ROUNDING_EXCESS", "CROSSOVER_DEPTH", "R_atomic", "R_diffuse", "c_diffuse", "L0_diffuse", "numeric",
]

#: E y*², E m y*, E m², E Var_μ(u), the gain g
s, h, q, v = sp.symbols("s h q v", positive=True)
g = sp.Symbol("g", real=True)
L = sym.L

#: E ū² for i.i.d. heads (paper eq. 60, ū the average of L heads)
AVERAGE_SECOND_MOMENT = q + v / L
#: E (g ū − y*)² with a fixed gain
FIXED_GAIN_LOSS = s - 2 * g * h + g**2 * AVERAGE_SECOND_MOMENT
#: C of eq. (63) for i.i.d. heads: the loss of the mean head, E(g m − y*)²
FIXED_GAIN_SHARED = s - 2 * g * h + g**2 * q
#: A − C of eq. (63) for i.i.d. heads
FIXED_GAIN_DISAGREEMENT = g**2 * v
#: the gain minimising FIXED_GAIN_LOSS at depth L
OPTIMAL_GAIN = h / AVERAGE_SECOND_MOMENT
#: the loss with the gain re-fitted at each depth (exact)
REFITTED_LOSS = s - h**2 / AVERAGE_SECOND_MOMENT
#: R_∞, c and L₀ of REFITTED_LOSS = R_∞ + c/(L + L₀)
PLATEAU = s - h**2 / q
COEFFICIENT = h**2 * v / q**2
SHIFT = v / q
SHIFTED_LAW = PLATEAU + COEFFICIENT / (L + SHIFT)

#: a weight error δ (K = 2 atoms shown) around the mixture optimum costs δᵀGδ (KKT: Gw* = h on the support)
_G = sp.Matrix(2, 2, sp.symbols("G11 G12 G12 G22", real=True))
_delta = sp.Matrix(sp.symbols("delta1 delta2", real=True))
ROUNDING_EXCESS = (_delta.T * _G * _delta)[0, 0]

#: the saturated atomic loss, and a diffuse branch's plateau, coefficient and shift
R_atomic, R_diffuse, c_diffuse, L0_diffuse = sp.symbols("R_A R_D c_D L_0D", positive=True)
#: where R_D + c_D/(L + L₀D) = R_A
CROSSOVER_DEPTH = c_diffuse / (R_atomic - R_diffuse) - L0_diffuse


def numeric(expression: sp.Expr):
    """``expression`` as a numpy function of ``(s, h, q, v, g, L)`` (unused arguments ignored).

    References
    ----------
    Paper eqs. (61)-(63) (the laws it evaluates are their exchangeable-head form).

    Examples
    --------
    >>> round(float(numeric(PLATEAU)(2.0, 1.0, 1.0, 0.5, 0.0, 1.0)), 12)
    1.0
    """
    return sp.lambdify((s, h, q, v, g, L), expression, "numpy")
