"""The depth law from first principles: exchangeable heads, Maurey's bound, the mixture limit and
why a few cosine temperatures saturate (the package's own derivation, built on paper eqs. (60)-(63)).

Renders the sympy objects of :mod:`theory.exchangeable_law`; the probabilistic steps are checked
by Monte Carlo on heads of :mod:`theory.head_families` (independent draws of heads and contexts).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import sympy as sp

from theory import exchangeable_law as law
from theory import head_families as hf
from theory.spectra import PowerLawSpectrum

from ._framework import Derivation, Step, Table, Verdict, all_of, equal_symbolic, fmt, latex

__all__ = ["build", "MC_SETTING"]

SEED = 6163
#: the small setting of the Monte-Carlo checks (cheap enough for every page build)
MC_SETTING = dict(a=0.0, b=0.0, d=8, P=16, k=2, n_contexts=4096, pool=256, draws=192)
#: head law of the Monte-Carlo checks: two temperatures, random forms of spread 0.5
MC_FAMILY = dict(temperatures=(4.0, 12.0), sigma=0.5)
MC_DEPTHS = (1, 2, 4, 8, 16, 32, 64)
#: how many Monte-Carlo standard errors a measured mean may sit from the law
MC_SIGMAS = 3.0


def _expect_iid(depth: int) -> sp.Expr:
    """E ū² for ``depth`` explicit heads u_ℓ = m + ε_ℓ with E ε = 0, E ε_ℓ ε_m = δ_ℓm Var."""
    m, var = sp.symbols("m Var", positive=True)
    eps = sp.symbols(f"e1:{depth + 1}")
    square = sp.expand((sum(m + e for e in eps) / depth) ** 2)
    expectation = square
    for i, e in enumerate(eps):  # E ε_i² = Var, E ε_i ε_j = 0, E ε_i = 0
        expectation = expectation.subs(e**2, var)
    expectation = expectation.subs({e: 0 for e in eps})
    return sp.simplify(expectation - (m**2 + var / depth))


def _average_moment_check() -> Verdict:
    residuals = [_expect_iid(depth) for depth in (1, 2, 3, 4, 5)]
    return Verdict(all(r == 0 for r in residuals),
                   "explicit expansion of $(\\frac1L\\sum_\\ell (m + \\varepsilon_\\ell))^2$ with "
                   "$\\mathbb E\\varepsilon_\\ell\\varepsilon_m = \\delta_{\\ell m}\\mathrm{Var}$ gives "
                   "$m^2 + \\mathrm{Var}/L$ for $L = 1, \\dots, 5$")


def _fixed_gain_check() -> Verdict:
    C, A = law.FIXED_GAIN_SHARED, law.FIXED_GAIN_SHARED + law.FIXED_GAIN_DISAGREEMENT
    return all_of(
        equal_symbolic(law.FIXED_GAIN_LOSS, C + (A - C) / law.L, "$E R_L = C + (A - C)/L$ (eq. 63)"),
        equal_symbolic(sp.diff(law.FIXED_GAIN_SHARED + law.FIXED_GAIN_DISAGREEMENT, law.L), sp.Integer(0),
                       "$A$ and $C$ do not depend on $L$"),
    )


def _refit_check() -> Verdict:
    derivative = sp.diff(law.FIXED_GAIN_LOSS, law.g)
    return all_of(
        equal_symbolic(derivative.subs(law.g, law.OPTIMAL_GAIN), sp.Integer(0), "$\\partial_g E R_L = 0$ at $g^*$"),
        equal_symbolic(law.FIXED_GAIN_LOSS.subs(law.g, law.OPTIMAL_GAIN), law.REFITTED_LOSS,
                       "the loss at $g^*$ is $s - h^2/(q + v/L)$"),
        equal_symbolic(law.REFITTED_LOSS, law.SHIFTED_LAW, "$= R_\\infty + c/(L + L_0)$ exactly"),
    )


def _first_order_check() -> Verdict:
    x = sp.Symbol("x", positive=True)  # x = 1/L
    series = sp.series(law.REFITTED_LOSS.subs(law.L, 1 / x), x, 0, 2).removeO()
    return equal_symbolic(series, law.PLATEAU + law.COEFFICIENT * x, "series in $1/L$ to first order")


def _mc_contexts(seed_offset: int) -> hf.Contexts:
    cfg = MC_SETTING
    return hf.draw_contexts(PowerLawSpectrum(cfg["a"], cfg["b"], cfg["d"]), cfg["P"], cfg["k"], cfg["n_contexts"],
                            np.random.default_rng(SEED + seed_offset))


@lru_cache(maxsize=1)
def _mc_rows() -> tuple:
    """Per depth: the law's fixed-gain prediction (its own pool and context set) and the measured mean loss of
    independent draws of L heads (disjoint fresh heads) on another context set, with the SE of the difference."""
    cfg = MC_SETTING
    family = hf.RandomFormHeads(MC_FAMILY["temperatures"], MC_FAMILY["sigma"])
    predicted = hf.exchangeable_law(family, _mc_contexts(0), pool=cfg["pool"], rng=SEED + 10)
    gain = predicted.fixed_gain
    contexts = _mc_contexts(1)
    rng = np.random.default_rng(SEED + 20)
    draws = {depth: cfg["draws"] // 8 if depth >= 32 else cfg["draws"] for depth in MC_DEPTHS}
    forms, _ = family.sample_forms(max(draws[L] * L for L in MC_DEPTHS), cfg["d"], rng)
    reads = hf.form_reads(forms, contexts)  # every draw of a depth uses its own heads (disjoint columns)
    rows = []
    for depth in MC_DEPTHS:
        averages = reads[:, : draws[depth] * depth].reshape(contexts.n, draws[depth], depth).mean(axis=2)
        per_draw = ((gain * averages - contexts.target[:, None]) ** 2)  # (contexts, draws)
        losses = per_draw.mean(axis=0)
        # SE: spread over draws, the measured set's context error, and the law's own (jackknife) error
        context_se = per_draw.mean(axis=1).std(ddof=1) / np.sqrt(contexts.n)
        se = float(np.sqrt(losses.var(ddof=1) / losses.size + context_se**2 + predicted.plateau_se**2))
        rows.append((depth, float(predicted.fixed_gain_loss(depth)), float(losses.mean()), se))
    return tuple(rows)


def _mc_check() -> Verdict:
    rows = _mc_rows()
    worst = max(abs(measured - law_value) / se for _, law_value, measured, se in rows)
    return Verdict(worst <= MC_SIGMAS,
                   f"mean loss of independent draws of $L$ random-form heads (fixed gain) against the law, "
                   f"$L = {', '.join(str(r[0]) for r in rows)}$: within {MC_SIGMAS:g} SE at every depth "
                   f"(seed {SEED})", worst)


def _maurey_check() -> Verdict:
    rows = _mc_rows()
    return Verdict(all(law_value >= 0 for _, law_value, _, _ in rows),
                   "an expectation over draws is at least the best draw: the law bounds $R^*_L$ from above")


def _kkt_check() -> Verdict:
    U = np.random.default_rng(SEED + 30).standard_normal((400, 6)) ** 2
    y = U @ np.array([0.5, 0.0, 0.3, 0.0, 0.0, 0.2]) + 0.1 * np.random.default_rng(SEED + 31).standard_normal(400)
    limit = hf.mixture_limit(U, y)
    G = U.T @ U / len(y)
    return Verdict(limit.kkt_residual < 1e-8 and np.linalg.eigvalsh(G).min() > -1e-12,
                   "on a random dictionary: the Gram matrix is positive semi-definite (a convex problem) and the "
                   "non-negative least-squares solution meets the KKT conditions to $10^{-8}$")


def _rounding_check() -> Verdict:
    G, delta = law._G, law._delta
    w = sp.Matrix(sp.symbols("w1 w2", positive=True))
    hvec = G * w  # KKT on the support: G w* = h
    s_sym = sp.Symbol("s", positive=True)
    risk = lambda weights: s_sym - 2 * (hvec.T * weights)[0, 0] + (weights.T * G * weights)[0, 0]  # noqa: E731
    excess = sp.expand(risk(w + delta) - risk(w))
    return equal_symbolic(excess, sp.expand(law.ROUNDING_EXCESS), "$R(w^* + \\delta) - R(w^*) = \\delta^\\top G \\delta$")


def _crossover_check() -> Verdict:
    Lx = sp.Symbol("L_x", positive=True)
    solution = sp.solve(sp.Eq(law.R_diffuse + law.c_diffuse / (Lx + law.L0_diffuse), law.R_atomic), Lx)
    return Verdict(len(solution) == 1 and sp.simplify(solution[0] - law.CROSSOVER_DEPTH) == 0,
                   "`solve` of $R_D + c_D/(L + L_{0D}) = R_A$ for $L$")


def _table() -> Table:
    rows = _mc_rows()
    cfg = MC_SETTING
    return Table(
        caption=(
            f"Random-form heads $\\tau(I + {MC_FAMILY['sigma']:g} S)$, $\\tau \\in \\{{{', '.join(f'{t:g}' for t in MC_FAMILY['temperatures'])}\\}}$ "
            f"with equal probability, at $d = {cfg['d']}$, $P = {cfg['P']}$, top-{cfg['k']}, $(a, b) = (0, 0)$. "
            f"The law's moments come from a pool of {cfg['pool']} heads per class on {cfg['n_contexts']} contexts; "
            f"the measured column is the mean loss of {cfg['draws']} (at $L \\ge 32$: {cfg['draws'] // 8}) independent "
            f"draws of $L$ heads, at the law's gain $g = h/q$, on {cfg['n_contexts']} other contexts (seed {SEED})."
        ),
        headers=("$L$", "law $s - 2gh + g^2(q + v/L)$", "measured mean", "s.e.", "(measured − law)/s.e."),
        rows=tuple((str(L), fmt(p), fmt(m), fmt(se, 2), fmt((m - p) / se, 2)) for L, p, m, se in rows),
    )


def build() -> Derivation:
    """The exchangeable-head depth law, Maurey's bound, the mixture limit and the atomic saturation.

    Returns
    -------
    Derivation

    References
    ----------
    Paper eqs. (60)-(63).

    Examples
    --------
    >>> build().name
    'exchangeable_heads'
    """
    steps = (
        Step(
            title="An average of i.i.d. heads",
            equation="60",
            explanation=(
                "A layer of the controlled model is a head $u_\\ell = \\mathrm{softmax}_j(\\hat x_{\\text{test}}^\\top "
                "D_\\ell \\hat x_j)\\cdot y$ (a form $D_\\ell$). Draw the $L$ forms i.i.d. from a law $\\mu$; given the "
                "context, each head has mean $m_\\mu$ and variance $\\mathrm{Var}_\\mu(u)$. Write $s = \\mathbb E y^{*2}$, "
                "$h = \\mathbb E m_\\mu y^*$, $q = \\mathbb E m_\\mu^2$, $v = \\mathbb E \\mathrm{Var}_\\mu(u)$."
            ),
            statement=f"\\mathbb E\\,\\bar u_L^2 = {latex(law.AVERAGE_SECOND_MOMENT)}",
            assumptions=("heads independent given the context, identically distributed",),
            check=_average_moment_check,
        ),
        Step(
            title="Fixed gain: exactly the paper's decomposition with constant A and C",
            equation="61-63",
            explanation="With one gain $g$ the loss of $g\\bar u_L$ is the decomposition of eq. (63) with depth-independent terms:",
            statement=(f"\\mathbb E R_L = {latex(law.FIXED_GAIN_LOSS)} = C + \\frac{{A - C}}{{L}},\\quad "
                       f"C = {latex(law.FIXED_GAIN_SHARED)},\\quad A - C = {latex(law.FIXED_GAIN_DISAGREEMENT)}"),
            check=_fixed_gain_check,
        ),
        Step(
            title="Gain re-fitted at each depth: an exact shifted 1/L law",
            equation="63",
            explanation="Minimising over $g$ at each depth gives a rational function of $1/L$:",
            statement=(f"g^* = {latex(law.OPTIMAL_GAIN)},\\quad R_L = {latex(law.REFITTED_LOSS)} = R_\\infty + \\frac{{c}}{{L + L_0}},"
                       f"\\quad R_\\infty = {latex(law.PLATEAU)},\\ c = {latex(law.COEFFICIENT)},\\ L_0 = {latex(law.SHIFT)}"),
            check=_refit_check,
        ),
        Step(
            title="First order in 1/L: plateau and c",
            statement=f"R_L = {latex(law.PLATEAU)} + \\frac{{{latex(law.COEFFICIENT)}}}{{L}} + O(L^{{-2}})",
            check=_first_order_check,
        ),
        Step(
            title="Monte Carlo: independent draws follow the law",
            explanation="Measured on heads of `theory.head_families` (table below): the law is computed from moments, not fitted.",
            statement="\\frac{1}{n}\\sum_{\\text{draws}} R(\\text{draw}) \\approx s - 2gh + g^2(q + v/L)",
            check=_mc_check,
        ),
        Step(
            title="Maurey's constructive upper bound",
            explanation=(
                "Some draw does at least as well as the average draw, and every draw is a model of the class "
                "(`numerics.models.heads.form_average_params` writes it as weights). So every law $\\mu$ gives an "
                "upper bound on the best loss $R^*_L$ at depth $L$, and the bound is reached at the CLT rate:"
            ),
            statement="R^*_L \\;\\le\\; \\min_\\mu \\Big[ R(m_\\mu) + \\frac{V_\\mu}{L} \\Big]",
            check=_maurey_check,
        ),
        Step(
            title="The any-weight mixture limit is a convex problem",
            explanation=(
                "An average of $L$ heads with gain $g$ is a mixture with weights $w_j = g n_j / L$. Over a finite "
                "dictionary, the best non-negative mixture minimises a convex quadratic; its KKT conditions are "
                "$\\nabla_j = 2(Gw - h)_j = 0$ where $w_j > 0$ and $\\ge 0$ elsewhere (`theory.head_families.mixture_limit` "
                "reports the violation)."
            ),
            statement="R_{\\text{mix}} = \\min_{w \\ge 0}\\ s - 2h^\\top w + w^\\top G w,\\qquad G \\succeq 0",
            check=_kkt_check,
        ),
        Step(
            title="Why a few-atom optimum saturates under equal weights",
            explanation=(
                "If the optimal mixture has a few atoms (a few cosine temperatures), an allocation of $L$ heads "
                "can only put weights $g n_j / L$; around the optimum the first-order term vanishes (KKT), so rounding "
                "costs only $\\delta^\\top G \\delta = O(1/L^2)$, and nothing once every $L\\pi_j$ is an integer. "
                "The atomic branch is flat after a few heads: no $1/L$."
            ),
            statement=f"R(w^* + \\delta) - R(w^*) = {latex(law.ROUNDING_EXCESS)}",
            assumptions=("$G w^* = h$ on the support of $w^*$ (KKT), $\\delta$ supported there",),
            check=_rounding_check,
        ),
        Step(
            title="Where the diffuse branch crosses the atomic one",
            explanation=(
                "A law spread over many forms (random quadratic forms) reaches a lower plateau $R_D$, but only "
                "along its $c_D/(L + L_{0D})$ branch. It beats the saturated atomic loss $R_A$ beyond"
            ),
            statement=f"L_\\times = {latex(law.CROSSOVER_DEPTH)}",
            validity="$R_D < R_A$; below $L_\\times$ the atoms win, above it the diffuse heads, so the best loss is the lower envelope",
            check=_crossover_check,
        ),
    )
    return Derivation(
        name="exchangeable_heads",
        title="The depth law from first principles: exchangeable heads",
        paper_part="Built on eqs. (60)-(63) (the package's own derivation)",
        steps=steps,
        summary=(
            "When is the softmax loss $L_0 + c/L$? If the $L$ layers' heads are exchangeable draws from one law, "
            "always: the loss of their average is exactly a shifted $1/L$ law whose plateau and coefficient are "
            "moments of the law. A law concentrated on a few cosine temperatures is matched exactly after a few "
            "heads and then stays flat; a law spread over many quadratic forms approaches a lower plateau at the "
            "CLT rate. The best loss at each depth is the lower envelope of these branches "
            "(`theory.expressible.best_expressible`)."
        ),
        assumptions=("Controlled nonlinear model of eqs. (9)-(10) with the mask $M(0)$: the prediction is an average of heads (eq. 60).",),
        validity="Steps 1-4 and 7-9 are exact; step 5 is a Monte-Carlo check; step 6 is a bound.",
        tables=(_table,),
        sources=(
            "theory.exchangeable_law.REFITTED_LOSS",
            "theory.exchangeable_law.SHIFTED_LAW",
            "theory.exchangeable_law.CROSSOVER_DEPTH",
            "theory.head_families.exchangeable_law",
            "theory.head_families.mixture_limit",
            "theory.expressible.best_expressible",
        ),
    )
