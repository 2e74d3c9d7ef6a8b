"""The linear-attention floor on the top-k task (paper appendix A.3, eqs. (41)-(54), Table 3),
including the package's semi-analytic route.

Renders the sympy expressions of :mod:`theory.floor` and checks each step:
algebraic identities exactly (sympy, rational arithmetic), order statistics
against ``mpmath`` quadrature, the conditional mean and the floor against
Monte Carlo with a fixed seed, and the stable G-orthonormal evaluation
against a 50-digit solve with the monomial Gram matrix.
"""

from __future__ import annotations

import mpmath
import numpy as np
import sympy as sp

from theory import floor as fl
from theory import symbols as s
from theory.paper import paper_table
from theory.spectra import PowerLawSpectrum

from ._framework import Derivation, Step, Table, Verdict, all_of, at_precision, equal_symbolic, fmt

__all__ = ["build"]

SEED = 4154
#: Monte-Carlo checks pass when the estimate lies within this many standard errors of the exact value
SIGMAS = 4.0
#: (P, k) pairs of the order-statistic check
ORDER_STATISTIC_CASES = ((2, 1), (10, 3), (40, 5), (64, 2))
#: the numerical table: Table 3 rows at the paper's d = 128 with P = 1024, degrees L = 1 and 16
TABLE_D, TABLE_P, TABLE_DEPTH = 128, 1024, 16


#: how the placeholder symbols of theory.floor are typeset (rendering only; the expressions are theory's)
SYMBOL_NAMES = {
    fl.gamma_sym: "\\gamma_{P,k}",
    fl.trace_sigma2_sym: "\\operatorname{tr}\\Sigma^2",
    fl.second_moment_sym: "\\mathbb E[M^2]",
    fl.aligned_sym: "A",
    fl.trace_omega_sigma_sym: "\\operatorname{tr}\\Omega\\Sigma",
    fl.P_sym: "P",
}


def _tex(expr: sp.Expr) -> str:
    return sp.latex(expr, symbol_names=SYMBOL_NAMES)


def _pythagoras_check() -> Verdict:
    """E‖t − p q‖²_Ω = E‖t − t̄‖²_Ω + E‖t̄ − p q‖²_Ω for an exact discrete law of (q, t)."""
    rng = np.random.default_rng(SEED)
    Omega = sp.Matrix([[2, 1], [1, 3]]) / 4
    Pq = sp.Matrix([[1, 2], [0, 1]]) / 3  # p_L(Σ) for some polynomial: any fixed matrix
    queries = [sp.Matrix(rng.integers(-3, 4, size=2).tolist()) for _ in range(3)]
    total = decomposed = 0
    for q in queries:
        targets = [sp.Matrix(rng.integers(-4, 5, size=2).tolist()) for _ in range(3)]
        weights = [sp.Rational(int(w), 6) for w in (1, 2, 3)]  # P(t | q)
        t_bar = sum((w * t for w, t in zip(weights, targets)), sp.zeros(2, 1))
        for w, t in zip(weights, targets):
            e, delta = t - Pq * q, t - t_bar
            total += w * (e.T * Omega * e)[0, 0] / 3
            decomposed += w * (delta.T * Omega * delta)[0, 0] / 3
        g = t_bar - Pq * q
        decomposed += (g.T * Omega * g)[0, 0] / 3
    return Verdict(sp.simplify(total - decomposed) == 0,
                   "exact for a random discrete joint law of $(q, t)$ with rational weights, $d = 2$ "
                   f"(seed {SEED}): the cross term vanishes because $\\mathbb E[t - \\bar t \\mid q] = 0$")


def _conditioning_check() -> Verdict:
    Sigma = sp.Matrix(3, 3, lambda i, j: sp.Symbol(f"sigma_{min(i, j) + 1}{max(i, j) + 1}"))
    q = sp.Matrix(sp.symbols("q_1:4"))
    V = (q.T * Sigma * q)[0, 0]
    coefficient = Sigma * q / V  # regression of x on s = xᵀq: Cov(x, s)/Var(s)
    residual_covariance = Sigma - Sigma * q * q.T * Sigma / V
    # Cov(x - coefficient s, s) = Σq - coefficient V = 0 and Cov(x - coefficient s) = residual_covariance
    uncorrelated = sp.simplify(Sigma * q - coefficient * V) == sp.zeros(3, 1)
    covariance = sp.simplify(Sigma - coefficient * (Sigma * q).T - (Sigma * q) * coefficient.T
                             + coefficient * V * coefficient.T - residual_covariance) == sp.zeros(3, 3)
    return Verdict(uncorrelated and covariance,
                   "with $\\operatorname{Cov}(x, s) = \\Sigma q$, $\\operatorname{Var}(s) = V$: the residual "
                   "$x - (\\Sigma q/V)s$ is uncorrelated with $s$ (hence independent, jointly Gaussian) and has "
                   "covariance $\\Sigma - \\Sigma qq^\\top\\Sigma/V$ (`simplify` = 0, symbolic $3\\times3$ $\\Sigma$)")


@at_precision(20)
def _order_statistic_check() -> Verdict:
    """γ_{P,k} from each order-statistic density (mpmath) against ``gamma_top_k`` (the package's route)."""
    density = sp.lambdify((fl.x_sym, fl.P_sym, s.k),
                          fl.ORDER_STATISTIC_DENSITY, "mpmath")
    worst = 0.0
    for P, k in ORDER_STATISTIC_CASES:
        # E[mean of top k] = (1/k) Σ_{j=1..k} E[X_(j)], X_(j) the j-th largest, each from its own density
        expected = sum(mpmath.quad(lambda x, j=j: x * density(x, P, j), [-mpmath.inf, 0, 2, mpmath.inf])
                       for j in range(1, k + 1)) / k
        worst = max(worst, abs(float(expected) - fl.gamma_top_k(P, k)) / abs(float(expected)))
    exact = abs(fl.gamma_top_k(2, 1) - 1 / np.sqrt(np.pi)) * np.sqrt(np.pi)
    return Verdict(worst < 1e-9 and exact < 1e-12,
                   "`gamma_top_k` (conditioning on the $k$-th largest) equals $\\frac1k\\sum_{j\\le k}\\mathbb E X_{(j)}$ "
                   "integrated from `ORDER_STATISTIC_DENSITY` with mpmath, relative tolerance 1e-09, at "
                   "$(P, k) \\in \\{(2,1), (10,3), (40,5), (64,2)\\}$; $\\gamma_{2,1} = 1/\\sqrt\\pi$",
                   measured=max(worst, exact))


def _conditional_mean_check() -> Verdict:
    spectrum = PowerLawSpectrum(1.0, 0.5, d=6)
    rng = np.random.default_rng(SEED)
    query = rng.standard_normal(6) * np.sqrt(spectrum.eigenvalues)
    predicted = fl.conditional_top_k_mean(spectrum, query, 64, 2)
    _, t = fl.sample_top_k_targets(spectrum, 64, 2, 40000, rng, ranking="inner_product", query=query)
    mean = t.mean(axis=0)
    se = t.std(axis=0, ddof=1) / np.sqrt(t.shape[0])
    z = float(np.max(np.abs(mean - predicted) / se))
    return Verdict(z <= SIGMAS, "`conditional_top_k_mean` against the Monte-Carlo mean of $t$ given a fixed $q$ "
                                f"(40000 contexts, inner-product ranking, $d = 6$, $P = 64$, $k = 2$, seed {SEED}): "
                                f"every coordinate within {SIGMAS:g} standard errors", measured=z)


def _concentration_check() -> Verdict:
    lam = sp.symbols("lambda_1:4", positive=True)
    z = sp.symbols("z_1:4", real=True)
    V = sum(l**2 * zi**2 for l, zi in zip(lam, z))  # qᵀΣq with q = Λ^(1/2) z, Σ = diag(λ)

    def expectation(expr):
        # E over iid standard normal z: E z² = 1, E z⁴ = 3 (only even powers survive)
        poly = sp.Poly(sp.expand(expr), *z)
        moments = {0: 1, 1: 0, 2: 1, 3: 0, 4: 3}
        return sum(c * sp.Mul(*[moments[e] for e in monomial]) for monomial, c in poly.terms())

    mean = expectation(V)
    variance = sp.expand(expectation(V**2) - mean**2)
    return all_of(
        equal_symbolic(mean, sum(l**2 for l in lam), "$\\mathbb E[q^\\top\\Sigma q] = \\operatorname{tr}\\Sigma^2$", method="expand"),
        equal_symbolic(variance, 2 * sum(l**4 for l in lam), "$\\operatorname{Var}[q^\\top\\Sigma q] = 2\\operatorname{tr}\\Sigma^4$",
                       method="expand"),
    )


def _least_squares_check() -> Verdict:
    g11, g12, g22, h1, h2, T = sp.symbols("G_11 G_12 G_22 h_1 h_2 T", real=True)
    c = sp.Matrix(sp.symbols("c_1:3"))
    G = sp.Matrix([[g11, g12], [g12, g22]])
    h = sp.Matrix([h1, h2])
    objective = T - 2 * (c.T * h)[0, 0] + (c.T * G * c)[0, 0]
    optimum = sp.solve([sp.diff(objective, ci) for ci in c], list(c), dict=True)[0]
    minimum = objective.subs(optimum)
    floor = T - (h.T * G.inv() * h)[0, 0]
    # G_rs = E[(Σ^r q)ᵀ Ω Σ^s q] = tr(Ω Σ^(r+s+1)) for q ~ N(0, Σ), Σ, Ω sharing an eigenbasis
    lam = sp.symbols("lambda_1:4", positive=True)
    om = sp.symbols("omega_1:4", positive=True)
    gram_ok = all(
        sp.expand(sum(w * l**r * l**s_ * l for l, w in zip(lam, om))
                  - (sp.diag(*om) * sp.diag(*lam) ** (r + s_ + 1)).trace()) == 0
        for r in (1, 2) for s_ in (1, 2)
    )
    return all_of(
        equal_symbolic(minimum, floor, "minimum of $T - 2c^\\top h + c^\\top G c$ over $c$, $L = 2$, symbolic $G$, $h$"),
        Verdict(gram_ok, "$\\mathbb E[(\\Sigma^r q)^\\top\\Omega\\Sigma^s q] = \\sum_k \\omega_k\\lambda_k^{r+s+1}$ "
                         "for $r, s \\le 2$, $d = 3$"),
    )


@at_precision(50)
def _stable_basis_check() -> Verdict:
    spectrum = PowerLawSpectrum(1.5, 1.0, d=10)
    rng = np.random.default_rng(SEED)
    cross = rng.standard_normal(10)
    total = 1000.0
    depth = 6
    package = fl.floor_from_moments(spectrum, total, cross, depth)
    lam = [mpmath.mpf(float(x)) for x in spectrum.eigenvalues]
    om = [mpmath.mpf(float(x)) for x in spectrum.teacher_eigenvalues]
    cr = [mpmath.mpf(float(x)) for x in cross]
    reference = []
    for L in range(1, depth + 1):
        G = mpmath.matrix(L, L)
        h = mpmath.matrix(L, 1)
        for r in range(1, L + 1):
            h[r - 1] = mpmath.fsum(w * l**r * c for l, w, c in zip(lam, om, cr))
            for s_ in range(1, L + 1):
                G[r - 1, s_ - 1] = mpmath.fsum(w * l ** (r + s_ + 1) for l, w in zip(lam, om))
        reference.append(mpmath.mpf(total) - (h.T * mpmath.lu_solve(G, h))[0])
    worst = max(abs(float(p) - float(r)) / abs(float(r)) for p, r in zip(package, reference))
    return Verdict(worst < 1e-9, "`floor_from_moments` (G-orthonormal basis, float64) equals $T - h^\\top G^{-1} h$ "
                                 "solved with the monomial $G$ at 50 digits, $L = 1, \\dots, 6$, "
                                 "`PowerLawSpectrum(1.5, 1, d=10)`, random cross moments "
                                 f"(seed {SEED}); relative tolerance 1e-09", measured=worst)


def _monte_carlo_check() -> Verdict:
    verdicts = []
    for (a, b), ranking in (((1.0, 0.5), "inner_product"), ((0.0, 0.0), "cosine")):
        spectrum = PowerLawSpectrum(a, b, d=8)
        mc = fl.linear_floor_monte_carlo(spectrum, 64, 2, 3, 20000, np.random.default_rng(SEED),
                                         queries_per_context=4, ranking=ranking)
        exact = fl.linear_floor_semi_analytic(spectrum, 64, 2, 3, ranking=ranking).estimate
        z = abs(mc.estimate - exact) / mc.standard_error
        verdicts.append(Verdict(z <= SIGMAS, f"{ranking.replace('_', '-')} ranking, `PowerLawSpectrum({a:g}, {b:g}, d=8)`",
                                measured=z))
    combined = all_of(*verdicts)
    return Verdict(combined.holds, "the Monte-Carlo floor of eq. (54) (`linear_floor_monte_carlo`, 20000 contexts × 4 "
                                   f"queries, seed {SEED}) is within {SIGMAS:g} standard errors of the semi-analytic "
                                   f"value ($P = 64$, $k = 2$, $L = 3$) for: {combined.detail}", combined.measured)


def _table() -> Table:
    rows = []
    for row in paper_table("table3"):
        spectrum = PowerLawSpectrum(row["a"], row["b"], d=TABLE_D)
        inner = fl.linear_floor_semi_analytic(spectrum, TABLE_P, row["k"], TABLE_DEPTH)
        if row["a"] == 0:
            cosine = fl.linear_floor_semi_analytic(spectrum, TABLE_P, row["k"], TABLE_DEPTH, ranking="cosine").estimate
            cosine_text = fmt(cosine)
        else:
            cosine_text = "MC only"
        paper = f"{row['theory_floor']:g} ± {row['theory_mc_error']:g}"
        rows.append((str(row["k"]), f"{row['a']:g}", f"{row['b']:g}", paper, fmt(inner.floor_by_degree[0]),
                     fmt(inner.estimate), fmt(inner.estimate / row["theory_floor"]), cosine_text))
    return Table(
        caption=(
            f"Paper Table 3 (theory column, cosine ranking, Monte Carlo) against the package's deterministic "
            f"semi-analytic floor at $d = {TABLE_D}$, $P = {TABLE_P}$ with *inner-product* ranking (eq. (44)), "
            f"for degree $L = 1$ and $L = {TABLE_DEPTH}$, and with the task's cosine ranking where the semi-analytic "
            "route is exact (isotropic inputs, $a = 0$). The inner-product floor is converged in $L$ by $L \\approx 4$, "
            "and it is *not* the task's floor: ranking by inner product prefers long tokens, which raises the floor "
            "by 7 % for isotropic data and by a factor of about 2 for $a = 1$. With the cosine ranking the isotropic "
            "row matches the paper (59.38 against 59.3714 ± 0.0213); the other rows need the Monte Carlo of eq. (54) "
            "(`linear_floor_monte_carlo`, compared row by row in `benchmarks/table3_floor.py`)."
        ),
        headers=("$k$", "$a$", "$b$", "paper (theory)", "inner product, $L = 1$", f"inner product, $L = {TABLE_DEPTH}$",
                 "ratio to paper", "cosine (exact)"),
        rows=tuple(rows),
    )


def build() -> Derivation:
    """The derivation of appendix A.3 (linear floor on the top-k task), eqs. (41)-(54).

    Returns
    -------
    Derivation

    References
    ----------
    Paper eqs. (41)-(54), Table 3.

    Examples
    --------
    >>> [step.equation for step in build().steps]
    ['41-43', '44', '45', '46', '47-53', '', '54']
    """
    steps = (
        Step(
            title="Target and the irreducible part",
            equation="41-43",
            explanation=(
                "On the top-$k$ task the target is $y^* = \\beta^\\top t$ with $t = \\frac1k\\sum_{i \\in S_k} x_i$, "
                "$S_k$ the $k$ context tokens most similar to $q$ (eq. (6)). A linear-attention model predicts "
                "$\\beta^\\top p_L(\\Sigma) q$ in the population limit (eq. (24)); averaging over $\\beta$ and "
                "splitting $t$ into its conditional mean $\\bar t = \\mathbb E[t \\mid q, O]$ and the rest "
                "$\\delta = t - \\bar t$ separates an error no function of $q$ can remove:"
            ),
            statement=(
                "R_L^{\\text{pop}} = \\mathbb E\\,\\lVert \\delta \\rVert_\\Omega^2 + "
                "\\mathbb E\\,\\lVert \\bar t - p_L(\\Sigma) q \\rVert_\\Omega^2, \\qquad \\lVert u \\rVert_\\Omega^2 = u^\\top\\Omega u"
            ),
            check=_pythagoras_check,
        ),
        Step(
            title="Gaussian conditioning on the score",
            equation="44",
            explanation=(
                "Ranking by the inner product $s_i = x_i^\\top q \\sim \\mathcal N(0, V)$, $V = q^\\top\\Sigma q$, "
                "each token splits into a part along $\\Sigma q$ driven by its score and an independent remainder:"
            ),
            statement=(
                "x_i = \\frac{\\Sigma q}{V}\\, s_i + r_i, \\qquad r_i \\sim \\mathcal N\\Big(0,\\; \\Sigma - "
                "\\frac{\\Sigma q q^\\top \\Sigma}{V}\\Big) \\perp s_i, \\qquad \\mathbb E[x_i \\mid s_i] = \\frac{\\Sigma q}{V}\\, s_i"
            ),
            assumptions=("inner-product ranking (the task ranks by cosine similarity; see the table)",),
            check=_conditioning_check,
        ),
        Step(
            title="Conditional mean of the target",
            equation="45",
            explanation=(
                "Selecting the top $k$ scores leaves the remainders untouched, so only the mean of the top $k$ of $P$ "
                "standard normals enters, $\\gamma_{P,k} = \\frac1k\\sum_{j \\le k} \\mathbb E X_{(j)}$, with "
                "$f_{(j)}$ the density of the $j$-th largest (`ORDER_STATISTIC_DENSITY`, written for $j = k$):"
            ),
            statement=(
                "\\bar t = \\mathbb E[t \\mid q] = \\gamma_{P,k}\\, \\frac{\\Sigma q}{\\sqrt{q^\\top \\Sigma q}}, "
                f"\\qquad f_{{(k)}}(x) = {_tex(fl.ORDER_STATISTIC_DENSITY)}"
            ),
            assumptions=("inner-product ranking",),
            check=lambda: all_of(_order_statistic_check(), _conditional_mean_check()),
        ),
        Step(
            title="Mean direction",
            equation="46",
            explanation=(
                "Replacing $q^\\top\\Sigma q$ by its mean $\\operatorname{tr}\\Sigma^2$ makes $\\bar t$ linear in $q$. "
                "The relative fluctuation of $q^\\top\\Sigma q$ is $\\sqrt{2\\operatorname{tr}\\Sigma^4}/\\operatorname{tr}\\Sigma^2$, "
                "small when many eigenvalues contribute."
            ),
            statement=(
                f"\\bar t \\approx c\\, \\Sigma q, \\qquad c = {_tex(fl.MEAN_DIRECTION_COEFFICIENT)}, \\qquad "
                "\\operatorname{tr}\\Sigma^2 = \\mathbb E[q^\\top\\Sigma q]"
            ),
            validity="when $2\\operatorname{tr}\\Sigma^4 \\ll (\\operatorname{tr}\\Sigma^2)^2$ (flat or slowly decaying spectra).",
            check=_concentration_check,
        ),
        Step(
            title="The floor as a least-squares problem",
            equation="47-53",
            explanation=(
                "The best polynomial $p_L(\\lambda) = \\sum_{r=1}^{L} c_r \\lambda^r$ minimises a quadratic in "
                "$c$ whose minimum is the irreducible floor:"
            ),
            statement=(
                "R_{\\text{irr}}(L) = T - h^\\top G^\\dagger h, \\qquad T = \\mathbb E[t^\\top\\Omega t], \\quad "
                "h_r = \\mathbb E[(\\Sigma^r q)^\\top\\Omega t], \\quad G_{rs} = \\operatorname{tr}(\\Omega\\Sigma^{r+s+1})"
            ),
            validity="every $L$; non-increasing in $L$, constant once $L$ reaches the number of distinct eigenvalues.",
            check=_least_squares_check,
        ),
        Step(
            title="A stable evaluation",
            equation="",
            explanation=(
                "The monomial Gram matrix $G$ is ill-conditioned (powers of $\\Sigma$). The package instead builds the "
                "polynomials $\\pi_j$ with $\\pi_j(0) = 0$ that are orthonormal for $G$'s inner product "
                "$\\langle\\pi_i,\\pi_j\\rangle = \\sum_k \\omega_k\\lambda_k\\pi_i(\\lambda_k)\\pi_j(\\lambda_k)$ "
                "(Lanczos with full re-orthogonalisation), in which $G$ is the identity "
                "(`theory.floor.floor_polynomial_basis`):"
            ),
            statement=(
                "R_{\\text{irr}}(L) = T - \\sum_{j=1}^{L} b_j^2, \\qquad b_j = \\mathbb E[(\\pi_j(\\Sigma)q)^\\top\\Omega t]"
            ),
            check=_stable_basis_check,
        ),
        Step(
            title="Monte Carlo and the semi-analytic route",
            equation="54",
            explanation=(
                "The paper estimates $T$ and $h$ by Monte Carlo over contexts (eq. (54)). The package adds a "
                "deterministic route: with inner-product ranking, eq. (44) gives "
                "$\\mathbb E[tt^\\top \\mid q] = \\mathbb E[M^2]\\,\\frac{\\Sigma qq^\\top\\Sigma}{V} + "
                "\\frac1k\\big(\\Sigma - \\frac{\\Sigma qq^\\top\\Sigma}{V}\\big)$, $M$ the mean of the top $k$ of $P$ "
                "standard normals, and the average over $q$ reduces to one-dimensional integrals; for isotropic "
                "inputs the task's cosine ranking is exact as well (`theory.floor.linear_floor_semi_analytic`)."
            ),
            statement=(
                f"T = {_tex(fl.INNER_PRODUCT_TOTAL)}, \\qquad "
                "A = \\mathbb E\\Big[\\frac{(\\Sigma q)^\\top\\Omega\\Sigma q}{q^\\top\\Sigma q}\\Big]"
            ),
            assumptions=("inner-product ranking, or cosine ranking with $\\Sigma = \\lambda_0 I$",),
            check=_monte_carlo_check,
        ),
    )
    return Derivation(
        name="linear_floor",
        title="The linear-attention floor on the top-k task",
        paper_part="Appendix A.3, eqs. (41)-(54), Table 3",
        steps=steps,
        summary=(
            "On the difficult task the target averages the $k$ context tokens most similar to the query. That "
            "selection is not a polynomial of the context covariance, so a linear-attention model of any depth "
            "keeps an irreducible error: the part of the target that is not in the span of "
            "$\\{\\Sigma q, \\dots, \\Sigma^L q\\}$. This page derives that floor, checks the package's stable "
            "evaluation and its deterministic (semi-analytic) route against the Monte Carlo of eq. (54), and "
            "compares with the paper's Table 3."
        ),
        assumptions=(
            "Population limit for the polynomial ($S \\to \\Sigma$, $B_\\ell \\propto I$); the selection itself uses "
            "the $P$ finite context tokens.",
            "By rotation invariance of the ranking and of the quadratic forms, all averages can be taken in the "
            "eigenbasis ($\\Sigma = \\operatorname{diag}\\lambda$, $\\Omega = \\operatorname{diag}\\omega$).",
        ),
        validity="Steps 1, 5, 6 exact; steps 2, 3, 7 exact for inner-product ranking; step 4 an approximation (see its window).",
        tables=(_table,),
        sources=(
            "theory.floor.ORDER_STATISTIC_DENSITY",
            "theory.floor.MEAN_DIRECTION_COEFFICIENT",
            "theory.floor.INNER_PRODUCT_TOTAL",
            "theory.floor.gamma_top_k",
            "theory.floor.conditional_top_k_mean",
            "theory.floor.floor_from_moments",
            "theory.floor.linear_floor_monte_carlo",
            "theory.floor.linear_floor_semi_analytic",
        ),
    )
