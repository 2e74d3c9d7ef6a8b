"""What a sweep directory holds: counts by status, the slowest runs and the failures (read-only)."""

from __future__ import annotations

import collections
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import store as _store


@dataclass(frozen=True)
class RunSummary:
    """One run as listed by :func:`sweep_status`: config hash, status, worker seconds, label and error.

    The label names the config entries that vary across the store's runs (``depth=4 seed=1``).

    Examples
    --------
    >>> RunSummary("ab12", "done", 1.5, "depth=4", None).label
    'depth=4'
    """

    hash: str
    status: str
    wall_time: float | None
    label: str
    error: str | None


@dataclass(frozen=True)
class SweepStatus:
    """A sweep store's runs: counts per status, total, the slowest ``done`` runs and the failed ones.

    Examples
    --------
    >>> SweepStatus(Path("r.sqlite"), {"done": 2}, 2, (), ()).total
    2
    """

    store: Path
    counts: Mapping[str, int]
    total: int
    slowest: tuple[RunSummary, ...]
    failed: tuple[RunSummary, ...]

    def format(self) -> str:
        """Human-readable report (what ``idepth sweep status`` prints)."""
        lines = [f"{self.store}: {self.total} runs: "
                 + ", ".join(f"{self.counts.get(name, 0)} {name}" for name in _store.STATUSES)]
        if self.slowest:
            lines.append("slowest runs:")
            lines += [f"  {run.wall_time:9.2f} s  {run.hash[:12]}  {run.label}" for run in self.slowest]
        if self.failed:
            lines.append("failed runs:")
            lines += [f"  {run.hash[:12]}  {run.label}: {run.error}" for run in self.failed]
        return "\n".join(lines)


def _labels(records: Sequence[Mapping[str, Any]]) -> list[str]:
    keys = sorted({key for record in records for key in record["config"]})
    varying = [key for key in keys
               if len({json.dumps(record["config"].get(key), sort_keys=True) for record in records}) > 1]
    return [" ".join(f"{key}={record['config'].get(key)!r}".replace("'", "") for key in varying)
            for record in records]


def sweep_status(out_dir: str | os.PathLike, *, slowest: int = 5) -> SweepStatus:
    """The :class:`SweepStatus` of a sweep directory (or its store), listing the ``slowest`` runs.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.store import ResultsStore
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         _ = store.register([("h1", '{"depth": 1}'), ("h2", '{"depth": 2}')])
    ...     sweep_status(tmp).counts
    {'pending': 2, 'running': 0, 'done': 0, 'failed': 0}
    """
    from theory.validation import check_positive_int

    slowest = check_positive_int("slowest", slowest, minimum=0)
    records = _store.load_results(out_dir)
    labels = _labels(records)
    summaries = [RunSummary(r["hash"], r["status"], r["wall_time"], label, r["error"])
                 for r, label in zip(records, labels)]
    counts = dict(collections.Counter(r["status"] for r in records))
    done = sorted((s for s in summaries if s.status == "done" and s.wall_time is not None),
                  key=lambda s: -s.wall_time)
    return SweepStatus(
        store=_store.store_path(out_dir),
        counts={name: counts.get(name, 0) for name in _store.STATUSES},
        total=len(records),
        slowest=tuple(done[:slowest]),
        failed=tuple(s for s in summaries if s.status == "failed"),
    )
