"""A claim, its verdict, and the registry in which each claim is entered once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from theory.validation import check_choice

#: contradicted: adequate measurements exclude the claim; inconclusive: ``reason`` says why
STATUSES = ("reproduced", "contradicted", "inconclusive", "not tested")
#: why a claim that misses its criterion is inconclusive rather than contradicted
INCONCLUSIVE_REASONS = ("budget", "checks", "resolution", "training", "variants", "bound")


@dataclass(frozen=True)
class Claim:
    """One claim of the paper and what this reproduction measured.

    Attributes
    ----------
    criterion : str
        How it is tested here.
    status : {'reproduced', 'contradicted', 'inconclusive', 'not tested'}
    reason : str
        Why inconclusive (one of :data:`INCONCLUSIVE_REASONS` first) or
        what excludes the claim.
    summary : str
        The deciding numbers in one sentence (for the opening paragraph).
    table : tuple of tuple
        The numbers behind ``evidence``: a header row, then one row per item.

    References
    ----------
    Paper sections 3-4.

    Examples
    --------
    >>> Claim("x", "p", "c", "not tested", "e").mark, Claim("x", "p", "c", "inconclusive", "e", reason="budget").mark
    ('NOT TESTED', 'INCONCLUSIVE')
    """

    id: str
    paper: str
    criterion: str
    status: str
    evidence: str
    families: tuple = ()
    reason: str = ""
    summary: str = ""
    table: tuple = ()

    @property
    def kind(self) -> str:
        """``'paper'`` or ``'contrast'`` (the package's own), from :data:`REGISTRY`."""
        return next((spec.kind for spec in REGISTRY.specs if spec.id == self.id), "paper")

    @property
    def table_markdown(self) -> str:
        """:attr:`table` as a Markdown table ('' without one)."""
        if not self.table:
            return ""
        header, *rows = self.table
        return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                         + ["| " + " | ".join(map(str, row)) + " |" for row in rows])

    @property
    def mark(self) -> str:
        return self.status.upper() if self.status in STATUSES[:3] else "NOT TESTED"


def verdict(passed: bool | None, *, contradicted: bool = False, reason: str = "") -> dict:
    """``status`` and ``reason`` of a claim (``passed`` None: not tested)."""
    if passed is None:
        return {"status": "not tested"}
    if passed:
        return {"status": "reproduced"}
    return {"status": "contradicted" if contradicted else "inconclusive", "reason": reason}


def not_tested(criterion: str, evidence: str, **fields) -> dict:
    """The fields of a claim there is nothing to judge by; ``evidence`` says why."""
    return dict(criterion=criterion, status="not tested", evidence=evidence, **fields)


@dataclass(frozen=True)
class ClaimSpec:
    """One entry of :class:`ClaimRegistry`: what the claim is and how it is judged.

    Attributes
    ----------
    kind : {'paper', 'contrast'}
        A claim of the paper, or a contrast of the package's own.
    topic : str
        A central claim's name in the report's opening paragraph, or ''.
    judge : callable
        ``judge(ctx, consistency) -> dict``: the :class:`Claim` fields it measures.

    Examples
    --------
    >>> from numerics.experiments.reproduce.report import CLAIMS
    >>> [spec.id for spec in CLAIMS if spec.kind == "contrast"]
    ['inverse_depth', 'lazy_contrast', 'shipped_rerun']
    """

    id: str
    kind: str
    figures: tuple
    topic: str
    judge: Callable
    paper: str = ""
    families: tuple = ()

    def evaluate(self, ctx, consistency=None) -> Claim:
        return Claim(self.id, self.paper, **{"families": self.families, **self.judge(ctx, consistency)})


class ClaimRegistry:
    """The claims a reproduction judges, in report order; :attr:`specs`, :attr:`ids`,
    :attr:`figures` and :attr:`central` are views of it.

    Examples
    --------
    >>> registry = ClaimRegistry()
    >>> @registry.claim("flat", paper="The loss is flat.", figures=("fig1",), topic="Flatness")
    ... def _flat(ctx, consistency):
    ...     return dict(criterion="no change", evidence="0 %", **verdict(True))
    >>> registry.ids, registry.figures, registry.central
    (('flat',), {'flat': ('fig1',)}, {'flat': 'Flatness'})
    >>> [(c.id, c.status) for c in registry.evaluate(ctx=None)]
    [('flat', 'reproduced')]
    """

    def __init__(self) -> None:
        self._specs: dict[str, ClaimSpec] = {}

    def claim(self, claim_id: str, *, paper: str, kind: str = "paper", figures: tuple = (), families: tuple = (),
              topic: str = "") -> Callable:
        """Decorator: register ``judge(ctx, consistency) -> dict`` for ``claim_id``."""
        check_choice("kind", kind, ("paper", "contrast"))

        def register(judge: Callable) -> Callable:
            if claim_id in self._specs:
                raise ValueError(f"claim {claim_id!r} is registered twice")
            self._specs[claim_id] = ClaimSpec(claim_id, kind, tuple(figures), topic, judge, paper, tuple(families))
            return judge

        return register

    @property
    def specs(self) -> tuple:
        return tuple(self._specs.values())

    @property
    def ids(self) -> tuple:
        return tuple(self._specs)

    @property
    def figures(self) -> dict:
        return {spec.id: spec.figures for spec in self._specs.values()}

    @property
    def central(self) -> dict:
        """Central claims: id → name in the report's opening paragraph."""
        return {spec.id: spec.topic for spec in self._specs.values() if spec.topic}

    def evaluate(self, ctx, consistency=None) -> tuple:
        return tuple(spec.evaluate(ctx, consistency) for spec in self._specs.values())


#: the claims of a reproduction (filled by ``_verdicts``)
REGISTRY = ClaimRegistry()
#: decorator registering a verdict function in :data:`REGISTRY`
claim = REGISTRY.claim
