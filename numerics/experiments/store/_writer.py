"""The store's single writer, :class:`ResultsStore` (see :mod:`numerics.experiments.store`)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

from ._encoding import RunOutcome
from ._layout import METRIC_COLUMNS, STATUSES, StoreLockedError, StoreRunnerError
from ._layout import check_status, create_store, writable_store


def _metric_column(name: str, value: Any) -> Any:
    """A metric as stored in its SQL column: NaN / missing / non-numbers -> NULL."""
    if value is None or isinstance(value, str):
        return None
    if name == "converged":
        return int(bool(value))
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(value) if METRIC_COLUMNS[name] == "INTEGER" else number


class ResultsStore:
    """Write access to the store of the sweep directory ``directory`` (the single writer).

    Opening creates the directory and its store if needed, checks an existing store
    (:func:`check_store`: :class:`StoreVersionError`) and takes an exclusive lock on the
    directory until :meth:`close` (:class:`StoreLockedError` while another process holds it),
    so that two drivers never write the same sweep.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp, ResultsStore(tmp) as store:
    ...     store.register([("h1", '{"depth": 1}')])
    ...     store.counts()
    1
    {'pending': 1, 'running': 0, 'done': 0, 'failed': 0}
    """

    def __init__(self, directory: str | os.PathLike):
        directory = Path(directory)
        self.path = writable_store(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(directory, os.O_RDONLY)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise StoreLockedError(
                f"another process is writing the sweep in {directory} (its lock is held); wait for it to finish"
            ) from None
        try:
            if not self.path.exists():
                create_store(self.path)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def _transaction(self, *, durable: bool = False):
        # all or nothing (autocommit connection); every commit survives a crash of this process
        # (WAL), a durable one also power loss (synchronous=FULL: finished runs, not bookkeeping)
        self._conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection and release the lock on the sweep directory."""
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()
            self._conn = None
        fd = getattr(self, "_lock_fd", None)
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def claim_runner(self, name: str) -> None:
        """Record ``name`` as the runner of this store, or refuse one written by another runner.

        Runs are keyed by their config's content hash only, so two runners never share a store.

        Examples
        --------
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with ResultsStore(tmp) as store:
        ...         store.claim_runner("pkg.run")
        ...         store.claim_runner("pkg.run")  # the same runner again: fine
        ...     with ResultsStore(tmp) as store:
        ...         store.claim_runner("pkg.other")
        Traceback (most recent call last):
        ...
        numerics.experiments.store._layout.StoreRunnerError: ... holds the results of runner 'pkg.run'; ...
        """
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'runner'").fetchone()
        if row is None:
            with self._transaction():
                self._conn.execute("INSERT INTO meta (key, value) VALUES ('runner', ?)", (name,))
        elif row[0] != name:
            raise StoreRunnerError(
                f"{self.path} holds the results of runner {row[0]!r}; this sweep uses {name!r}: "
                "use another sweep directory"
            )

    def register(self, runs: Iterable[tuple[str, str]]) -> int:
        """Add ``(hash, config JSON)`` runs as ``pending``, known hashes left alone; return how many are new."""
        now = time.time()
        with self._transaction():
            before = self._conn.total_changes
            self._conn.executemany(
                "INSERT OR IGNORE INTO runs (hash, status, config_json, queued_at) VALUES (?, 'pending', ?, ?)",
                [(run_hash, config_json, now) for run_hash, config_json in runs],
            )
            return self._conn.total_changes - before

    def statuses(self, hashes: Sequence[str] | None = None) -> dict[str, str]:
        """Status of each run, by hash (of ``hashes`` only, unknown ones omitted, when given)."""
        found = dict(self._conn.execute("SELECT hash, status FROM runs").fetchall())
        if hashes is None:
            return found
        return {run_hash: found[run_hash] for run_hash in hashes if run_hash in found}

    def counts(self) -> dict[str, int]:
        """Number of runs in each status of :data:`STATUSES` (zeros included)."""
        counts = dict.fromkeys(STATUSES, 0)
        counts.update(self._conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        return counts

    def requeue_running(self) -> int:
        """Queue ``running`` runs again (a dead driver's: only the lock holder writes); return how many."""
        with self._transaction():
            return self._conn.execute(
                "UPDATE runs SET status = 'pending', queued_at = ? WHERE status = 'running'", (time.time(),)
            ).rowcount

    def reset(self, hashes: Iterable[str], *, from_status: str) -> int:
        """Turn the runs of ``hashes`` in ``from_status`` back to ``pending``, error cleared; return how many."""
        check_status("from_status", from_status)
        now = time.time()
        with self._transaction():
            return sum(
                self._conn.execute(
                    "UPDATE runs SET status = 'pending', queued_at = ?, error = NULL, traceback = NULL "
                    "WHERE hash = ? AND status = ?",
                    (now, run_hash, from_status),
                ).rowcount
                for run_hash in hashes
            )

    def mark_running(self, hashes: Iterable[str]) -> None:
        """Mark runs handed to workers as ``running`` and count the attempt (one transaction)."""
        with self._transaction():
            self._conn.executemany(
                "UPDATE runs SET status = 'running', attempts = attempts + 1 WHERE hash = ?",
                [(run_hash,) for run_hash in hashes],
            )

    def record(self, outcome: RunOutcome) -> None:
        """Commit a finished run in one durable transaction: ``done`` with metrics and arrays, or ``failed``.

        The arrays of an earlier attempt are replaced; an unregistered run is a :class:`KeyError`.
        """
        if outcome.ok:
            metrics_json = json.dumps(dict(outcome.metrics), sort_keys=True, allow_nan=True)
            metric_values = [_metric_column(name, outcome.metrics.get(name)) for name in METRIC_COLUMNS]
            status, error, tb = "done", None, None
        else:
            metrics_json, metric_values = None, [None] * len(METRIC_COLUMNS)
            status, error, tb = "failed", outcome.error or "unknown error", outcome.traceback
        assignments = ", ".join(f"{name} = ?" for name in METRIC_COLUMNS)
        with self._transaction(durable=True):
            self._conn.execute("DELETE FROM arrays WHERE run_hash = ?", (outcome.run_hash,))
            updated = self._conn.execute(
                f"UPDATE runs SET status = ?, error = ?, traceback = ?, started_at = ?, finished_at = ?, "
                f"wall_time = ?, host = ?, pid = ?, metrics_json = ?, {assignments} WHERE hash = ?",
                (
                    status, error, tb, outcome.started_at, outcome.finished_at, outcome.wall_time,
                    outcome.host, outcome.pid, metrics_json, *metric_values, outcome.run_hash,
                ),
            ).rowcount
            if updated != 1:
                raise KeyError(f"run {outcome.run_hash!r} is not registered in {self.path}")
            if outcome.ok:
                self._conn.executemany(
                    "INSERT INTO arrays (run_hash, name, npy) VALUES (?, ?, ?)",
                    [(outcome.run_hash, name, npy) for name, npy in outcome.arrays.items()],
                )
