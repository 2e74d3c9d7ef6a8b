"""Where one fixed candidate beats the certified envelope on the report set: the cost of the per-seed choice.

Split from :mod:`~numerics.experiments.study.certified.statistics` by job: the statistics judge the envelope as
selected; this measures, after the fact, how much a re-selection on the report set would move it (it never does:
that would bring the winner's curse back).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...criteria import CERTIFICATE_SES, exceeds, standard_error
from .statistics import judged_cells

__all__ = ["SelectionGap", "selection_gaps"]


@dataclass(frozen=True)
class SelectionGap:
    """At one depth, the fixed candidate that does best against the envelope on the report set.

    ``label``: the candidate (its start, learning rate and step cap, the same in every seed); ``gap`` =
    ``R*_L − R_c``, mean over the seeds judged (> 0: the candidate is better than the per-seed winners)
    ± ``se``, its SE over the report contexts (paired; the seeds' models fixed).

    Examples
    --------
    >>> g = SelectionGap((0.0, 0.0, 2, 16, 32, 64), 8, "oracle (untrained)", 0.01, 0.004, 2.0)
    >>> g.significant, round(g.relative, 3)
    (True, 0.005)
    """

    setting: tuple
    depth: int
    label: str
    gap: float
    se: float
    envelope: float

    @property
    def significant(self) -> bool:
        """More than :data:`CERTIFICATE_SES` SEs: the per-seed choice is worse than this one candidate."""
        return exceeds(self.gap, self.se, CERTIFICATE_SES)

    @property
    def relative(self) -> float:
        return self.gap / self.envelope


def selection_gaps(summary, rows, errors) -> tuple:
    """Per depth of ``summary``, the :class:`SelectionGap` of its best fixed candidate against the envelope.

    The winner of a cell is chosen on a selection set independent of the report set, so the envelope is an
    unbiased report of the models chosen (no winner's curse); where candidates lie within the selection set's
    noise of each other, the choice may be the worse one. A fixed candidate (the same start, rate and cap in
    every seed) that beats the envelope by more than two SEs shows where that happened: there ``R*_L`` is at
    most that candidate's loss, below the envelope. The envelope itself, its certificates and the verdict
    stay as selected (re-selecting on the report set would bring the winner's curse back).

    Notes
    -----
    No example: it needs a table (``tests/test_certified.py``).

    References
    ----------
    Paper eq. (12) (the loss compared), eqs. (59)-(60) (the model whose candidates are compared).
    """
    from ..plan import Candidate

    by_cell, seeds = judged_cells([r for r in rows if r.setting == summary.setting], summary.planned_depths)
    out = []
    for L, envelope in zip(summary.depths, summary.R.mean):
        cells = [by_cell[L, s] for s in seeds]
        chosen = np.mean([errors.of(next(r for r in c if r.selected)) for c in cells], axis=0,
                         dtype=np.float64)
        best = None
        labels = sorted({(r.start, r.learning_rate, r.steps) for r in cells[0] if not r.doubled})  # ties: the first
        for candidate in labels:
            picks = [[r for r in c if not r.doubled and (r.start, r.learning_rate, r.steps) == candidate]
                     for c in cells]
            if not all(len(p) == 1 and not p[0].diverged for p in picks):
                continue
            diff = chosen - np.mean([errors.of(p[0]) for p in picks], axis=0, dtype=np.float64)
            gap = SelectionGap(summary.setting, L, Candidate(*candidate).label, float(diff.mean()),
                               standard_error(diff), float(envelope))
            if best is None or gap.gap > best.gap:
                best = gap
        out.append(best)
    return tuple(out)
