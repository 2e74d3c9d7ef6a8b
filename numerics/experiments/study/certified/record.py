"""The certified study's verdicts record (``certified-study.verdicts.json``): its writer and its reader.

Split from :mod:`~numerics.experiments.study.certified.page` by job: the page writes Markdown for people; the
record holds the numbers behind each verdict for programs (the answer, the reproduction), so a verdict can be
recomputed from the file (:func:`~numerics.experiments.study.certified.verdict.setting_verdict`).
"""

from __future__ import annotations

import json

from numerics.io import significant

from ...criteria import ALPHA_GRID, GAIN_LAW_MAX_CHI2_DOF, MIN_CHECKED_DEPTHS
from ..plan import Plan

__all__ = ["SHIPPED_VERDICTS", "VERDICTS", "read_verdicts", "verdicts_record"]

VERDICTS = "certified-study.verdicts.json"
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
