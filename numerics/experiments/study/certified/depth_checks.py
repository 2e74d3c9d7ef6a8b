"""Which depths a verdict may rest on: the step-doubling certificates per depth, long-cap pairs, the crossover depth.

Split from :mod:`~numerics.experiments.study.certified.statistics` by job: these decide which checks a depth
has; the statistics compute them.
"""

from __future__ import annotations

from .plan import shipped_U

__all__ = ["doubling_passed"]


def _long_pairs(members) -> list:
    """``(start, learning_rate, cap)`` of the longest-cap candidates whose half cap also ran (same start and rate).

    A cell with long caps (:attr:`~numerics.experiments.study.certified.plan.CertifiedPlan.long_caps`) trains some
    starts at S and 2S beyond the plan's usual caps; none elsewhere (the usual candidates of one start share a cap).

    Examples
    --------
    >>> from types import SimpleNamespace as R
    >>> rows = [R(start="cold", learning_rate=1e-3, steps=s, doubled=False) for s in (6000, 24000, 48000)]
    >>> _long_pairs(rows)
    [('cold', 0.001, 48000)]
    """
    caps = {(r.start, r.learning_rate, r.steps) for r in members if not r.doubled and r.steps > 0}
    if not caps:
        return []
    top = max(steps for _, _, steps in caps)
    return sorted((a, b, top) for a, b, steps in caps if steps == top and (a, b, top // 2) in caps)


def doubling_passed(certificates) -> dict:
    """``{depth: passed}`` of the step-doubling certificates: a depth with several passes only if every one does.

    Examples
    --------
    >>> from types import SimpleNamespace as C
    >>> doubling_passed([C(name="doubling", depth=4, passed=True), C(name="doubling", depth=4, passed=False)])
    {4: False}
    """
    out: dict = {}
    for c in certificates:
        if c.name == "doubling":
            out[c.depth] = out.get(c.depth, True) and c.passed
    return out


def _crossover(setting: tuple) -> int | None:
    """The crossover depth of the setting's shipped ``U_L`` (:meth:`theory.expressible.ExpressibleLoss.crossover_depth`).

    None where no ``U_L`` is shipped (the setting gets no verdicts by range).
    """
    a, b, k, d, N, P = setting
    expressible = shipped_U(a, b, d, P, k)
    return None if expressible is None else expressible.crossover_depth()
