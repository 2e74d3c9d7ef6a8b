"""Deep linear attention as a polynomial in the context covariance (paper appendix A.1, eqs. (19)-(26)).

Renders the non-commuting sympy objects of :mod:`theory.linear`
(:func:`~theory.linear.symbolic_f_recursion`,
:func:`~theory.linear.symbolic_covariance_polynomial`,
:func:`~theory.linear.symbolic_readout`) and checks them against an exact
(rational-arithmetic) transcription of the masked linear-attention update of
paper eq. (11), written here from the model's definition, at random weights
and a finite context.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from theory import linear as lin
from theory import symbols as s

from ._framework import (
    Derivation,
    Step,
    Table,
    Verdict,
    all_of,
    close_numeric,
    equal_noncommutative,
    fmt,
    latex,
    random_rational_matrix,
)
from .polynomial_laws import _population_loss_check

__all__ = ["build", "evaluate_noncommutative", "linear_attention_forward"]

SEED = 1924
#: sizes of the exact checks: input dimension d, width N, context length P
D, N, P = 2, 3, 4
EXACT_DEPTHS = (1, 2, 3)
SYMBOLIC_DEPTHS = (1, 2, 3, 4)
TABLE_DEPTHS = (1, 2, 3, 4, 5, 6)


def linear_attention_forward(W_x, W_y, W_qs, W_ks, W_v, W_o, U, y, q):
    """Exact forward pass of the masked linear-attention model (paper eqs. (8), (11), (75)).

    ``H_x = W_x X`` (fixed), ``H_y^0 = W_y y_in``, and for ℓ = 1..L:
    ``A^ℓ = (1/(P N)) M_linear ⊙ ((W_q^ℓ H_x)ᵀ (W_k^ℓ H_x))``,
    ``H_y^ℓ = H_y^{ℓ-1} + (1/L) W_v H_y^{ℓ-1} (A^ℓ)ᵀ``, with
    ``M_linear = [[−1_P 1_Pᵀ, 0], [1_Pᵀ, 0]]`` (last row/column: the test token).

    Parameters
    ----------
    W_x : Matrix (N, d)
    W_y : Matrix (N, 1)
    W_qs, W_ks : list of Matrix (N, N)
        Per-layer query and key matrices.
    W_v : Matrix (N, N)
    W_o : Matrix (1, N)
    U : Matrix (d, P)
        Context inputs.
    y : Matrix (P, 1)
        Context labels.
    q : Matrix (d, 1)
        Test input.

    Returns
    -------
    tuple
        ``(prediction, states)``: ``W_o h_L`` and the list of label-stream states
        ``H_y^0, …, H_y^L``.

    References
    ----------
    Paper eqs. (7)-(8), (11)-(12), (75).

    Examples
    --------
    >>> one = sp.Matrix([[1]])
    >>> forward = linear_attention_forward(one, one, [one], [one], one, one, sp.Matrix([[2]]), sp.Matrix([3]), sp.Matrix([1]))
    >>> forward[0]   # ŷ = W_o W_v W_y · y x q /(P N L) = 3·2·1
    6
    """
    depth = len(W_qs)
    d, P = U.shape
    N = W_x.shape[0]
    X = sp.Matrix.hstack(U, q)
    H_x = W_x * X
    H = W_y * sp.Matrix.hstack(y.T, sp.zeros(1, 1))
    mask = sp.zeros(P + 1, P + 1)
    mask[:P, :P] = -sp.ones(P, P)
    mask[P, :P] = sp.ones(1, P)
    states = [H]
    for W_q, W_k in zip(W_qs, W_ks):
        scores = (W_q * H_x).T * (W_k * H_x)
        A = mask.multiply_elementwise(scores) / (P * N)
        H = H + W_v * H * A.T / depth
        states.append(H)
    return (W_o * H[:, P])[0, 0], states


def evaluate_noncommutative(expr: sp.Expr, matrices: dict, scalars: dict) -> sp.Matrix:
    """Evaluate a sum of products of non-commuting symbols by multiplying matrices in order.

    Parameters
    ----------
    expr : sympy.Expr
        An expanded sum of terms ``c · X_1 X_2 ⋯`` with commuting ``c``.
    matrices : dict
        Non-commuting symbol → sympy Matrix.
    scalars : dict
        Commuting symbol → value.

    Returns
    -------
    Matrix

    References
    ----------
    Paper eq. (24).

    Examples
    --------
    >>> S, B = sp.symbols("S B", commutative=False)
    >>> evaluate_noncommutative(2 * S * B, {S: sp.Matrix([[1, 1], [0, 1]]), B: sp.eye(2)}, {})
    Matrix([
    [2, 2],
    [0, 2]])
    """
    total = None
    for term in sp.Add.make_args(sp.expand(expr)):
        commuting, factors = term.args_cnc()
        coefficient = sp.Mul(*commuting).subs(scalars)
        product = None
        for factor in factors:
            if isinstance(factor, sp.Pow):
                value = matrices[factor.base] ** int(factor.exp)
            else:
                value = matrices[factor]
            product = value if product is None else product * value
        contribution = coefficient * product
        total = contribution if total is None else total + contribution
    return total


def _instance(rng: np.random.Generator, depth: int) -> dict:
    W_x = random_rational_matrix(rng, N, D)
    W_y = random_rational_matrix(rng, N, 1)
    W_qs = [random_rational_matrix(rng, N, N) for _ in range(depth)]
    W_ks = [random_rational_matrix(rng, N, N) for _ in range(depth)]
    W_v = random_rational_matrix(rng, N, N)
    W_o = random_rational_matrix(rng, 1, N)
    U = random_rational_matrix(rng, D, P)
    beta = random_rational_matrix(rng, D, 1)
    q = random_rational_matrix(rng, D, 1)
    return dict(W_x=W_x, W_y=W_y, W_qs=W_qs, W_ks=W_ks, W_v=W_v, W_o=W_o, U=U, beta=beta, q=q, y=U.T * beta)


def _matrices(inst: dict, depth: int) -> tuple[dict, dict]:
    S = inst["U"] * inst["U"].T / P
    B = [inst["W_x"].T * W_k.T * W_q * inst["W_x"] / N for W_q, W_k in zip(inst["W_qs"], inst["W_ks"])]
    matrices = {lin.S_MATRIX: S, lin.W_V: inst["W_v"], lin.W_Y: inst["W_y"], lin.W_O: inst["W_o"],
                lin.BETA_T: inst["beta"].T, lin.QUERY: inst["q"]}
    matrices.update({lin.qk_symbol(layer): B[layer - 1] for layer in range(1, depth + 1)})
    scalars = {s.L: depth}
    scalars.update({lin.readout_symbol(r): (inst["W_o"] * inst["W_v"] ** r * inst["W_y"])[0, 0]
                    for r in range(1, depth + 1)})
    return matrices, scalars


def _recursion_check() -> Verdict:
    rng = np.random.default_rng(SEED)
    failures = []
    for depth in EXACT_DEPTHS:
        inst = _instance(rng, depth)
        _, states = linear_attention_forward(inst["W_x"], inst["W_y"], inst["W_qs"], inst["W_ks"], inst["W_v"],
                                             inst["W_o"], inst["U"], inst["y"], inst["q"])
        matrices, scalars = _matrices(inst, depth)
        F = [evaluate_noncommutative(F_l, matrices, scalars) for F_l in lin.symbolic_f_recursion(depth)]
        for layer in range(depth + 1):
            context_ok = states[layer][:, :P] == F[layer] * inst["U"]
            test_ok = layer == 0 or states[layer][:, P] - states[layer - 1][:, P] == (F[layer - 1] - F[layer]) * inst["q"]
            if not (context_ok and test_ok):
                failures.append((depth, layer))
    return Verdict(not failures, "the label-stream states of an exact forward pass of eq. (11) with the mask "
                                 "$M_{\\text{linear}}$ satisfy $Z_\\ell = F_\\ell U$ and the $h$-increments, with $F_\\ell$ "
                                 "from `theory.linear.symbolic_f_recursion(L)` evaluated on the same matrices; "
                                 f"rational arithmetic, random weights, $d = {D}$, $N = {N}$, $P = {P}$, "
                                 f"$L = 1, 2, 3$ (seed {SEED})" + (f": fails at (L, layer) = {failures}" if failures else ""))


def _readout_check() -> Verdict:
    verdicts = [
        equal_noncommutative(lin.symbolic_readout(depth), lin.BETA_T * lin.symbolic_covariance_polynomial(depth) * lin.QUERY)
        for depth in SYMBOLIC_DEPTHS
    ]
    ok = all(v.holds for v in verdicts)
    return Verdict(ok, "`expand(symbolic_readout(L) − βᵀ·symbolic_covariance_polynomial(L)·q) = 0` term by term in "
                       "non-commuting symbols, $L = 1, \\dots, 4$" + ("" if ok else ": " + "; ".join(v.detail for v in verdicts)))


def _finite_p_check() -> Verdict:
    rng = np.random.default_rng(SEED + 1)
    failures = []
    numeric_values, numeric_reference = [], []
    for depth in EXACT_DEPTHS:
        inst = _instance(rng, depth)
        prediction, _ = linear_attention_forward(inst["W_x"], inst["W_y"], inst["W_qs"], inst["W_ks"], inst["W_v"],
                                                 inst["W_o"], inst["U"], inst["y"], inst["q"])
        matrices, scalars = _matrices(inst, depth)
        polynomial = evaluate_noncommutative(lin.symbolic_covariance_polynomial(depth), matrices, scalars)
        exact = (inst["beta"].T * polynomial * inst["q"])[0, 0]
        if sp.simplify(prediction - exact) != 0:
            failures.append(depth)
        # the float64 O(L²) evaluation of theory.linear agrees with the exact value
        as_float = lambda M: np.array(M.evalf(), dtype=float)  # noqa: E731
        B = np.stack([as_float(matrices[lin.qk_symbol(layer)]) for layer in range(1, depth + 1)])
        m = lin.readout_coefficients(as_float(inst["W_o"]), as_float(inst["W_v"]), as_float(inst["W_y"]), depth)
        numeric = lin.covariance_polynomial(as_float(matrices[lin.S_MATRIX]), B, m)
        numeric_values.append(float((as_float(inst["beta"]).T @ numeric @ as_float(inst["q"]))[0, 0]))
        numeric_reference.append(float(exact))
    return all_of(
        Verdict(not failures, "the exact forward pass equals $\\beta^\\top \\mathcal P_L(S) q$ evaluated from "
                              "`symbolic_covariance_polynomial(L)` (rational arithmetic, finite $P = 4$, random weights, "
                              f"$L = 1, 2, 3$, seed {SEED + 1})" + (f": fails at L = {failures}" if failures else "")),
        close_numeric(numeric_values, numeric_reference, 1e-12, "the float64 `covariance_polynomial` (O($L^2$) recursion) "
                                                               "agrees with the exact value"),
    )


def _loss_check() -> Verdict:
    """E_β[(βᵀ 𝒟 q)²] = qᵀ 𝒟ᵀ Ω 𝒟 q for β with second moment Ω (replace β_i β_j by Ω_ij)."""
    beta = sp.Matrix(sp.symbols("beta_1:3"))
    Omega = sp.Matrix(2, 2, lambda i, j: sp.Symbol(f"Omega_{min(i, j) + 1}{max(i, j) + 1}"))
    Dm = sp.Matrix(2, 2, lambda i, j: sp.Symbol(f"D_{i + 1}{j + 1}"))
    q = sp.Matrix(sp.symbols("q_1:3"))
    square = sp.expand(((beta.T * Dm * q)[0, 0]) ** 2)
    poly = sp.Poly(square, *beta)
    expectation = sum(coefficient * Omega[[i for i, e in enumerate(monomial) for _ in range(e)][0],
                                          [i for i, e in enumerate(monomial) for _ in range(e)][1]]
                      for monomial, coefficient in poly.terms())
    stated = (q.T * Dm.T * Omega * Dm * q)[0, 0]
    return Verdict(sp.expand(expectation - stated) == 0,
                   "with $\\mathbb E[\\beta_i\\beta_j] = \\Omega_{ij}$ the expectation of the expanded square equals "
                   "$q^\\top \\mathcal D^\\top \\Omega\\, \\mathcal D q$ (`expand` = 0, $d = 2$, generic $\\mathcal D$, $\\Omega$)")


def _commuting_check() -> Verdict:
    """If the B_ℓ commute with S (B_ℓ = b_ℓ I, S → λ) 𝒫_L is a polynomial of degree L in λ with 𝒫_L(0) = 0."""
    ok = True
    for depth in SYMBOLIC_DEPTHS:
        b = sp.symbols(f"b_1:{depth + 1}", positive=True)
        replacements = {lin.S_MATRIX: s.lam, s.L: depth}
        replacements.update({lin.qk_symbol(layer): b[layer - 1] for layer in range(1, depth + 1)})
        scalar = sp.expand(lin.symbolic_covariance_polynomial(depth).subs(replacements))
        poly = sp.Poly(scalar, s.lam)
        ok = ok and poly.degree() == depth and scalar.subs(s.lam, 0) == 0
    return Verdict(ok, "after $S \\to \\lambda$, $B_\\ell \\to b_\\ell$: `Poly(·, λ).degree() = L` and the value at "
                       "$\\lambda = 0$ is 0, for $L = 1, \\dots, 4$")


def _table() -> Table:
    rng = np.random.default_rng(SEED)
    d, N_float, P_float = 4, 6, 16
    rows = []
    for depth in TABLE_DEPTHS:
        U = rng.standard_normal((d, P_float))
        S = U @ U.T / P_float
        W_x = rng.standard_normal((N_float, d)) / np.sqrt(d)
        W_q = rng.standard_normal((depth, N_float, N_float)) / np.sqrt(N_float)
        W_k = rng.standard_normal((depth, N_float, N_float)) / np.sqrt(N_float)
        W_v = rng.standard_normal((N_float, N_float)) / np.sqrt(N_float)
        W_y = rng.standard_normal(N_float)
        W_o = rng.standard_normal(N_float)
        beta = rng.standard_normal(d)
        q = rng.standard_normal(d)
        B = lin.effective_qk(W_x, W_q, W_k)
        m = lin.readout_coefficients(W_o, W_v, W_y, depth)
        dynamic = beta @ lin.covariance_polynomial(S, B, m) @ q
        F = lin.f_recursion(S, B, W_v, W_y, beta, depth)
        recursion = W_o @ (F[0] - F[-1]) @ q
        matrices = {lin.S_MATRIX: sp.Matrix(S), lin.BETA_T: sp.Matrix(beta).T, lin.QUERY: sp.Matrix(q)}
        matrices.update({lin.qk_symbol(layer): sp.Matrix(B[layer - 1]) for layer in range(1, depth + 1)})
        scalars = {s.L: depth}
        scalars.update({lin.readout_symbol(r): float(m[r - 1]) for r in range(1, depth + 1)})
        brute = float(evaluate_noncommutative(lin.BETA_T * lin.symbolic_covariance_polynomial(depth) * lin.QUERY,
                                              matrices, scalars)[0, 0])
        terms = 2**depth - 1
        rows.append((str(depth), str(terms), fmt(dynamic, 8), fmt(recursion, 8), fmt(brute, 8)))
    return Table(
        caption=(
            f"Float64 instance ($d = {d}$, $N = {N_float}$, $P = {P_float}$, random weights, seed {SEED}): "
            "$\\beta^\\top\\mathcal P_L(S)q$ from the $O(L^2)$ recursion `covariance_polynomial`, from the label-stream "
            "recursion `f_recursion` ($W_o(F_0 - F_L)q$, eq. (23)) and from the $2^L - 1$ terms of the symbolic sum "
            "(eq. (24)), to 8 significant digits."
        ),
        headers=("$L$", "terms in (24)", "`covariance_polynomial`", "`f_recursion`", "symbolic sum"),
        rows=tuple(rows),
    )


def build() -> Derivation:
    """The derivation of appendix A.1 (covariance polynomial), eqs. (19)-(26).

    Returns
    -------
    Derivation

    References
    ----------
    Paper eqs. (19)-(26).

    Examples
    --------
    >>> [step.equation for step in build().steps]
    ['19-22', '23', '23-24', '24', '26', '29-30']
    """
    F1 = lin.symbolic_f_recursion(1)[1]
    P1 = lin.symbolic_covariance_polynomial(1)
    P2 = lin.symbolic_covariance_polynomial(2).subs(s.L, 2)
    steps = (
        Step(
            title="Label states stay linear in the context",
            equation="19-22",
            explanation=(
                "With $U = [x_1, \\dots, x_P]$, $q = x_{\\text{test}}$, $S = UU^\\top/P$ and the effective query-key "
                "matrices $B_\\ell = \\frac1N W_x^\\top (W_k^\\ell)^\\top W_q^\\ell W_x$ (eq. (20)), the mask "
                "$M_{\\text{linear}}$ (context tokens read each other with sign $-1$, the test token reads the context "
                "with $+1$) keeps the context label states of the form $Z_\\ell = F_\\ell U$, and the test state "
                f"collects the increments. For one layer, `symbolic_f_recursion(1)` gives $F_1 = {latex(F1)}$."
            ),
            statement=(
                "F_0 = W_y \\beta^\\top, \\qquad F_\\ell = F_{\\ell-1} - \\frac1L W_v F_{\\ell-1} S B_\\ell, \\qquad "
                "h_\\ell - h_{\\ell-1} = (F_{\\ell-1} - F_\\ell)\\, q, \\quad h_0 = 0"
            ),
            assumptions=("linear attention, eq. (11), with the mask $M_{\\text{linear}}$ of eq. (75)",
                         "noise-free labels $y_i = \\beta^\\top x_i$"),
            validity="exact for every finite $P$ and all weights.",
            check=_recursion_check,
        ),
        Step(
            title="Read-out as a covariance polynomial",
            equation="23",
            explanation=(
                "Expanding $\\hat y_L = W_o(F_0 - F_L)q$ and collecting the scalars $m_r = W_o W_v^r W_y$ gives "
                f"$\\beta^\\top\\mathcal P_L(S) q$; for one and two layers "
                f"$\\mathcal P_1 = {latex(P1.subs(s.L, 1))}$ and $\\mathcal P_2 = {latex(P2)}$."
            ),
            statement="\\hat y_L = W_o (F_0 - F_L)\\, q = \\beta^\\top \\mathcal P_L(S)\\, q",
            check=_readout_check,
        ),
        Step(
            title="The covariance polynomial, at finite P",
            equation="23-24",
            explanation=(
                "In general, each subset $\\ell_1 < \\dots < \\ell_r$ of layers contributes one ordered product, "
                "with the sign of the mask and the read-out scalar $m_r$:"
            ),
            statement=(
                "\\mathcal P_L(S) = \\sum_{r=1}^{L} \\frac{(-1)^{r-1} m_r}{L^r} \\sum_{\\ell_1 < \\dots < \\ell_r} "
                "S B_{\\ell_1} S B_{\\ell_2} \\cdots S B_{\\ell_r}, \\qquad m_r = W_o W_v^r W_y"
            ),
            validity="exact for every finite $P$ and all weights (no population limit).",
            check=_finite_p_check,
        ),
        Step(
            title="Degree and value at zero",
            equation="24",
            explanation=(
                "When the $B_\\ell$ commute with $S$ (e.g. $B_\\ell \\propto I$), $\\mathcal P_L$ is an ordinary "
                "polynomial $p_L$ of degree $L$ in the eigenvalues with $p_L(0) = 0$: depth is polynomial degree."
            ),
            statement="\\mathcal P_L(S) = p_L(S), \\qquad \\deg p_L = L, \\qquad p_L(0) = 0",
            assumptions=("$[B_\\ell, S] = 0$",),
            check=_commuting_check,
        ),
        Step(
            title="Loss of the polynomial predictor",
            equation="26",
            explanation=(
                "On the easy task $y^* = \\beta^\\top q$, so the error is $\\beta^\\top(\\mathcal P_L(S) - I) q$; "
                "averaging over $\\beta \\sim \\mathcal N(0, \\Omega)$ (independent of $q$ given the rotation):"
            ),
            statement="R_L = \\mathbb E\\big[q^\\top \\mathcal D_L^\\top\\, \\Omega\\, \\mathcal D_L\\, q\\big], \\qquad "
                      "\\mathcal D_L = I - \\mathcal P_L(S)",
            check=_loss_check,
        ),
        Step(
            title="Population limit",
            equation="29-30",
            explanation=(
                "As $P \\to \\infty$, $S \\to \\Sigma$; with $B_\\ell \\propto I$ the loss becomes a sum over modes of "
                "the squared residual polynomial $r_L = 1 - p_L$ — the starting point of {doc}`polynomial_laws`."
            ),
            statement="R_L^{\\text{pop}} = \\sum_{k} \\lambda_k \\omega_k\\, r_L(\\lambda_k)^2, \\qquad r_L(0) = 1",
            assumptions=("$P \\to \\infty$", "$B_\\ell \\propto I$"),
            check=_population_loss_check,
        ),
    )
    return Derivation(
        name="covariance_polynomial",
        title="Deep linear attention is a covariance polynomial",
        paper_part="Appendix A.1, eqs. (19)-(26)",
        steps=steps,
        summary=(
            "A depth-$L$ linear-attention model on noise-free in-context regression predicts "
            "$\\hat y_L = \\beta^\\top \\mathcal P_L(S) q$, where $\\mathcal P_L$ is a polynomial of degree $L$ in the "
            "context covariance $S$, interleaved with the layers' effective query-key matrices. The identity is exact "
            "at finite $P$ and for any weights; it is what turns the question *how does the loss depend on depth* into "
            "*how well can a polynomial of degree $L$ invert the spectrum*. The sympy objects rendered here are those "
            "of `theory.linear`, and every step is checked against an exact transcription of the model."
        ),
        assumptions=(
            "Linear attention (eq. (11)) with layer-specific $W_q^\\ell, W_k^\\ell$, a shared $W_v$, the mask "
            "$M_{\\text{linear}}$ (eq. (75)) and the residual scale $1/L$.",
            "Labels $y_i = \\beta^\\top x_i$ without noise; the test token enters with label $0$.",
        ),
        validity="Exact (steps 1-4); step 5 averages over the teacher; step 6 is the population limit $P \\to \\infty$.",
        tables=(_table,),
        sources=(
            "theory.linear.symbolic_f_recursion",
            "theory.linear.symbolic_covariance_polynomial",
            "theory.linear.symbolic_readout",
            "theory.linear.covariance_polynomial",
            "theory.linear.f_recursion",
        ),
    )
