"""A derivation as an ordered list of checked steps, rendered to a MyST page.

A :class:`Derivation` is a titled sequence of :class:`Step` objects. Each step
states one equation (LaTeX), cites the paper's equation number, says under
which assumptions and in which window it holds, and carries a ``check``
callable that *verifies* the step (an identity simplifies to zero, a limit or
integral evaluates to the stated closed form, a series matches numerically at
random points) and returns a :class:`Verdict`. :func:`verify` runs the checks
in order and raises :class:`DerivationError`, naming the derivation and the
step, at the first one that does not hold. :func:`render` turns a verified
derivation into a deterministic Markdown (MyST) page.

Determinism of the pages: a verdict's ``detail`` (which is rendered) states
*what* was checked and at which tolerance, never a measured round-off error
(that would differ between machines); numerical tables are formatted with a
fixed number of significant digits by :func:`fmt`.
"""

from __future__ import annotations

import math as _math
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import mpmath
import numpy as np
import sympy as sp

__all__ = [
    "Derivation",
    "DerivationError",
    "Step",
    "Table",
    "Verdict",
    "VerifiedDerivation",
    "all_of",
    "at_precision",
    "cite",
    "close_numeric",
    "equal_noncommutative",
    "equal_symbolic",
    "fmt",
    "latex",
    "mp_close",
    "random_rational_matrix",
    "random_row_stochastic",
    "render",
    "verify",
]


@dataclass(frozen=True)
class Verdict:
    """Outcome of one step's check.

    Parameters
    ----------
    holds : bool
        Whether the step was verified.
    detail : str
        What was checked, as rendered on the page (Markdown), e.g.
        ``"simplify(lhs - rhs) = 0"``. Must be deterministic.
    measured : float or None
        Largest discrepancy found (numeric checks only); shown in error
        messages, never on the page.

    References
    ----------
    Used by every derivation page (paper appendices A-C).

    Examples
    --------
    >>> Verdict(True, "exact").holds
    True
    """

    holds: bool
    detail: str
    measured: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))  # numpy booleans from comparisons
        if self.measured is not None:
            object.__setattr__(self, "measured", float(self.measured))


@dataclass(frozen=True)
class Step:
    """One stated and verified step of a derivation.

    Parameters
    ----------
    title : str
        Short name of the step (used in error messages and as a heading).
    statement : str
        The step's equation in LaTeX (rendered as display math).
    check : callable
        ``check() -> Verdict``; an exception raised inside counts as failure.
    equation : str, optional
        The paper's equation number(s) the step states, e.g. ``"24"`` or
        ``"33-34"``; empty when the step is the package's own.
    explanation : str, optional
        Markdown prose before the statement.
    assumptions : tuple of str, optional
        Assumptions the step uses (Markdown, may contain ``$...$``).
    validity : str, optional
        The window in which the step holds (Markdown), empty if exact.

    References
    ----------
    Paper appendices A-C (each step cites its own equation).

    Examples
    --------
    >>> s = Step("trivial", r"1 + 1 = 2", lambda: Verdict(True, "arithmetic"))
    >>> s.check().holds
    True
    """

    title: str
    statement: str
    check: Callable[[], Verdict]
    equation: str = ""
    explanation: str = ""
    assumptions: tuple[str, ...] = ()
    validity: str = ""


@dataclass(frozen=True)
class Table:
    """A small numerical check table (already formatted strings).

    Parameters
    ----------
    caption : str
        Markdown text shown above the table.
    headers : tuple of str
        Column headers (Markdown, may contain ``$...$``).
    rows : tuple of tuple of str
        Cells, formatted deterministically (see :func:`fmt`).

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> Table("demo", ("x", "y"), (("1", "2"),)).rows[0]
    ('1', '2')
    """

    caption: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.headers):
                raise ValueError(f"table row {row!r} has {len(row)} cells; the table has {len(self.headers)} columns")


@dataclass(frozen=True)
class Derivation:
    """A derivation of one part of the paper's theory, step by step.

    Parameters
    ----------
    name : str
        Identifier (module name), also the page's file name.
    title : str
        Page title.
    paper_part : str
        Where the paper does this, e.g. ``"Appendix A.1, eqs. (19)-(26)"``.
    summary : str
        Markdown introduction.
    steps : tuple of Step
        The ordered steps.
    assumptions : tuple of str
        Assumptions of the whole derivation.
    validity : str
        Validity window of the result.
    tables : tuple of callable
        ``() -> Table`` callables; computed after all steps verify.
    sources : tuple of str
        Fully qualified names of the package objects the page renders.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> d = Derivation("demo", "Demo", "none", "", (Step("s", "x=x", lambda: Verdict(True, "ok")),))
    >>> [v.holds for v in verify(d).verdicts]
    [True]
    """

    name: str
    title: str
    paper_part: str
    summary: str
    steps: tuple[Step, ...]
    assumptions: tuple[str, ...] = ()
    validity: str = ""
    tables: tuple[Callable[[], Table], ...] = ()
    sources: tuple[str, ...] = ()
    notes: str = ""


class DerivationError(RuntimeError):
    """A step of a derivation did not verify.

    The message names the derivation, the step (number and title), the
    paper equation and what failed.

    Attributes
    ----------
    derivation : str
    step : str
    index : int
        1-based number of the step.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> err = DerivationError("demo", 2, "bad step", "24", "residual 1 != 0")
    >>> str(err)
    "derivation 'demo', step 2 'bad step' (paper eq. (24)) does not hold: residual 1 != 0"
    """

    def __init__(self, derivation: str, index: int, step: str, equation: str, reason: str) -> None:
        self.derivation = derivation
        self.index = index
        self.step = step
        self.equation = equation
        self.reason = reason
        where = f" ({cite(equation)})" if equation else ""
        super().__init__(f"derivation {derivation!r}, step {index} {step!r}{where} does not hold: {reason}")


@dataclass(frozen=True)
class VerifiedDerivation:
    """A derivation with the verdicts of all its steps and its computed tables.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> d = Derivation("demo", "Demo", "none", "", (Step("s", "x=x", lambda: Verdict(True, "ok")),))
    >>> verify(d).verdicts[0].detail
    'ok'
    """

    derivation: Derivation
    verdicts: tuple[Verdict, ...]
    tables: tuple[Table, ...] = field(default=())


def verify(derivation: Derivation, *, tables: bool = True) -> VerifiedDerivation:
    """Run every step's check in order; raise at the first failing step.

    Parameters
    ----------
    derivation : Derivation
    tables : bool, default True
        Also compute the numerical tables (after all steps verified).

    Returns
    -------
    VerifiedDerivation

    Raises
    ------
    DerivationError
        Naming the derivation and the step, if a check returns a verdict
        that does not hold or raises.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> bad = Derivation("demo", "Demo", "none", "", (Step("wrong", "1=2", lambda: Verdict(False, "1 != 2")),))
    >>> verify(bad)
    Traceback (most recent call last):
    ...
    derivations._framework.DerivationError: derivation 'demo', step 1 'wrong' does not hold: 1 != 2
    """
    if not isinstance(derivation, Derivation):
        raise TypeError(f"derivation must be a Derivation; got {type(derivation).__name__}")
    verdicts = []
    for index, step in enumerate(derivation.steps, start=1):
        try:
            verdict = step.check()
        except Exception as exc:  # a check that crashes is a step that does not hold
            raise DerivationError(
                derivation.name, index, step.title, step.equation, f"check raised {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(verdict, Verdict):
            raise DerivationError(
                derivation.name, index, step.title, step.equation, f"check returned {verdict!r}, not a Verdict"
            )
        if not verdict.holds:
            reason = verdict.detail
            if verdict.measured is not None:
                reason += f" (measured discrepancy {verdict.measured:.3g})"
            raise DerivationError(derivation.name, index, step.title, step.equation, reason)
        verdicts.append(verdict)
    computed = tuple(make() for make in derivation.tables) if tables else ()
    return VerifiedDerivation(derivation, tuple(verdicts), computed)


# --------------------------------------------------------------------------- checks


def equal_symbolic(lhs: sp.Expr, rhs: sp.Expr, what: str = "", *, method: str = "simplify") -> Verdict:
    """Verdict of ``lhs == rhs`` as commutative sympy expressions.

    ``method`` is ``"simplify"`` (``sp.simplify(lhs - rhs) == 0``),
    ``"expand"`` (``sp.expand``) or ``"equals"`` (sympy's ``equals``, which
    also tries numerical evaluation at random points).

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> x = sp.Symbol("x")
    >>> equal_symbolic((x + 1)**2, x**2 + 2*x + 1).holds
    True
    """
    difference = sp.sympify(lhs) - sp.sympify(rhs)
    if method == "simplify":
        holds = sp.simplify(difference) == 0
    elif method == "expand":
        holds = sp.expand(difference) == 0
    elif method == "equals":
        holds = bool(sp.sympify(lhs).equals(sp.sympify(rhs)))
    else:
        raise ValueError(f"method must be one of 'simplify', 'expand', 'equals'; got {method!r}")
    detail = f"`{method}(lhs − rhs) = 0`" + (f" ({what})" if what else "")
    return Verdict(bool(holds), detail if holds else detail.replace("= 0", "≠ 0"))


def equal_noncommutative(lhs: sp.Expr, rhs: sp.Expr, what: str = "") -> Verdict:
    """Verdict of ``lhs == rhs`` for expressions in non-commuting symbols (term by term).

    References
    ----------
    Paper eqs. (22)-(24).

    Examples
    --------
    >>> S, B = sp.symbols("S B", commutative=False)
    >>> equal_noncommutative(S*(B + S), S*B + S**2).holds
    True
    >>> equal_noncommutative(S*B, B*S).holds
    False
    """
    difference = sp.expand(sp.sympify(lhs) - sp.sympify(rhs))
    holds = difference == 0
    detail = "`expand(lhs − rhs) = 0` term by term in non-commuting symbols" + (f" ({what})" if what else "")
    return Verdict(bool(holds), detail if holds else f"expand(lhs − rhs) = {difference} ≠ 0")


def close_numeric(
    values: Sequence[float] | np.ndarray,
    reference: Sequence[float] | np.ndarray,
    rtol: float,
    what: str,
) -> Verdict:
    """Verdict of ``|values - reference| <= rtol * |reference|`` elementwise.

    The rendered detail names ``what`` and ``rtol``; the measured largest
    relative difference is kept in ``measured`` (not rendered).

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> close_numeric([1.0, 2.0], [1.0, 2.0 + 1e-14], 1e-12, "demo").holds
    True
    >>> close_numeric([1.0], [1.1], 1e-3, "demo").holds
    False
    """
    values = np.asarray([float(v) for v in np.ravel(np.asarray(values, dtype=object))])
    reference = np.asarray([float(v) for v in np.ravel(np.asarray(reference, dtype=object))])
    if values.shape != reference.shape:
        raise ValueError(f"values and reference must have the same shape; got {values.shape} and {reference.shape}")
    scale = np.maximum(np.abs(reference), np.finfo(float).tiny)
    relative = np.abs(values - reference) / scale
    worst = float(np.max(relative)) if relative.size else 0.0
    holds = bool(np.all(np.isfinite(values)) and worst <= rtol)
    return Verdict(holds, f"{what}; relative tolerance {rtol:.0e}", measured=worst)


def all_of(*verdicts: Verdict) -> Verdict:
    """Combine verdicts: holds if all hold; details joined by ``; ``.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> all_of(Verdict(True, "a"), Verdict(True, "b")).detail
    'a; b'
    """
    failing = [v for v in verdicts if not v.holds]
    measured = [v.measured for v in verdicts if v.measured is not None]
    source = failing if failing else verdicts
    return Verdict(not failing, "; ".join(v.detail for v in source), max(measured) if measured else None)


# --------------------------------------------------------------------------- rendering


def fmt(value: float, digits: int = 4, *, math: bool = True) -> str:
    """Format a number deterministically with ``digits`` significant digits.

    Uses plain notation for 1e-3 <= |x| < 1e5 and ``a.bcd × 10^{e}`` LaTeX
    otherwise, wrapped in ``$...$`` unless ``math=False`` (for use inside
    math). Negative numbers use a Unicode minus sign outside math.

    References
    ----------
    Used by every derivation page's check table.

    Examples
    --------
    >>> fmt(0.123456)
    '0.1235'
    >>> fmt(1.5e-7)
    '$1.500 \\\\times 10^{-7}$'
    >>> fmt(-2.5e-5, math=False)
    '-2.500 \\\\times 10^{-5}'
    >>> fmt(-0.5)
    '−0.5000'
    >>> fmt(float("nan"))
    'n/a'
    """
    value = float(value)
    if not _math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e5:
        text = f"{value:.{digits}g}"
        # keep trailing zeros so that every entry shows `digits` significant digits
        if "e" not in text:
            significant = len(text.replace("-", "").replace(".", "").lstrip("0"))
            if significant < digits:
                text += ("" if "." in text else ".") + "0" * (digits - significant)
        return text if math is False else text.replace("-", "−")
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    body = f"{mantissa} \\times 10^{{{int(exponent)}}}"
    return f"${body}$" if math else body


def latex(expr: object) -> str:
    """LaTeX of a sympy object (deterministic for a given sympy version).

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> latex(sp.Symbol("x")**2)
    'x^{2}'
    """
    return sp.latex(expr)


def cite(equation: str) -> str:
    """``"24"`` → ``"paper eq. (24)"``; ``"10, 75-77"`` → ``"paper eqs. (10), (75)–(77)"``.

    References
    ----------
    Paper equation numbering.

    Examples
    --------
    >>> cite("24")
    'paper eq. (24)'
    >>> cite("10, 75-77")
    'paper eqs. (10), (75)–(77)'
    """
    parts = [part.strip() for part in equation.split(",") if part.strip()]
    shown = []
    for part in parts:
        if "-" in part:
            first, last = (x.strip() for x in part.split("-", 1))
            shown.append(f"({first})–({last})")
        else:
            shown.append(f"({part})")
    single = len(parts) == 1 and "-" not in parts[0]
    return ("paper eq. " if single else "paper eqs. ") + ", ".join(shown)


def _bullets(items: Iterable[str]) -> str:
    return "\n".join(f"- {item}" for item in items)


def render(verified: VerifiedDerivation) -> str:
    """The MyST Markdown page of a verified derivation.

    Parameters
    ----------
    verified : VerifiedDerivation
        Output of :func:`verify`.

    Returns
    -------
    str
        The page text, ending in a single newline.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> d = Derivation("demo", "Demo", "nowhere", "Intro.", (Step("s", "x = x", lambda: Verdict(True, "ok")),))
    >>> page = render(verify(d))
    >>> page.splitlines()[0]
    '(derivation-demo)='
    """
    if not isinstance(verified, VerifiedDerivation):
        raise TypeError(f"verified must be a VerifiedDerivation (from verify()); got {type(verified).__name__}")
    d = verified.derivation
    out: list[str] = [
        f"(derivation-{d.name.replace('_', '-')})=",
        f"# {d.title}",
        "",
        f"<!-- Generated by `idepth derive` from derivations/{d.name}.py. Do not edit by hand. -->",
        "",
        f"*Paper:* {d.paper_part}. *Steps verified:* {len(verified.verdicts)} of {len(d.steps)}.",
        "",
        d.summary.strip(),
        "",
    ]
    if d.assumptions:
        out += ["**Assumptions.**", "", _bullets(d.assumptions), ""]
    if d.validity:
        out += [f"**Validity.** {d.validity.strip()}", ""]
    if d.sources:
        rendered = ", ".join(f"{{py:obj}}`{s}`" for s in d.sources)
        out += [f"**Rendered from.** {rendered}", ""]
    for index, (step, verdict) in enumerate(zip(d.steps, verified.verdicts), start=1):
        equation = f" ({cite(step.equation)})" if step.equation else " (this package)"
        out += [f"## Step {index}. {step.title}{equation}", ""]
        if step.explanation:
            out += [step.explanation.strip(), ""]
        out += ["$$", step.statement.strip(), "$$", ""]
        if step.assumptions:
            out += ["*Assumptions:* " + "; ".join(step.assumptions) + ".", ""]
        if step.validity:
            out += [f"*Valid for:* {step.validity.strip()}", ""]
        out += [f"*Verified:* {verdict.detail}.", ""]
    if verified.tables:
        out += ["## Numerical check", ""]
        for table in verified.tables:
            out += [table.caption.strip(), ""]
            out.append("| " + " | ".join(table.headers) + " |")
            out.append("|" + "|".join("---:" for _ in table.headers) + "|")
            for row in table.rows:
                out.append("| " + " | ".join(row) + " |")
            out.append("")
    if d.notes:
        out += ["## Notes", "", d.notes.strip(), ""]
    text = "\n".join(out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


def random_rational_matrix(rng: np.random.Generator, rows: int, cols: int) -> sp.Matrix:
    """A random matrix of small rationals ``n/m`` (``|n| <= 9``, ``1 <= m <= 5``) for exact checks.

    References
    ----------
    Paper appendices A-C (exact-arithmetic checks of the model identities).

    Examples
    --------
    >>> random_rational_matrix(np.random.default_rng(0), 2, 2).shape
    (2, 2)
    """
    num = rng.integers(-9, 10, size=(rows, cols))
    den = rng.integers(1, 6, size=(rows, cols))
    return sp.Matrix(rows, cols, lambda i, j: sp.Rational(int(num[i, j]), int(den[i, j])))


def random_row_stochastic(rng: np.random.Generator, rows: int, cols: int) -> sp.Matrix:
    """A random matrix of positive rationals whose rows sum to 1 (an exact stand-in for softmax rows).

    References
    ----------
    Paper eqs. (9)-(10) (attention rows).

    Examples
    --------
    >>> A = random_row_stochastic(np.random.default_rng(0), 2, 3)
    >>> [sum(A.row(i)) for i in range(2)]
    [1, 1]
    """
    weights = rng.integers(1, 10, size=(rows, cols))
    return sp.Matrix(rows, cols, lambda i, j: sp.Rational(int(weights[i, j]), int(weights[i].sum())))


def at_precision(dps: int):
    """Decorator: run a check with ``mpmath`` at ``dps`` decimal digits, restoring the previous precision.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> @at_precision(40)
    ... def digits():
    ...     return mpmath.mp.dps
    >>> digits(), mpmath.mp.dps
    (40, 15)
    """

    def decorate(check):
        def wrapped(*args, **kwargs):
            with mpmath.workdps(dps):
                return check(*args, **kwargs)

        wrapped.__name__ = getattr(check, "__name__", "check")
        wrapped.__doc__ = check.__doc__
        return wrapped

    return decorate


def mp_close(value: object, reference: object, digits: int) -> bool:
    """True when two mpmath numbers agree to ``digits`` significant digits.

    References
    ----------
    Paper appendices A-C.

    Examples
    --------
    >>> mp_close(mpmath.mpf(1), mpmath.mpf(1) + mpmath.mpf(10)**-30, 25)
    True
    """
    value, reference = mpmath.mpmathify(value), mpmath.mpmathify(reference)
    return bool(abs(value - reference) <= mpmath.mpf(10) ** (-digits) * max(abs(reference), mpmath.mpf(10) ** (-digits)))
