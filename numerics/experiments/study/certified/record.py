"""The certified study's two records beside its page: the verdicts and the facts, each with its writer and reader.

Split from :mod:`~numerics.experiments.study.certified.page` by job: the page writes Markdown for people; the
records hold the numbers for programs. The verdicts record (``certified-study.verdicts.json``) holds the numbers
behind each verdict (the answer, the reproduction read it), so a verdict can be recomputed from the file
(:func:`~numerics.experiments.study.certified.verdict.setting_verdict`). The facts record
(``certified-study.facts.json``, :func:`facts_record`) holds everything the computing pass measured beyond the
cells' statistics (the predictions, the untrained-nesting rechecks, the selection gaps, the cost, the revised plan's
population step, long caps and decomposition, the bracket's rows) at full precision; the page renders from it as
read back (:func:`read_facts`), so what the page shows is what the file holds.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from numerics.io import significant

from ...criteria import ALPHA_GRID, GAIN_LAW_MAX_CHI2_DOF, MIN_CHECKED_DEPTHS
from ..plan import Plan
from .selection import SelectionGap
from .statistics import HeadsRecheck, PredictionCheck
from .targets import StudyCompute

__all__ = ["FACTS_RECORD", "Facts", "SHIPPED_VERDICTS", "VERDICTS", "facts_record", "facts_text", "read_facts",
           "read_verdicts", "verdicts_record"]

VERDICTS = "certified-study.verdicts.json"
#: the facts record beside the verdicts record (:func:`facts_record`)
FACTS_RECORD = "certified-study.facts.json"
#: the record's fields, in the order they are written
FACTS_FIELDS = ("predictions", "rechecks", "selection_gaps", "cost", "revised", "excess")
#: the verdicts of the shipped study among the shipped results (the reproduction's central claim reads them)
SHIPPED_VERDICTS = ("certified-revised", VERDICTS)


def verdicts_record(summaries, plan: Plan, *, command: str) -> dict:
    """The numbers behind each setting's verdict, as JSON (what ``certified-study.verdicts.json`` holds).

    Per setting, :meth:`~numerics.experiments.study.curves.CurveSummary.to_dict` of its summary: its sizes, the
    depths done and planned, the verdict, its kind and reason; where the step-doubling check ran
    (``doubling_run``), the depths the verdict rests on (``checked_depths``, where it ran and passed) and why each
    other depth is excluded; the certificates run and those failed; the verdict's contrast (``primary``) and every
    contrast with its interval and α = 1 value; the gain-law fit's variants on the checked depths; the envelope's
    α (reported only where ``fit_reported``); the envelope (with its SE and the paired SE of its gains
    ``R*_1 − R*_L``), bound and best-seed curves; and each recipe's α, labelled as that recipe's finding
    (:class:`~numerics.experiments.study.curves.RecipeAlpha`).

    Examples
    --------
    >>> verdicts_record([], Plan(), command="idepth study certified")["settings"]
    []
    """
    # the numbers to 8 significant digits: their last digits (fits, LAPACK) differ between machines
    return significant({"command": command, "main": {"spectra": [list(x) for x in plan.spectra], "P": plan.P,
                                                     "k": plan.k},
            "plan": {"depths": list(plan.depths), "doubling_spectra": [list(x) for x in plan.doubling_spectra]},
            "rules": {"min_checked_depths": MIN_CHECKED_DEPTHS, "gain_law_max_chi2_dof": GAIN_LAW_MAX_CHI2_DOF},
            "alpha_grid": [float(ALPHA_GRID[0]), float(ALPHA_GRID[-1])],
            "settings": [s.to_dict() for s in summaries]})


def read_verdicts(path=None) -> dict:
    """Read a ``certified-study.verdicts.json`` (default: the shipped study's, :data:`SHIPPED_VERDICTS` among the
    shipped results, :mod:`numerics.experiments.shipped`), checked against the cells' table beside it
    (:func:`numerics.experiments.study.answer.read_record`, the record's one reader).

    Raises
    ------
    ValueError
        A missing or unreadable file, naming it; a setting the cells beside it do not hold, naming it; without
        ``path``, the shipped results not found (:func:`numerics.experiments.shipped.not_found_message`).

    Examples
    --------
    >>> read_verdicts("/nonexistent.json")
    Traceback (most recent call last):
    ...
    ValueError: no certified-study verdicts at /nonexistent.json (`idepth study certified --report-only` writes them)
    """
    from ..answer import read_record

    if path is None:
        from ...shipped import ShippedResultsNotFound, shipped_path

        try:
            path = shipped_path(*SHIPPED_VERDICTS)
        except ShippedResultsNotFound as exc:
            raise ValueError(str(exc)) from None
    try:
        return read_record(path)
    except FileNotFoundError:
        raise ValueError(f"no certified-study verdicts at {path} (`idepth study certified --report-only` writes them)"
                         ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a certified-study verdicts file ({exc})") from None


@dataclass(frozen=True)
class Facts:
    """Everything the certified study's page shows, measured once
    (:func:`~numerics.experiments.study.certified.facts.measure`); the page only renders it.

    ``rows``, ``errors``: the exported candidates and their report-set errors; ``summaries``: one
    :class:`~numerics.experiments.study.curves.CurveSummary` per setting; ``checks``: ``{setting:
    PredictionCheck}`` (None without predictions); ``rechecks``: the
    :class:`~numerics.experiments.study.certified.statistics.HeadsRecheck` values; ``gaps``: ``{setting:
    (SelectionGap per depth)}``; ``compute``: the :class:`~numerics.experiments.study.certified.targets.StudyCompute`;
    ``revised``: the JSON record of :func:`~numerics.experiments.study.certified.facts.revised_facts` (None for a
    plan without U_L's starts); ``excess``: the bracket's rows
    (:func:`~numerics.experiments.study.certified.excess.excess_rows`).

    Examples
    --------
    >>> Facts((), None, (), None, (), {}, None, None, ()).revised is None
    True
    """

    rows: tuple
    errors: object
    summaries: tuple
    checks: dict | None
    rechecks: tuple
    gaps: dict
    compute: StudyCompute | None
    revised: dict | None
    excess: tuple


def facts_record(facts: Facts) -> dict:
    """The facts record (what ``certified-study.facts.json`` holds) of ``facts``: every field but the cells' rows,
    errors and summaries (the table and the verdicts record hold those), JSON-able, at full precision.

    Fields (:data:`FACTS_FIELDS`): ``predictions`` (per setting, ``predict_loss`` against the envelope:
    :class:`~numerics.experiments.study.certified.statistics.PredictionCheck`; None without predictions),
    ``rechecks`` (the failed nesting certificates between untrained heads, repeated in the population),
    ``selection_gaps`` (per setting, the best fixed candidate against the envelope at each depth), ``cost`` (the
    CPU time by part), ``revised`` (the revised plan's coverage, CPU hours, population step, envelope against U_L,
    long caps and decomposition; None for a plan without U_L's starts) and ``excess`` (the bracket's rows).

    Examples
    --------
    >>> sorted(facts_record(Facts((), None, (), None, (), {}, None, None, ())))
    ['cost', 'excess', 'predictions', 'rechecks', 'revised', 'selection_gaps']
    """
    def fields(value):
        return None if value is None else dataclasses.asdict(value)

    checks = None if facts.checks is None else [{"setting": list(setting), **fields(check)}
                                                 for setting, check in facts.checks.items()]
    return {"predictions": checks, "rechecks": [fields(r) for r in facts.rechecks],
            "selection_gaps": [{"setting": list(setting), "depths": [fields(g) for g in gaps]}
                               for setting, gaps in facts.gaps.items()],
            "cost": fields(facts.compute), "revised": facts.revised, "excess": list(facts.excess)}


def facts_text(facts: Facts) -> str:
    """The text of ``certified-study.facts.json`` (:func:`facts_record`; NaN and infinities as JSON writes them).

    Examples
    --------
    >>> facts_text(Facts((), None, (), None, (), {}, None, None, ())).splitlines()[1]
    ' "predictions": null,'
    """
    return json.dumps(facts_record(facts), indent=1, allow_nan=True) + "\n"


def _tuples(value):
    """Lists (JSON's arrays) back to the tuples the facts' dataclasses hold, recursively."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _rebuild(cls, data: dict | None):
    return None if data is None else cls(**{name: _tuples(value) for name, value in data.items()})


def read_facts(source, *, rows=(), errors=None, summaries=()) -> Facts:
    """The :class:`Facts` a facts record holds (the record's one reader): ``source`` a path to
    ``certified-study.facts.json`` or the record itself (a dict); ``rows``, ``errors``, ``summaries``: the cells'
    (the table and the verdicts record hold them, not this record).

    Raises
    ------
    ValueError
        An unreadable file or a record without one of the fields, naming it.

    Examples
    --------
    >>> facts = Facts((), None, (), {(0.0, 0.0, 2, 16, 32, 64): PredictionCheck((1,), (2.0,), (0.01,), (2.02,),
    ...               (0.01,), (0.0,), (0.0,))}, (), {}, None, None, ())
    >>> read_facts(json.loads(facts_text(facts))) == facts
    True
    >>> read_facts({"predictions": None})
    Traceback (most recent call last):
    ...
    ValueError: not a facts record: missing field rechecks
    """
    if not isinstance(source, dict):
        try:
            source = json.loads(Path(source).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{source} is not a certified-study facts record ({exc})") from None
    missing = [name for name in FACTS_FIELDS if name not in source]
    if missing:
        raise ValueError(f"not a facts record: missing field {missing[0]}")
    checks = source["predictions"]
    return Facts(
        rows=tuple(rows), errors=errors, summaries=tuple(summaries),
        checks=None if checks is None else {tuple(c.pop("setting")): _rebuild(PredictionCheck, c)
                                            for c in (dict(c) for c in checks)},
        rechecks=tuple(_rebuild(HeadsRecheck, r) for r in source["rechecks"]),
        gaps={tuple(g["setting"]): tuple(_rebuild(SelectionGap, d) for d in g["depths"])
              for g in source["selection_gaps"]},
        compute=_rebuild(StudyCompute, source["cost"]), revised=source["revised"], excess=tuple(source["excess"]))
