"""The verdict vocabulary: :class:`Verdict`, :class:`Reason` and :class:`DepthDependence`.

Part of :mod:`numerics.experiments.criteria` (which re-exports every name here, and is where they are read from);
a module of its own only so that whatever just prints a verdict -- the answer in ``idepth --help`` -- loads neither
sympy nor scipy, which the rules themselves need.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DECIDED", "DepthDependence", "Reason", "Verdict"]


class Verdict(StrEnum):
    """A verdict on a claim: the one vocabulary of the reproduction's claims, the certified study's settings and
    depth ranges, and the answer.

    A member is the word the records and pages print (``certified-study.verdicts.json``, ``REPORT.md``'s marks,
    the answer); :attr:`word` is the same verdict in a sentence and in a reproduction's ``report.json``.
    CONTRADICTED: adequate measurements exclude the claim (every check it rests on ran and passed);
    INCONCLUSIVE: a :class:`Reason` says why not decided; NOT TESTED: nothing to judge it by; NOT JUDGED: a
    scale whose numbers support no verdict.

    Examples
    --------
    >>> Verdict.NOT_TESTED, Verdict.NOT_TESTED.word, f"{Verdict.REPRODUCED}"
    (<Verdict.NOT_TESTED: 'NOT TESTED'>, 'not tested', 'REPRODUCED')
    >>> Verdict.read("inconclusive") is Verdict.INCONCLUSIVE
    True
    >>> Verdict.read("maybe", "status")
    Traceback (most recent call last):
    ...
    ValueError: status must be one of reproduced, contradicted, inconclusive, not tested, not judged; got 'maybe'
    """

    REPRODUCED = "REPRODUCED"
    CONTRADICTED = "CONTRADICTED"
    INCONCLUSIVE = "INCONCLUSIVE"
    NOT_TESTED = "NOT TESTED"
    NOT_JUDGED = "NOT JUDGED"

    @property
    def word(self) -> str:
        """The verdict in a sentence (and in a reproduction's ``report.json``): ``'not tested'``."""
        return self.value.lower()

    @classmethod
    def read(cls, text: str, name: str = "verdict") -> "Verdict":
        """The verdict ``text`` names, in either spelling (``'REPRODUCED'``, ``'reproduced'``); ``ValueError``
        naming ``name`` otherwise."""
        if isinstance(text, str) and text.upper() in cls._value2member_map_:
            return cls(text.upper())
        raise ValueError(f"{name} must be one of {', '.join(v.word for v in cls)}; got {text!r}")


#: the decided verdicts, in the order counts of them are written
DECIDED = (Verdict.REPRODUCED, Verdict.CONTRADICTED, Verdict.INCONCLUSIVE)


class Reason(StrEnum):
    """Why a verdict is INCONCLUSIVE: the kind a certified verdict records, and the first word of a reproduced
    claim's reason (``'budget: ...'``); ``NONE`` for a decided verdict.

    :attr:`brief` is the kind in a few words (the answer's "why not settled" column).

    Examples
    --------
    >>> Reason("checks"), Reason.RESOLUTION.brief, Reason.NONE.brief
    (<Reason.CHECKS: 'checks'>, 'its interval does not bound α', '')
    >>> Reason.kinds("budget: 6000 steps; resolution: few depths; the tail is worse")
    (<Reason.BUDGET: 'budget'>, <Reason.RESOLUTION: 'resolution'>)
    """

    NONE = ""
    BUDGET = "budget"
    CHECKS = "checks"
    RESOLUTION = "resolution"
    TRAINING = "training"
    VARIANTS = "variants"
    BOUND = "bound"

    @property
    def brief(self) -> str:
        """The kind in a few words (``checks`` is worded from its depths by whoever has them)."""
        return {"budget": "depths not done yet", "resolution": "its interval does not bound α",
                "training": "a certificate fails", "variants": "the fit's variants disagree"}.get(self.value,
                                                                                                     self.value)

    @classmethod
    def kinds(cls, reason: str) -> tuple:
        """The kinds a reason text names: the word before the ``:`` of each of its ``;``-separated parts."""
        words = (part.split(":")[0].strip() for part in reason.split(";"))
        return tuple(dict.fromkeys(cls(w) for w in words if w and w in cls._value2member_map_))


class DepthDependence(StrEnum):
    """How a depth curve depends on depth (:func:`~numerics.experiments.criteria.classify_depth_dependence`), in the order a tie is broken:
    the regime study's words.

    Examples
    --------
    >>> DepthDependence.of("improves (alpha = 0.6, not settled)"), DepthDependence.of("flat")
    (<DepthDependence.IMPROVES: 'improves'>, <DepthDependence.FLAT: 'flat'>)
    """

    INVERSE_DEPTH = "inverse-depth"
    IMPROVES = "improves"
    FLAT = "flat"

    @classmethod
    def of(cls, verdict: str) -> "DepthDependence":
        """The word a verdict of :func:`~numerics.experiments.criteria.classify_depth_dependence` starts with."""
        return cls(verdict.split(" (")[0])
