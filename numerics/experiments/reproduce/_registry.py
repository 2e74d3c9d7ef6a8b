"""A claim, its verdict, and the registry in which each claim is entered once."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from theory.validation import check_choice

from ..criteria import Verdict
from .._markdown import markdown_table

@dataclass(frozen=True)
class Claim:
    """One claim of the paper and what this reproduction measured.

    Attributes
    ----------
    criterion : str
        How it is tested here.
    status : Verdict
        The reported verdict (given in either spelling, :meth:`~numerics.experiments.criteria.Verdict.read`).
    reason : str
        Why inconclusive (a :class:`~numerics.experiments.criteria.Reason` first) or
        what excludes the claim.
    summary : str
        The deciding numbers in one sentence (for the opening paragraph).
    table : tuple of tuple
        The numbers behind ``evidence``: a header row, then one row per item.
    measured_status : Verdict
        What the numbers alone say (default: ``status``); differs from ``status``
        only when the claim is not judged.
    note : str
        Why the status is not the numbers' own, shown in :attr:`mark` (e.g. the scale).

    References
    ----------
    Paper sections 3-4.

    Examples
    --------
    >>> Claim("x", "p", "c", "not tested", "e").mark, Claim("x", "p", "c", "inconclusive", "e", reason="budget").mark
    ('NOT TESTED', 'INCONCLUSIVE')
    >>> unjudged = Claim("x", "p", "c", "reproduced", "e").not_judged("smoke scale")
    >>> unjudged.mark, unjudged.measured_status.word
    ('NOT JUDGED (smoke scale)', 'reproduced')
    """

    id: str
    paper: str
    criterion: str
    status: Verdict
    evidence: str
    families: tuple = ()
    reason: str = ""
    summary: str = ""
    table: tuple = ()
    measured_status: Verdict | str = ""
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Verdict.read(self.status, "status"))
        object.__setattr__(self, "measured_status", Verdict.read(self.measured_status or self.status,
                                                                 "measured_status"))

    def not_judged(self, why: str) -> "Claim":
        """This claim with no verdict (status NOT JUDGED, ``note`` = ``why``); the measured status is kept."""
        return dataclasses.replace(self, status=Verdict.NOT_JUDGED, note=why)

    def noted(self, note: str) -> "Claim":
        """This claim with ``note`` (why it reads as it does) added to its :attr:`mark`."""
        return dataclasses.replace(self, note=note)

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
        return "\n".join(markdown_table(header, rows))

    @property
    def mark(self) -> str:
        """The verdict as the report prints it, then the note in parentheses."""
        return self.status + (f" ({self.note})" if self.note else "")


def verdict(passed: bool | None, *, contradicted: bool = False, reason: str = "") -> dict:
    """``status`` and ``reason`` of a claim (``passed`` None: not tested)."""
    if passed is None:
        return {"status": Verdict.NOT_TESTED}
    if passed:
        return {"status": Verdict.REPRODUCED}
    return {"status": Verdict.CONTRADICTED if contradicted else Verdict.INCONCLUSIVE, "reason": reason}


def not_tested(criterion: str, evidence: str, **fields) -> dict:
    """The fields of a claim there is nothing to judge by; ``evidence`` says why."""
    return dict(criterion=criterion, status=Verdict.NOT_TESTED, evidence=evidence, **fields)


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
    >>> [(c.id, c.status.word) for c in registry.evaluate(ctx=None)]
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
        """Every claim judged on ``ctx``, then as reported: see :func:`as_reported`."""
        return tuple(as_reported(spec.evaluate(ctx, consistency), ctx) for spec in self._specs.values())


def as_reported(claim: Claim, ctx) -> Claim:
    """``claim`` as the report states it, from what ``ctx`` says about its inputs and its scale.

    * A claim not tested because an input it reads is unavailable (``ctx.unavailable``: input
      name → why, matched against the claim's ``families``) carries that reason as its note.
    * At a scale whose numbers support no verdict (``ctx.scale.judges_claims`` false) every claim
      is not judged, with the scale's name as the note; ``measured_status`` keeps the numbers' verdict.
    * So is a claim reading a family the scale runs below the sizes the paper's softmax numbers
      imply (``ctx.scale.undersized_families()``); its evidence says which.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from numerics.experiments.reproduce.scales import get_scale
    >>> ctx = SimpleNamespace(scale=get_scale("smoke"), unavailable={"certified study": "not found"})
    >>> c = as_reported(Claim("x", "p", "c", "not tested", "e", families=("certified study",)), ctx)
    >>> c.mark, c.measured_status.word
    ('NOT JUDGED (smoke scale)', 'not tested')
    >>> quick = SimpleNamespace(scale=get_scale("quick"), unavailable={"certified study": "not found"})
    >>> as_reported(Claim("x", "p", "c", "not tested", "e", families=("certified study",)), quick).mark
    'NOT TESTED (not found)'
    >>> small = as_reported(Claim("x", "p", "c", "inconclusive", "e.", families=("context_updates",)), quick)
    >>> small.mark, small.measured_status.word, small.evidence.split(": ")[1].split(",")[0]
    ('NOT JUDGED (quick scale)', 'inconclusive', 'context_updates runs at d = 8')
    """
    unavailable = dict(getattr(ctx, "unavailable", None) or {})
    why = [unavailable[name] for name in claim.families if name in unavailable]
    if claim.status is Verdict.NOT_TESTED and why and not claim.note:
        claim = claim.noted("; ".join(dict.fromkeys(why)))
    scale = getattr(ctx, "scale", None)
    if scale is not None and not scale.judges_claims and claim.status is not Verdict.NOT_JUDGED:
        claim = claim.not_judged(f"{scale.name} scale")
    undersized = scale.undersized_families() if scale is not None else {}
    small = [undersized[name] for name in claim.families if name in undersized]
    if small and claim.status is not Verdict.NOT_JUDGED:
        claim = dataclasses.replace(claim.not_judged(f"{scale.name} scale"),
                                    evidence=f"{claim.evidence} Not judged: {'; '.join(small)}.")
    return claim


#: the claims of a reproduction (filled by ``_verdicts``)
REGISTRY = ClaimRegistry()
#: decorator registering a verdict function in :data:`REGISTRY`
claim = REGISTRY.claim
