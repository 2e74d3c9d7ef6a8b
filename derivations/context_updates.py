"""Context updates with the mask M(m) (paper appendix C.3, eqs. (78)-(87)).

The theory package has no module for this part (it is an algebraic
rewriting, not a prediction), so the objects are built here from sympy
matrices for a small context size P. Each step is checked on the full
residual update of paper eq. (10) with the mask M(m) of eqs. (75)-(77):
symbolically for P = 2 or 3 and exactly (rational arithmetic) at random
weights.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import sympy as sp

from ._framework import (
    Derivation,
    Step,
    Table,
    Verdict,
    all_of,
    equal_symbolic,
    fmt,
    random_rational_matrix,
    random_row_stochastic,
)

__all__ = ["build", "closed_form_prediction", "forward_prediction", "least_squares_rho", "recursion_prediction"]

#: context size used for the symbolic checks (the algebra is the same for every P)
P_SYMBOLIC = 3
#: seed of the exact random instances
SEED = 20261
#: reported values (paper eqs. (83)-(84)): fitted ρ of A_1 for top-2 and top-16, learned m for top-16
REPORTED_RHO = {"top-2": 0.9999, "top-16": 0.0989}
REPORTED_M_TOP16 = -2.3

m, v, g, L, rho = sp.symbols("m v g L rho", real=True)


def forward_prediction(W_y, W_v, W_o, y, context_attention, test_attention, m_value):
    """ŷ_L of the full residual update (paper eq. (10)) with the mask M(m) (eqs. (75)-(77)).

    Works with sympy matrices (exact) or anything supporting ``*``/``+``.

    Parameters
    ----------
    W_y : Matrix (N, 1)
    W_v : Matrix (N, N)
        The shared value matrix.
    W_o : Matrix (1, N)
    y : Matrix (P, 1)
        Context labels.
    context_attention : list of Matrix (P, P)
        A_ℓ: the (row-stochastic) context-to-context attention of layer ℓ.
    test_attention : list of Matrix (1, P)
        p_ℓ: the test token's attention row over the context.
    m_value : scalar
        The mask value m of the context block.

    Returns
    -------
    scalar
        ``W_o h_L`` where ``H_y^ℓ = H_y^{ℓ-1} + (1/L) W_v H_y^{ℓ-1} (A^ℓ)ᵀ`` and
        ``A^ℓ = [[m A_ℓ, 0], [p_ℓ, 0]]`` (last row/column: the test token).

    References
    ----------
    Paper eqs. (10), (75)-(77).

    Examples
    --------
    >>> one = sp.Matrix([[1]])
    >>> forward_prediction(one, one, one, sp.Matrix([2]), [sp.Matrix([[1]])], [sp.Matrix([[1]])], 0)
    2
    """
    depth = len(context_attention)
    P = y.shape[0]
    H = W_y * sp.Matrix.hstack(y.T, sp.zeros(1, 1))  # H_y^0 = W_y y_in, y_in = (y_1..y_P, 0)
    for A_l, p_l in zip(context_attention, test_attention):
        full = sp.zeros(P + 1, P + 1)
        full[:P, :P] = m_value * A_l
        full[P, :P] = p_l
        H = H + sp.Rational(1, depth) * W_v * H * full.T
    return (W_o * H[:, P])[0, 0]


def closed_form_prediction(y, context_attention, test_attention, m_tilde, g_value):
    """ŷ_L from the closed form (paper eq. (82)): ``(g/L) Σ_ℓ yᵀ [Π_{j<ℓ}(I + (m̃/L) A_jᵀ)] p_ℓᵀ``.

    ``m̃ = m v`` when ``W_v W_y = v W_y``.

    References
    ----------
    Paper eqs. (81)-(82).

    Examples
    --------
    >>> closed_form_prediction(sp.Matrix([2]), [sp.Matrix([[1]])], [sp.Matrix([[1]])], 5, 1)
    2
    """
    depth = len(context_attention)
    P = y.shape[0]
    z = y.T
    total = 0
    for A_l, p_l in zip(context_attention, test_attention):
        total += (z * p_l.T)[0, 0]
        z = z * (sp.eye(P) + m_tilde / depth * A_l.T)
    return g_value * total / depth


def least_squares_rho(A):
    """ρ̂ = argmin_ρ ‖A − ρ I − (1 − ρ) J_P‖_F² = (tr A − 1ᵀA1/P)/(P − 1), J_P = 11ᵀ/P.

    For a row-stochastic A this is ``(tr A − 1)/(P − 1)``.

    References
    ----------
    Paper eq. (83).

    Examples
    --------
    >>> least_squares_rho(sp.eye(3))
    1
    >>> least_squares_rho(sp.ones(3, 3) / 3)
    0
    """
    P = A.shape[0]
    return sp.nsimplify(A.trace() - sum(A) / P) / (P - 1)


# --------------------------------------------------------------------------- steps


def _block_update_check() -> Verdict:
    P, N = 2, 2
    Z = sp.Matrix(N, P, lambda i, j: sp.Symbol(f"Z_{i}{j}"))
    h = sp.Matrix(N, 1, lambda i, j: sp.Symbol(f"h_{i}"))
    W_v = sp.Matrix(N, N, lambda i, j: sp.Symbol(f"V_{i}{j}"))
    A = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"a_{i}{j}"))
    p = sp.Matrix(1, P, lambda i, j: sp.Symbol(f"p_{j}"))
    full = sp.zeros(P + 1, P + 1)
    full[:P, :P] = m * A
    full[P, :P] = p
    H = sp.Matrix.hstack(Z, h)
    updated = H + W_v * H * full.T / L
    expected = sp.Matrix.hstack(Z + m / L * W_v * Z * A.T, h + W_v * Z * p.T / L)
    return Verdict(
        (updated - expected).expand() == sp.zeros(N, P + 1),
        "block form equals the full update of eq. (10) with symbolic $N = P = 2$ matrices (`expand` = 0)",
    )


def _reduction_check() -> Verdict:
    P = P_SYMBOLIC
    W_y = sp.Matrix(2, 1, sp.symbols("w_0 w_1"))
    z = sp.Matrix(1, P, lambda i, j: sp.Symbol(f"z_{j}"))
    A = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"a_{i}{j}"))
    # W_v W_y = v W_y: substitute W_v Z = W_v W_y z = v W_y z
    lhs = W_y * z + m / L * (v * W_y * z) * A.T
    rhs = W_y * (z * (sp.eye(P) + m * v / L * A.T))
    return Verdict(
        (lhs - rhs).expand() == sp.zeros(2, P),
        "with $W_v W_y = v W_y$: $Z_{\\ell-1} = W_y z_{\\ell-1}$ implies $Z_\\ell = W_y z_\\ell$ (`expand` = 0, $P = 3$)",
    )


def _exact_instances(depths=(1, 2, 3)):
    """Random exact rational instances with W_v W_y = v W_y (W_y an eigenvector of W_v)."""
    rng = np.random.default_rng(SEED)
    P, N = P_SYMBOLIC, 3
    instances = []
    for depth in depths:
        W_y = random_rational_matrix(rng, N, 1)
        while W_y.norm() == 0:
            W_y = random_rational_matrix(rng, N, 1)
        v_value = sp.Rational(int(rng.integers(-5, 6)), int(rng.integers(1, 4)))
        K = random_rational_matrix(rng, N, N)
        # W_v = v Π + K (I - Π), Π the projector on W_y: W_v W_y = v W_y, otherwise generic
        Pi = W_y * W_y.T / (W_y.T * W_y)[0, 0]
        W_v = v_value * Pi + K * (sp.eye(N) - Pi)
        W_o = random_rational_matrix(rng, 1, N)
        y = random_rational_matrix(rng, P, 1)
        As = [random_row_stochastic(rng, P, P) for _ in range(depth)]
        ps = [random_row_stochastic(rng, 1, P) for _ in range(depth)]
        m_value = sp.Rational(int(rng.integers(-7, 8)), int(rng.integers(1, 4)))
        instances.append((W_y, W_v, W_o, y, As, ps, m_value, v_value))
    return instances


def recursion_prediction(y, context_attention, test_attention, m_tilde, g_value):
    """ŷ_L from the label-row recursion (paper eq. (81)): ``z_ℓ = z_{ℓ-1}(I + (m̃/L) A_ℓᵀ)``, ``ŷ = (g/L) Σ z_{ℓ-1} p_ℓᵀ``.

    References
    ----------
    Paper eq. (81).

    Examples
    --------
    >>> recursion_prediction(sp.Matrix([2]), [sp.Matrix([[1]])], [sp.Matrix([[1]])], 5, 1)
    2
    """
    depth = len(context_attention)
    z = y.T
    total = 0
    for A_l, p_l in zip(context_attention, test_attention):
        total += g_value * (z * p_l.T)[0, 0] / depth
        z = z + m_tilde / depth * z * A_l.T
    return total


def _against_forward(predict, what: str) -> Verdict:
    failures = []
    for depth, (W_y, W_v, W_o, y, As, ps, m_value, v_value) in zip((1, 2, 3), _exact_instances()):
        if W_v * W_y != v_value * W_y:
            return Verdict(False, "the random instance does not satisfy W_v W_y = v W_y")
        g_value = (W_o * W_v * W_y)[0, 0]
        forward = forward_prediction(W_y, W_v, W_o, y, As, ps, m_value)
        if sp.simplify(forward - predict(y, As, ps, m_value * v_value, g_value)) != 0:
            failures.append(f"L = {depth}")
    return Verdict(
        not failures,
        f"{what} equals the full forward pass of eq. (10) exactly (rational arithmetic) at random weights "
        f"with $W_v W_y = v W_y$, random row-stochastic $A_\\ell$, $p_\\ell$, $P = {P_SYMBOLIC}$, $N = 3$, "
        f"$L = 1, 2, 3$ (seed {SEED})" + (": fails at " + ", ".join(failures) if failures else ""),
    )


def _recursion_check() -> Verdict:
    return _against_forward(recursion_prediction, "the recursion")


def _closed_form_check() -> Verdict:
    return _against_forward(closed_form_prediction, "the closed form")


def _symbolic_attention(depth: int, P: int):
    As = [sp.Matrix(P, P, lambda i, j, l=l: sp.Symbol(f"a^{l}_{i}{j}")) for l in range(1, depth + 1)]
    ps = [sp.Matrix(1, P, lambda i, j, l=l: sp.Symbol(f"p^{l}_{j}")) for l in range(1, depth + 1)]
    y = sp.Matrix(P, 1, lambda i, j: sp.Symbol(f"y_{i}"))
    return y, As, ps


def _parallel_limit_check() -> Verdict:
    y, As, ps = _symbolic_attention(3, P_SYMBOLIC)
    closed = closed_form_prediction(y, As, ps, 0, g)
    parallel = g / 3 * sum((p * y)[0, 0] for p in ps)
    return equal_symbolic(closed, parallel, "$m = 0$, $L = 3$, $P = 3$, symbolic $A_\\ell$, $p_\\ell$", method="expand")


def _two_layer_check() -> Verdict:
    y, As, ps = _symbolic_attention(2, P_SYMBOLIC)
    closed = closed_form_prediction(y, As, ps, m * v, g)
    stated = g / 2 * ((ps[0] * y)[0, 0] + (ps[1] * y)[0, 0]) + g * m * v / 4 * (ps[1] * As[0] * y)[0, 0]
    return equal_symbolic(closed, stated, "$L = 2$, $P = 3$, symbolic $A_1$, $p_1$, $p_2$", method="expand")


def _rho_check() -> Verdict:
    P = P_SYMBOLIC
    A = sp.Matrix(P, P, lambda i, j: sp.Symbol(f"a_{i}{j}"))
    J = sp.ones(P, P) / P
    objective = sum((A - rho * sp.eye(P) - (1 - rho) * J).applyfunc(lambda e: e**2))
    (solution,) = sp.solve(sp.diff(objective, rho), rho)
    general = all_of(
        equal_symbolic(solution, (A.trace() - sum(A) / P) / (P - 1), "stationary point of the Frobenius objective"),
        equal_symbolic(sp.diff(objective, rho, 2), 2 * (P - 1), "second derivative $2(P-1) > 0$: a minimum"),
    )
    # row-stochastic: replace the last entry of each row by 1 - (the others)
    stochastic = {A[i, P - 1]: 1 - sum(A[i, j] for j in range(P - 1)) for i in range(P)}
    reduced = equal_symbolic(solution.subs(stochastic), (A.trace().subs(stochastic) - 1) / (P - 1),
                             "row-stochastic $A$")
    return all_of(general, reduced, Verdict(True, f"$P = {P}$ symbolic entries"))


def _substitution_check() -> Verdict:
    P = P_SYMBOLIC
    y = sp.Matrix(P, 1, lambda i, j: sp.Symbol(f"y_{i}"))
    p2 = sp.Matrix(1, P, lambda i, j: sp.Symbol(f"p_{j}"))
    A1 = rho * sp.eye(P) + (1 - rho) * sp.ones(P, P) / P
    lhs = (p2 * A1 * y)[0, 0]
    y_bar = sum(y) / P
    rhs = rho * (p2 * y)[0, 0] + (1 - rho) * y_bar * sum(p2)
    normalised = {p2[0, P - 1]: 1 - sum(p2[0, j] for j in range(P - 1))}
    return all_of(
        equal_symbolic(lhs, rhs, "any $p_2$", method="expand"),
        equal_symbolic(rhs.subs(normalised), (rho * (p2 * y)[0, 0] + (1 - rho) * y_bar).subs(normalised),
                       "$p_2 \\mathbf 1 = 1$", method="expand"),
    )


# --------------------------------------------------------------------------- tables


def _coefficient_table() -> Table:
    rows = []
    rho_2 = REPORTED_RHO["top-2"]
    rows.append(("top-2", "0.9999", "not reported",
                 f"$0.5 + {fmt(rho_2 / 4, math=False)}\\,\\tilde m$", f"${fmt((1 - rho_2) / 4, math=False)}\\,\\tilde m$"))
    rho_16 = REPORTED_RHO["top-16"]
    m16 = REPORTED_M_TOP16
    rows.append(("top-16", "0.0989", "−2.3", fmt(0.5 + m16 * rho_16 / 4), fmt(m16 * (1 - rho_16) / 4)))
    return Table(
        caption=(
            "Two-layer prediction $\\hat y_2 / g = \\tfrac12 p_1 y + c_2\\, p_2 y + c_{\\bar y}\\, \\bar y$ "
            "(step 8) with the paper's fitted $\\rho$ (eq. (83)) and learned $m$ (eq. (84)), taking $v = 1$ "
            "so that $\\tilde m = m$. Computed from the values the paper reports, not from a trained model."
        ),
        headers=("task", "$\\rho$", "$m$", "$c_2 = \\tfrac12 + \\tilde m\\rho/4$", "$c_{\\bar y} = \\tilde m(1-\\rho)/4$"),
        rows=tuple(rows),
    )


def _float_check_table() -> Table:
    # floating-point instance: the recursion (81) and the closed form (82) agree at every depth
    rng = np.random.default_rng(SEED)
    P = 8
    rows = []
    for depth in (1, 2, 4, 8):
        y = rng.standard_normal(P)
        logits = rng.standard_normal((depth, P, P))
        As = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        test_logits = rng.standard_normal((depth, P))
        ps = np.exp(test_logits) / np.exp(test_logits).sum(axis=-1, keepdims=True)
        m_tilde = -2.3
        # recursion (81): z_ℓ = z_{ℓ-1}(I + (m̃/L) A_ℓᵀ), ŷ = (1/L) Σ z_{ℓ-1} p_ℓᵀ (g = 1)
        z = y.copy()
        recursion = 0.0
        for A_l, p_l in zip(As, ps):
            recursion += z @ p_l / depth
            z = z @ (np.eye(P) + m_tilde / depth * A_l.T)
        # closed form (82) with the ordered product written out
        closed = 0.0
        for ell in range(depth):
            product = reduce(np.matmul, [np.eye(P) + m_tilde / depth * As[j].T for j in range(ell)], np.eye(P))
            closed += y @ product @ ps[ell] / depth
        parallel = float(np.mean(ps @ y))
        rows.append((str(depth), fmt(recursion), fmt(closed), fmt(parallel)))
    return Table(
        caption=(
            "Floating-point instance ($P = 8$, softmax-normalised random $A_\\ell$ and $p_\\ell$, $\\tilde m = -2.3$, "
            f"$g = 1$, seed {SEED}): the recursion (81) and the closed form (82) agree; the last column is the "
            "$m = 0$ (parallel) prediction of eq. (60) on the same attention."
        ),
        headers=("$L$", "recursion (81)", "closed form (82)", "parallel, $m = 0$"),
        rows=tuple(rows),
    )


def build() -> Derivation:
    """The derivation of appendix C.3 (context updates), eqs. (78)-(87).

    Returns
    -------
    Derivation

    References
    ----------
    Paper eqs. (75)-(87).

    Examples
    --------
    >>> [s.equation for s in build().steps][:3]
    ['10, 75-77', '81', '81']
    """
    I_P = "I_P"
    steps = (
        Step(
            title="Block form of the update with the mask M(m)",
            equation="10, 75-77",
            explanation=(
                "Split the label stream $H_y^\\ell = [Z_\\ell,\\; h_\\ell]$ into the $P$ context columns and the test "
                "column. With the mask $M(m)$ the attention of layer $\\ell$ is "
                "$A^\\ell = \\begin{pmatrix} m A_\\ell & 0 \\\\ p_\\ell & 0 \\end{pmatrix}$: context tokens attend to "
                "each other with weight $m$ (the row-stochastic softmax block $A_\\ell$), the test token reads the "
                "context through its attention row $p_\\ell$, and no token attends to the test token."
            ),
            statement=(
                "Z_\\ell = Z_{\\ell-1} + \\frac{m}{L} W_v Z_{\\ell-1} A_\\ell^\\top, \\qquad "
                "h_\\ell = h_{\\ell-1} + \\frac{1}{L} W_v Z_{\\ell-1} p_\\ell^\\top"
            ),
            check=_block_update_check,
        ),
        Step(
            title="Reduction to the label direction",
            equation="81",
            explanation=(
                "Initially $Z_0 = W_y y^\\top$ and $h_0 = 0$ ($y_{\\text{in}} = (y_1, \\dots, y_P, 0)$). If the label "
                "embedding is an eigenvector of the shared value matrix, $W_v W_y = v W_y$, every $Z_\\ell$ stays "
                "of the form $W_y z_\\ell$ with a row vector $z_\\ell \\in \\mathbb R^{1\\times P}$. Paper eq. (81) is "
                "this recursion with $v$ absorbed into $m$ ($\\tilde m = m v$; $\\tilde m = m$ when $v = 1$)."
            ),
            statement=(
                f"z_0 = y^\\top, \\qquad z_\\ell = z_{{\\ell-1}}\\Big({I_P} + \\frac{{\\tilde m}}{{L}} A_\\ell^\\top\\Big), "
                "\\qquad \\tilde m = m v"
            ),
            assumptions=("$W_v W_y = v W_y$ (the label direction is invariant under the shared $W_v$)",),
            check=_reduction_check,
        ),
        Step(
            title="Readout",
            equation="81",
            explanation="With $g = W_o W_v W_y$ (as in eq. (60)) the readout of the test column is a sum over layers.",
            statement="\\hat y_L = W_o h_L = \\frac{g}{L} \\sum_{\\ell=1}^{L} z_{\\ell-1}\\, p_\\ell^\\top",
            assumptions=("$W_v W_y = v W_y$",),
            check=_recursion_check,
        ),
        Step(
            title="Closed form",
            equation="82",
            explanation="Unrolling the recursion gives an ordered product (earlier layers to the left).",
            statement=(
                "\\hat y_L = \\frac{g}{L} \\sum_{\\ell=1}^{L} y^\\top \\Bigg[\\prod_{j=1}^{\\ell-1}"
                f"\\Big({I_P} + \\frac{{\\tilde m}}{{L}} A_j^\\top\\Big)\\Bigg] p_\\ell^\\top"
            ),
            assumptions=("$W_v W_y = v W_y$",),
            check=_closed_form_check,
        ),
        Step(
            title="No context updates: the parallel model",
            equation="59-60",
            explanation="With $m = 0$ (the mask $M(0)$) the products are identities and each layer is an independent predictor.",
            statement="\\hat y_L\\big|_{m=0} = \\frac{1}{L} \\sum_{\\ell=1}^{L} g\\, p_\\ell\\, y = \\frac1L\\sum_{\\ell=1}^L f_\\ell",
            check=_parallel_limit_check,
        ),
        Step(
            title="Two layers",
            equation="78-80",
            explanation="For $L = 2$ the context update contributes one cross term: layer 2 reads labels that layer 1 mixed.",
            statement=(
                "\\hat y_2 = \\frac{g}{2}\\big(p_1 y + p_2 y\\big) + \\frac{g \\tilde m}{4}\\, p_2 A_1 y"
            ),
            check=_two_layer_check,
        ),
        Step(
            title="Least-squares fit of the first-layer context attention",
            equation="83",
            explanation=(
                "Fitting $A_1 \\approx \\rho I_P + (1-\\rho) J_P$ with $J_P = \\mathbf 1 \\mathbf 1^\\top / P$ in the "
                "Frobenius norm has a closed-form minimiser; for a row-stochastic $A_1$ it depends only on the trace. "
                "$\\rho = 1$ means each context token keeps its own label, $\\rho = 0$ that it is replaced by the "
                "context mean."
            ),
            statement=(
                "\\hat\\rho = \\arg\\min_\\rho \\big\\lVert A_1 - \\rho I_P - (1-\\rho) J_P \\big\\rVert_F^2 = "
                "\\frac{\\operatorname{tr} A_1 - \\mathbf 1^\\top A_1 \\mathbf 1 / P}{P - 1} = "
                "\\frac{\\operatorname{tr} A_1 - 1}{P - 1}"
            ),
            assumptions=("last equality: $A_1 \\mathbf 1 = \\mathbf 1$ (softmax rows)",),
            check=_rho_check,
        ),
        Step(
            title="Two layers with the fitted context attention",
            equation="85-87",
            explanation=(
                "Substituting $A_1 = \\rho I_P + (1-\\rho)J_P$ in step 6, and using $p_2 \\mathbf 1 = 1$, splits the "
                "cross term into a re-weighting of the second layer's own read-out and a pull towards the context "
                "mean $\\bar y = \\mathbf 1^\\top y / P$."
            ),
            statement=(
                "\\hat y_2 = g\\Big[\\tfrac12\\, p_1 y + \\Big(\\tfrac12 + \\frac{\\tilde m \\rho}{4}\\Big) p_2 y + "
                "\\frac{\\tilde m (1-\\rho)}{4}\\, \\bar y\\Big]"
            ),
            assumptions=("$A_1 = \\rho I_P + (1-\\rho) J_P$ exactly", "$p_2 \\mathbf 1 = 1$"),
            check=_substitution_check,
        ),
    )
    return Derivation(
        name="context_updates",
        title="Context updates with the mask M(m)",
        paper_part="Appendix C.3, eqs. (78)-(87)",
        steps=steps,
        summary=(
            "In the controlled nonlinear model of section 4.2 the context states are frozen (mask $M(0)$) and the "
            "prediction is an average of independent layer predictors (eq. (60)). Appendix C.3 lets context tokens "
            "update each other with a learned scalar $m$ shared by all layers (mask $M(m)$). This page rewrites the "
            "residual update of eq. (10) under that mask into a recursion on the label row, its closed form, the "
            "two-layer case, and the least-squares summary $\\rho$ of the first layer's context attention. There is "
            "no `theory` module for this part: the objects are sympy matrices built here, and every step is checked "
            "against the full block update."
        ),
        assumptions=(
            "Nonlinear model of eqs. (9)-(10) with fixed input stream $H_x$ and shared $W_v$; attention rows are "
            "arbitrary row-stochastic vectors (the algebra does not use the softmax form).",
            "Test token: label input $0$ and never attended to (last column of $M(m)$ is zero).",
        ),
        validity="Exact (an algebraic identity) for every $P$, $N$, $L$ and every row-stochastic attention.",
        tables=(_coefficient_table, _float_check_table),
        notes=(
            "For top-16 ($\\rho \\approx 0.1$) the learned $m \\approx -2.3$ makes the two-layer model subtract about "
            "half of the context mean $\\bar y$ and slightly down-weight the second layer's own read-out; for top-2 "
            "($\\rho \\approx 1$) the context update only rescales the second layer's read-out, whatever $m$ is. "
            "This page only rewrites the model; whether the top-16 model saturates with depth (as the paper reports) "
            "is measured by the numerics, not implied by these identities. The two-layer steps are matched to the "
            "paper's numbering by position: eqs. (78)-(80) state the two-layer case before the general recursion "
            "(81)-(82), eqs. (85)-(87) return to it after the fit (83)-(84)."
        ),
    )
