"""Constrained and free polynomial laws of deep linear attention (paper appendix A.2, eqs. (27)-(40)).

Renders the sympy expressions of :mod:`theory.polynomial_laws` (never a copy
of them) and verifies each step: symbolic identities with ``sympy``, limits
with ``sympy.limit``, integrals and asymptotic series against ``mpmath`` at
30 significant digits. The numerical table is computed by the numeric
functions of :mod:`theory.polynomial_laws`.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from theory import polynomial_laws as pl
from theory import symbols as s
from theory.linear import S_MATRIX, qk_symbol, readout_symbol, symbolic_covariance_polynomial
from theory.spectra import ZETA, PowerLawSpectrum

from ._framework import Derivation, Step, Table, Verdict, all_of, at_precision, equal_symbolic, fmt, latex

__all__ = ["build"]

#: decimal digits of the mpmath reference evaluations, and the agreement required of them
DPS = 30
MP_RTOL = 1e-25
#: sample points (ζ, L) of the numerical checks: spread over the range the paper uses (ζ from 0.75 to 3)
ZETA_POINTS = (sp.Rational(3, 4), sp.Rational(1), sp.Rational(5, 3), sp.Rational(3))
DEPTH_POINTS = (1, 3, 10, 50)
#: constant of the O(1/L) approach of the asymptotic ratios (see _ratio_tends_to_one)
RATIO_BOUND = 20
#: spectrum of the numerical table (ζ = 1; inside both validity windows for L <= 64)
TABLE_SPECTRUM = dict(a=2.0, b=1.0, d=1024)
TABLE_DEPTHS = (1, 2, 4, 8, 16, 32, 64)


# --------------------------------------------------------------------------- checks


def _population_loss_check() -> Verdict:
    """tr(r(Σ) Ω r(Σ) Σ) = Σ_k λ_k ω_k r(λ_k)² for Σ = O diag(λ) Oᵀ, Ω = O diag(ω) Oᵀ (exact, rational O)."""
    lam = sp.symbols("lambda_1:4", positive=True)
    om = sp.symbols("omega_1:4", positive=True)
    c1, c2 = sp.symbols("c_1 c_2")
    # a rational rotation from the Cayley transform of a skew-symmetric matrix
    K = sp.Matrix([[0, 1, -2], [-1, 0, 3], [2, -3, 0]]) / 5
    O = (sp.eye(3) - K) * (sp.eye(3) + K).inv()
    if sp.simplify(O * O.T - sp.eye(3)) != sp.zeros(3, 3):
        return Verdict(False, "the Cayley transform did not give an orthogonal matrix")
    Sigma = O * sp.diag(*lam) * O.T
    Omega = O * sp.diag(*om) * O.T
    r_Sigma = sp.eye(3) + c1 * Sigma + c2 * Sigma**2  # a generic residual of degree 2 with r(0) = 1
    lhs = (r_Sigma.T * Omega * r_Sigma * Sigma).trace()
    rhs = sum(l * w * (1 + c1 * l + c2 * l**2) ** 2 for l, w in zip(lam, om))
    return equal_symbolic(lhs, rhs, "$d = 3$, rational rotation $O$, generic $r$ of degree 2", method="expand")


def _constrained_residual_check() -> Verdict:
    """1 - 𝒫_L(λ) with B_ℓ = κ, m_r = v^r, S → λ equals CONSTRAINED_RESIDUAL with γ = κ v."""
    kappa, v = sp.symbols("kappa v", positive=True)
    verdicts = []
    for depth in range(1, 6):
        poly = symbolic_covariance_polynomial(depth)
        commutative = _commutative_scalar(poly, depth, kappa, v)
        residual = pl.CONSTRAINED_RESIDUAL.subs({s.L: depth, s.gamma: kappa * v})
        verdicts.append(equal_symbolic(1 - commutative, residual, method="expand"))
    ok = all(v_.holds for v_ in verdicts)
    return Verdict(
        ok,
        "`expand(lhs − rhs) = 0` for $L = 1, \\dots, 5$ after substituting $S \\to \\lambda$, $B_\\ell \\to \\kappa$, "
        "$m_r \\to v^r$ in `theory.linear.symbolic_covariance_polynomial(L)`",
    )


def _commutative_scalar(poly, depth: int, kappa, v):
    """Replace the non-commuting S, B_ℓ of the symbolic 𝒫_L by λ, κ, m_r by v^r and L by ``depth``."""
    replacements = {S_MATRIX: s.lam, s.L: depth}
    replacements.update({qk_symbol(layer): kappa for layer in range(1, depth + 1)})
    replacements.update({readout_symbol(r): v**r for r in range(1, depth + 1)})
    return sp.expand(poly.subs(replacements))


def _stability_check() -> Verdict:
    # for 0 < λ <= λ_1 and γ > 0: |1 - γλ/L| < 1  <=>  γ < 2L/λ (tightest at λ = λ_1)
    solution = sp.solve_univariate_inequality(sp.Abs(1 - s.gamma * s.lam1 / s.L) < 1, s.gamma, relational=False)
    expected = sp.Interval.open(0, 2 * s.L / s.lam1)
    return Verdict(solution == expected,
                   "`solve_univariate_inequality` gives $\\gamma \\in (0, 2L/\\lambda_1)$ for "
                   "$|1 - \\gamma\\lambda_1/L| < 1$; smaller $\\lambda$ give weaker conditions")


def _mode_density_check() -> Verdict:
    derivative = sp.Abs(sp.diff(pl.MODE_INDEX_OF_EIGENVALUE, s.lam))
    density = equal_symbolic(derivative, pl.MODE_DENSITY, "$|dk/d\\lambda|$ of `MODE_INDEX_OF_EIGENVALUE`")
    # λ ω(λ) |dk/dλ| = K λ^(ζ-1) with ω(λ) = c_ω k(λ)^(-b)
    omega_of_lam = s.c_omega * pl.MODE_INDEX_OF_EIGENVALUE ** (-s.b)
    summand = s.lam * omega_of_lam * pl.MODE_DENSITY
    target = (pl.CONTINUUM_PREFACTOR * s.lam ** (s.zeta - 1)).subs(s.zeta, ZETA)
    ratio = sp.simplify(sp.powsimp(sp.expand_power_base(summand / target, force=True), force=True))
    return all_of(density, Verdict(ratio == 1, "$\\lambda\\,\\omega(\\lambda)\\,|dk/d\\lambda| \\,/\\, K\\lambda^{\\zeta-1}$ "
                                                "simplifies to 1 with $\\zeta = (a+b-1)/a$"))


@at_precision(DPS + 10)  # quadrature at 40 digits, compared at 25
def _constrained_integral_check() -> Verdict:
    closed_form = sp.lambdify((s.L, s.zeta), pl.CONSTRAINED_CONTINUUM_LOSS.subs(
        {s.lam1: 1, s.c_omega: 1, s.c_lambda: 1, s.a: 1}), "mpmath")
    values, reference = [], []
    for zeta in ZETA_POINTS:
        for depth in DEPTH_POINTS:
            z = mpmath.mpf(sp.N(zeta, DPS + 10))
            integral = mpmath.quad(lambda x: x ** (z - 1) * (1 - x) ** (2 * depth), [0, 1])
            values.append(integral)
            reference.append(closed_form(mpmath.mpf(depth), z))
    worst = max(abs(v - r) / abs(r) for v, r in zip(values, reference))
    return Verdict(bool(worst < MP_RTOL),
                   f"`mpmath.quad` of the integral ({DPS + 10} digits) equals the closed form at "
                   f"$\\zeta \\in \\{{3/4, 1, 5/3, 3\\}}$, $L \\in \\{{1, 3, 10, 50\\}}$, $\\lambda_1 = 1$; "
                   f"relative tolerance {MP_RTOL:.0e}", measured=float(worst))


@at_precision(DPS)
def _ratio_tends_to_one(ratio: sp.Expr, what: str) -> Verdict:
    """Check ``ratio(L) → 1`` as L → ∞ at every sample ζ: ``|ratio − 1| <= RATIO_BOUND / L`` at L = 10^4, 10^6, 10^8.

    (A symbolic ``sympy.limit`` proves the same but costs ~8 s per limit; the O(1/L) rate checked
    here is the first Stirling correction, whose constant is at most ζ(ζ+1) <= 12 for ζ <= 3.)
    """
    fixed = {s.lam1: 1, s.c_omega: 1, s.c_lambda: 1, s.a: 1}
    evaluate = sp.lambdify((s.L, s.zeta), ratio.subs(fixed), "mpmath")
    worst = 0.0
    for zeta in ZETA_POINTS:
        for depth in (10**4, 10**6, 10**8):
            deviation = abs(evaluate(mpmath.mpf(depth), mpmath.mpf(sp.N(zeta, DPS))) - 1) * depth
            worst = max(worst, float(deviation))
    return Verdict(worst <= RATIO_BOUND,
                   f"{what} tends to 1: $|\\text{{ratio}} - 1| \\le {RATIO_BOUND}/L$ at $L = 10^4, 10^6, 10^8$ for "
                   "$\\zeta \\in \\{3/4, 1, 5/3, 3\\}$ (mpmath, 30 digits, evaluating the sympy expressions)",
                   measured=worst)


def _constrained_limit_check() -> Verdict:
    return _ratio_tends_to_one(pl.CONSTRAINED_CONTINUUM_LOSS / pl.CONSTRAINED_ASYMPTOTE,
                               "`CONSTRAINED_CONTINUUM_LOSS / CONSTRAINED_ASYMPTOTE`")


def _jacobi_value_check() -> Verdict:
    verdicts = []
    for n in range(0, 5):
        at_zero = pl.PHI_N.subs(s.n, n).subs(s.lam, 0) ** 2
        verdicts.append(equal_symbolic(sp.gammasimp(at_zero), sp.gammasimp(pl.PHI_N_ZERO_SQUARED.subs(s.n, n))))
    ok = all(v.holds for v in verdicts)
    return Verdict(ok, "`simplify` of $\\varphi_n(0)^2$ from `PHI_N` minus `PHI_N_ZERO_SQUARED` is 0 for $n = 0, \\dots, 4$, "
                       "symbolic $\\zeta$, $\\lambda_1$")


def _weighted_inner_product(p: sp.Expr, q: sp.Expr, zeta: sp.Rational) -> sp.Expr:
    """∫_0^1 λ^(ζ-1) p q dλ exactly, from the moments ∫_0^1 λ^(ζ-1+j) dλ = 1/(ζ+j)."""
    coefficients = sp.Poly(sp.expand(p * q), s.lam).all_coeffs()[::-1]
    return sum(c / (zeta + j) for j, c in enumerate(coefficients))


def _orthonormality_check() -> Verdict:
    ok = True
    for zeta in (sp.Rational(1, 2), sp.Rational(1), sp.Rational(5, 2)):
        phis = [sp.expand(pl.PHI_N.subs({s.n: n, s.zeta: zeta, s.lam1: 1})) for n in range(4)]
        gram = sp.Matrix(4, 4, lambda i, j: _weighted_inner_product(phis[i], phis[j], zeta))
        ok = ok and sp.simplify(gram - sp.eye(4)) == sp.zeros(4, 4)
    return Verdict(ok, "exact Gram matrix $\\int_0^{1}\\lambda^{\\zeta-1}\\varphi_m\\varphi_n\\,d\\lambda = "
                       "\\delta_{mn}$ for $m, n \\le 3$, $\\zeta \\in \\{1/2, 1, 5/2\\}$, $\\lambda_1 = 1$ "
                       "(moments $\\int_0^1 \\lambda^{\\zeta-1+j} d\\lambda = 1/(\\zeta+j)$)")


def _cauchy_schwarz_check() -> Verdict:
    """min over deg ≤ L, r(0) = 1 of ∫ λ^(ζ-1) r² = 1/(G^{-1})_00 (monomial Gram) = [Σ φ_n(0)²]^(-1)."""
    verdicts = []
    for zeta in (sp.Rational(1, 2), sp.Rational(3, 2), sp.Rational(2)):
        for depth in range(0, 4):
            size = depth + 1
            gram = sp.Matrix(size, size, lambda i, j: s.lam1 ** (zeta + i + j) / (zeta + i + j))
            minimum = 1 / gram.inv()[0, 0]
            series = sum(pl.PHI_N_ZERO_SQUARED.subs({s.n: n, s.zeta: zeta}) for n in range(size))
            verdicts.append(sp.simplify(minimum - 1 / series) == 0)
    return Verdict(all(verdicts), "the constrained least-squares minimum over monomial coefficients, "
                                  "$1/(G^{-1})_{00}$ with $G_{ij} = \\lambda_1^{\\zeta+i+j}/(\\zeta+i+j)$, equals "
                                  "$[\\sum_{n\\le L}\\varphi_n(0)^2]^{-1}$ exactly for $L = 0, \\dots, 3$, "
                                  "$\\zeta \\in \\{1/2, 3/2, 2\\}$, symbolic $\\lambda_1$")


def _telescoping_check() -> Verdict:
    verdicts = []
    for depth in range(0, 6):
        partial = sum(pl.PHI_N_ZERO_SQUARED.subs(s.n, n) for n in range(depth + 1))
        verdicts.append(sp.simplify(sp.gammasimp(partial - pl.FREE_CONTINUUM_SUM.subs(s.L, depth))) == 0)
    return Verdict(all(verdicts), "`simplify(gammasimp(lhs − rhs)) = 0` for $L = 0, \\dots, 5$, symbolic $\\zeta$, $\\lambda_1$")


@at_precision(DPS)
def _term_asymptote_check() -> Verdict:
    evaluate = sp.lambdify((s.n, s.zeta), pl.PHI_N_ZERO_SQUARED.subs(s.lam1, 1), "mpmath")
    worst = 0.0
    for zeta in ZETA_POINTS:
        z = mpmath.mpf(sp.N(zeta, DPS))
        for n in (10**6, 10**8):
            exact = evaluate(mpmath.mpf(n), z)
            leading = 2 * mpmath.mpf(n) ** (2 * z - 1) / mpmath.gamma(z) ** 2
            # the relative correction is O(1/n): require |ratio - 1| * n to stay bounded (< 10)
            worst = max(worst, float(abs(exact / leading - 1) * n))
    return Verdict(worst < 10, "$|\\text{exact}/\\text{leading} - 1| < 10/n$ at $n = 10^6, 10^8$ for "
                               "$\\zeta \\in \\{3/4, 1, 5/3, 3\\}$ (mpmath, 30 digits)", measured=worst)


def _sum_limit_check() -> Verdict:
    identical = sp.simplify(pl.FREE_CONTINUUM_LOSS * pl.FREE_CONTINUUM_SUM / pl.CONTINUUM_PREFACTOR) == 1 and \
        sp.simplify(pl.FREE_CONTINUUM_ASYMPTOTE * pl.FREE_CONTINUUM_SUM_ASYMPTOTE / pl.CONTINUUM_PREFACTOR) == 1
    return all_of(
        _ratio_tends_to_one(pl.FREE_CONTINUUM_SUM / pl.FREE_CONTINUUM_SUM_ASYMPTOTE,
                            "`FREE_CONTINUUM_SUM / FREE_CONTINUUM_SUM_ASYMPTOTE`"),
        Verdict(identical, "the losses are $K$ over the sums"),
    )


# --------------------------------------------------------------------------- tables


def _table() -> Table:
    spectrum = PowerLawSpectrum(**TABLE_SPECTRUM)
    depths = np.array(TABLE_DEPTHS)
    constrained = pl.constrained_loss(depths, spectrum)
    constrained_asymptote = pl.constrained_asymptote(depths, spectrum)
    free = pl.free_loss(depths, spectrum)
    free_continuum = pl.free_continuum_loss(depths, spectrum)
    free_asymptote = pl.free_continuum_asymptote(depths, spectrum)
    rows = tuple(
        (str(L), fmt(c), fmt(ca), fmt(c / ca), fmt(f), fmt(fc), fmt(fa))
        for L, c, ca, f, fc, fa in zip(depths, constrained, constrained_asymptote, free, free_continuum, free_asymptote)
    )
    a, b, d = TABLE_SPECTRUM["a"], TABLE_SPECTRUM["b"], TABLE_SPECTRUM["d"]
    return Table(
        caption=(
            f"Finite-$d$ population losses against the continuum laws for `PowerLawSpectrum(a={a:g}, b={b:g}, d={d})` "
            f"($c_\\lambda = c_\\omega = 1$, $\\zeta = {spectrum.zeta:g}$). Constrained: `constrained_loss` at "
            "$\\gamma^* = L/\\lambda_1$ against `constrained_asymptote` (eq. (34)); the ratio tends to 1 inside "
            "$1 \\ll L \\ll \\lambda_1/\\lambda_d$. Free: the exact discrete optimum `free_loss` against the continuum "
            "`free_continuum_loss` (eq. (37)) and its asymptote (eq. (40)). The discrete optimum falls much faster than "
            "the continuum law: a degree-$L$ polynomial can place roots on the isolated top eigenvalues, which the "
            "continuum approximation does not see, so eq. (40) is the continuum law, not a prediction for small $d$."
        ),
        headers=("$L$", "constrained", "eq. (34)", "ratio", "free (discrete)", "free continuum (37)", "eq. (40)"),
        rows=rows,
    )


def build() -> Derivation:
    """The derivation of appendix A.2 (constrained and free polynomial laws), eqs. (27)-(40).

    Returns
    -------
    Derivation

    References
    ----------
    Paper eqs. (27)-(40).

    Examples
    --------
    >>> build().steps[0].equation
    '26, 29-30'
    """
    steps = (
        Step(
            title="Population loss of a residual polynomial",
            equation="26, 29-30",
            explanation=(
                "For $q \\sim \\mathcal N(0, \\Sigma)$ and a residual $\\mathcal D_L = r_L(\\Sigma)$, "
                "$R_L = \\mathbb E[q^\\top \\mathcal D_L^\\top \\Omega \\mathcal D_L q] = "
                "\\operatorname{tr}(r_L(\\Sigma)\\,\\Omega\\, r_L(\\Sigma)\\,\\Sigma)$; $\\Sigma$ and $\\Omega$ share "
                "the eigenbasis $O$ (eq. (3)), so the trace is a sum over modes."
            ),
            statement=(
                "R_L^{\\text{pop}} = \\sum_{k=1}^{d} \\lambda_k \\omega_k\\, r_L(\\lambda_k)^2, \\qquad "
                "r_L = 1 - p_L, \\quad r_L(0) = 1, \\quad \\deg r_L \\le L"
            ),
            assumptions=("population limit $P \\to \\infty$, so $S \\to \\Sigma$",),
            check=_population_loss_check,
        ),
        Step(
            title="The constrained (repeated-update) residual",
            equation="27, 33",
            explanation=(
                "Take every layer equal, $B_\\ell = \\kappa I$, and the label direction invariant under the values, "
                "$W_v W_y = v W_y$ (so $m_r = v^r$ with $W_o W_y = 1$). Then the covariance polynomial of eq. (24) "
                "collapses to a binomial sum, with the effective step $\\gamma = \\kappa v$:"
            ),
            statement=f"r_L(\\lambda) = {latex(pl.CONSTRAINED_RESIDUAL)}",
            assumptions=("$B_\\ell = \\kappa I$", "$W_v W_y = v W_y$", "$W_o W_y = 1$"),
            check=_constrained_residual_check,
        ),
        Step(
            title="Stable step sizes",
            equation="33",
            explanation="The residual decays on every mode only if each factor has modulus below one.",
            statement="|1 - \\gamma\\lambda/L| < 1 \\;\\; \\forall\\, \\lambda \\in (0, \\lambda_1] "
                      "\\iff 0 < \\gamma < \\frac{2L}{\\lambda_1}, \\qquad \\gamma^* = \\frac{L}{\\lambda_1}",
            check=_stability_check,
        ),
        Step(
            title="Continuum step",
            equation="31-32",
            explanation=(
                "Invert $\\lambda_k = c_\\lambda k^{-a}$ to treat the mode index as a function of the eigenvalue, "
                "and replace the sum over modes by an integral over $\\lambda$ with the mode density."
            ),
            statement=(
                "\\begin{gathered}"
                f"k(\\lambda) = {latex(pl.MODE_INDEX_OF_EIGENVALUE)}, \\qquad "
                f"\\Big|\\frac{{dk}}{{d\\lambda}}\\Big| = {latex(pl.MODE_DENSITY)}, \\\\ "
                "\\sum_k \\lambda_k\\omega_k f(\\lambda_k) \\approx K\\!\\int_0^{\\lambda_1}\\!\\lambda^{\\zeta-1} f(\\lambda)\\,d\\lambda, "
                f"\\qquad K = {latex(pl.CONTINUUM_PREFACTOR)}, \\qquad \\zeta = {latex(ZETA)}"
                "\\end{gathered}"
            ),
            assumptions=("$d \\to \\infty$ (so $\\lambda_d \\to 0$)", "$f$ varies slowly on the spacing of the $\\lambda_k$"),
            validity="away from the top few eigenvalues, whose spacing is not small; this is what limits the free law below.",
            check=_mode_density_check,
        ),
        Step(
            title="Constrained loss in the continuum",
            equation="34",
            explanation="At the reference step $\\gamma^* = L/\\lambda_1$ the continuum integral is a Beta function.",
            statement=(
                "R_L^{\\text{con}} \\approx K\\!\\int_0^{\\lambda_1}\\!\\lambda^{\\zeta-1}\\Big(1 - \\frac{\\lambda}{\\lambda_1}\\Big)^{2L} d\\lambda"
                f" = {latex(pl.CONSTRAINED_CONTINUUM_LOSS)}"
            ),
            assumptions=("$\\gamma = \\gamma^*$", "$\\zeta > 0$, i.e. $a + b > 1$"),
            check=_constrained_integral_check,
        ),
        Step(
            title="Constrained law: $L^{-\\zeta}$",
            equation="34",
            explanation="Stirling's formula for the Gamma ratio gives the power law.",
            statement=f"R_L^{{\\text{{con}}}} \\simeq {latex(pl.CONSTRAINED_ASYMPTOTE)} \\propto L^{{-\\zeta}}",
            validity="$1 \\ll L \\ll \\lambda_1/\\lambda_d$ (the upper limit is where the continuum step fails).",
            check=_constrained_limit_check,
        ),
        Step(
            title="Orthonormal polynomials for the weight $\\lambda^{\\zeta-1}$",
            equation="38",
            explanation=(
                "Shifted Jacobi polynomials $\\varphi_n(\\lambda) \\propto P_n^{(\\zeta-1,0)}(1 - 2\\lambda/\\lambda_1)$ are "
                "orthonormal on $[0, \\lambda_1]$ for the weight $\\lambda^{\\zeta-1}$. (Sympy prints `PHI_N` in the "
                "equivalent form given by $P_n^{(\\alpha,\\beta)}(-x) = (-1)^n P_n^{(\\beta,\\alpha)}(x)$.)"
            ),
            statement=f"\\varphi_n(\\lambda) = {latex(pl.PHI_N)}",
            check=_orthonormality_check,
        ),
        Step(
            title="Free polynomial: Cauchy–Schwarz",
            equation="35-37",
            explanation=(
                "Expand any admissible residual as $r = \\sum_{n \\le L} c_n \\varphi_n$. The constraint "
                "$r(0) = \\sum_n c_n \\varphi_n(0) = 1$ and Cauchy–Schwarz give "
                "$\\int \\lambda^{\\zeta-1} r^2 = \\sum_n c_n^2 \\ge 1/\\sum_n \\varphi_n(0)^2$, with equality for "
                "$c_n \\propto \\varphi_n(0)$."
            ),
            statement=(
                "\\min_{\\deg r \\le L,\\; r(0) = 1} \\int_0^{\\lambda_1} \\lambda^{\\zeta-1} r(\\lambda)^2\\, d\\lambda = "
                "\\Big[\\sum_{n=0}^{L} \\varphi_n(0)^2\\Big]^{-1}, \\qquad "
                f"R_L^{{\\text{{free}}}} \\approx {latex(pl.FREE_CONTINUUM_LOSS)}"
            ),
            check=_cauchy_schwarz_check,
        ),
        Step(
            title="Values at zero",
            equation="39",
            explanation="$P_n^{(\\alpha, 0)}(1) = \\binom{n+\\alpha}{n}$ gives the value of each orthonormal polynomial at $\\lambda = 0$.",
            statement=f"\\varphi_n(0)^2 = {latex(pl.PHI_N_ZERO_SQUARED)}",
            check=_jacobi_value_check,
        ),
        Step(
            title="The sum in closed form",
            equation="",
            explanation=(
                "The partial sums telescope (this closed form is the package's; the paper uses only the asymptote). "
                "`theory.polynomial_laws.free_continuum_sum` evaluates it."
            ),
            statement=f"\\sum_{{n=0}}^{{L}} \\varphi_n(0)^2 = {latex(pl.FREE_CONTINUUM_SUM)}",
            check=_telescoping_check,
        ),
        Step(
            title="Growth of the terms",
            equation="39",
            statement=(
                "\\varphi_n(0)^2 \\sim \\frac{2\\, n^{2\\zeta - 1}}{\\lambda_1^{\\zeta}\\,\\Gamma(\\zeta)^2} "
                "\\qquad (n \\to \\infty)"
            ),
            check=_term_asymptote_check,
        ),
        Step(
            title="Free law: $L^{-2\\zeta}$",
            equation="40",
            statement=(
                f"\\sum_{{n=0}}^{{L}} \\varphi_n(0)^2 \\simeq {latex(pl.FREE_CONTINUUM_SUM_ASYMPTOTE)}, \\qquad "
                f"R_L^{{\\text{{free}}}} \\simeq {latex(pl.FREE_CONTINUUM_ASYMPTOTE)} \\propto L^{{-2\\zeta}}"
            ),
            validity="$1 \\ll L \\ll \\sqrt{\\lambda_1/\\lambda_d}$ (eq. (40)).",
            check=_sum_limit_check,
        ),
    )
    return Derivation(
        name="polynomial_laws",
        title="Constrained and free polynomial laws",
        paper_part="Appendix A.2, eqs. (27)-(40)",
        steps=steps,
        summary=(
            "A depth-$L$ linear-attention model predicts $\\beta^\\top \\mathcal P_L(S) q$ with a polynomial of degree "
            "$\\le L$ in the context covariance (eq. (24), see {doc}`covariance_polynomial`). In the population limit its "
            "loss is a weighted sum of squared *residual polynomials* over the spectrum. Two families bracket what "
            "training finds: one update repeated $L$ times gives $R \\propto L^{-\\zeta}$, the best polynomial of "
            "degree $L$ gives $R \\propto L^{-2\\zeta}$, with $\\zeta = (a+b-1)/a$ (the paper's Table 2 reports "
            "measured exponents between the two)."
        ),
        assumptions=(
            "Power-law spectra $\\lambda_k = c_\\lambda k^{-a}$, $\\omega_k = c_\\omega k^{-b}$ (eq. (2)), "
            "$a + b > 1$ so that $\\zeta > 0$.",
            "Population limit $P \\to \\infty$ (the context covariance $S$ equals $\\Sigma$).",
        ),
        validity=(
            "Constrained law: $1 \\ll L \\ll \\lambda_1/\\lambda_d$; free law: $1 \\ll L \\ll \\sqrt{\\lambda_1/\\lambda_d}$ "
            "(`theory.polynomial_laws.validity_window`)."
        ),
        tables=(_table,),
        sources=(
            "theory.polynomial_laws.CONSTRAINED_RESIDUAL",
            "theory.polynomial_laws.CONTINUUM_PREFACTOR",
            "theory.polynomial_laws.CONSTRAINED_CONTINUUM_LOSS",
            "theory.polynomial_laws.CONSTRAINED_ASYMPTOTE",
            "theory.polynomial_laws.PHI_N",
            "theory.polynomial_laws.PHI_N_ZERO_SQUARED",
            "theory.polynomial_laws.FREE_CONTINUUM_SUM",
            "theory.polynomial_laws.FREE_CONTINUUM_SUM_ASYMPTOTE",
            "theory.polynomial_laws.FREE_CONTINUUM_LOSS",
            "theory.polynomial_laws.FREE_CONTINUUM_ASYMPTOTE",
            "theory.spectra.ZETA",
        ),
    )
