"""The results store of a depth sweep: one SQLite file per sweep directory.

A sweep directory ``DIR`` holds ``DIR/results.sqlite`` (stdlib :mod:`sqlite3`,
WAL journal; a finished run is committed with ``synchronous=FULL``, i.e. with
an fsync, other bookkeeping with ``NORMAL``) with three tables:

``meta``
    ``schema_version``, ``package_version`` (the ``inverse-depth`` version that
    created the store) and ``created_at``. A store whose schema version differs
    from :data:`SCHEMA_VERSION` cannot be read; a store created by another
    package version cannot be written to (content hashes include the package
    version, so its runs are not this version's runs). Either case raises
    :class:`StoreVersionError` (a :class:`ValueError`) with a one-line message.
``runs``
    One row per run, keyed by the config's content hash (``UNIQUE``):
    ``status`` (``pending`` / ``running`` / ``done`` / ``failed``), ``config_json``,
    ``error`` and ``traceback`` (failed runs), ``attempts``, timings
    (``queued_at``, ``started_at``, ``finished_at`` as Unix times, ``wall_time``
    in seconds, measured in the worker), ``host`` and ``pid`` of the worker, the
    final metrics ``R_L``, ``A_L``, ``C_L``, ``steps``, ``converged`` as columns
    (SQL ``NULL`` where the metric is NaN or absent, e.g. ``C_L`` at ``L = 1``)
    and the full metrics dict as ``metrics_json``. ``CHECK`` constraints refuse a
    ``done`` row without metrics and a ``failed`` row without an error.
``arrays``
    ``(run_hash, name, npy)``: each array result of a run as the bytes of a
    ``.npy`` file (:func:`encode_array`, ``allow_pickle=False``).

Writing (:class:`ResultsStore`) is done by one process, the sweep driver,
which holds an exclusive ``flock`` on ``DIR`` while it writes; every finished
run is committed in its own transaction (its arrays, metrics and status
together), so killing the driver at any moment loses no committed run and
leaves no half-written row (the store is created atomically too: its schema
is written to a temporary file renamed into place). Workers, local or Dask,
never touch the file: only the driver does, so ``DIR`` must be on a file
system local to the driver (SQLite's WAL mode does not work over NFS).
Reading (:func:`load_results`, :func:`load_arrays`, :func:`export_csv`)
opens the file read-only and may happen while a sweep is running.

This module does not import numpy at import time (only when arrays are
encoded or decoded), so that sweep worker processes can pin BLAS threads
before numpy is loaded.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import io
import json
import math
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from numerics.io import atomic_path

__all__ = [
    "SCHEMA_VERSION",
    "STORE_FILENAME",
    "STATUSES",
    "METRIC_COLUMNS",
    "StoreVersionError",
    "StoreLockedError",
    "StoreRunnerError",
    "ResultsStore",
    "RunOutcome",
    "store_path",
    "check_store",
    "encode_array",
    "decode_array",
    "load_results",
    "load_arrays",
    "export_csv",
]

#: version of the table layout below; bump on any incompatible change
SCHEMA_VERSION = 1
#: name of the store file inside a sweep directory
STORE_FILENAME = "results.sqlite"
#: the states of a run, in the order they are reported
STATUSES = ("pending", "running", "done", "failed")
#: metrics copied into their own columns (name -> SQL type)
METRIC_COLUMNS = {"R_L": "REAL", "A_L": "REAL", "C_L": "REAL", "steps": "INTEGER", "converged": "INTEGER"}

_SCHEMA = f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    hash         TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL CHECK (status IN {STATUSES!r}),
    config_json  TEXT NOT NULL,
    error        TEXT,
    traceback    TEXT,
    attempts     INTEGER NOT NULL DEFAULT 0,
    queued_at    REAL NOT NULL,
    started_at   REAL,
    finished_at  REAL,
    wall_time    REAL,
    host         TEXT,
    pid          INTEGER,
    {", ".join(f"{name} {kind}" for name, kind in METRIC_COLUMNS.items())},
    metrics_json TEXT,
    CHECK (status <> 'done' OR metrics_json IS NOT NULL),
    CHECK (status <> 'failed' OR error IS NOT NULL)
);
CREATE INDEX runs_by_status ON runs (status);
CREATE TABLE arrays (
    run_hash TEXT NOT NULL REFERENCES runs (hash) ON DELETE CASCADE,
    name     TEXT NOT NULL,
    npy      BLOB NOT NULL,
    PRIMARY KEY (run_hash, name)
);
"""

#: columns of ``runs`` returned by :func:`load_results` (besides ``config`` and ``metrics``)
_RESULT_COLUMNS = (
    "hash", "status", "error", "attempts", "queued_at", "started_at", "finished_at",
    "wall_time", "host", "pid", *METRIC_COLUMNS,
)


class StoreVersionError(ValueError):
    """The store was created by an incompatible schema or package version."""


class StoreRunnerError(ValueError):
    """The store holds results of another runner (a store is keyed by config, so it serves one runner)."""


class StoreLockedError(ValueError):
    """Another process is writing to the sweep directory."""


def _package_version() -> str:
    # imported lazily: ``theory`` loads numpy and sympy (see module docstring)
    from theory import __version__

    return __version__


def store_path(path: str | os.PathLike) -> Path:
    """The store file of a sweep directory (or ``path`` itself if it is a file).

    Parameters
    ----------
    path : str or path-like
        A sweep directory ``DIR`` or the store file ``DIR/results.sqlite``.

    Returns
    -------
    pathlib.Path
        ``DIR/results.sqlite``.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> store_path("runs/depth").as_posix()
    'runs/depth/results.sqlite'
    """
    path = Path(path)
    if path.is_file() or path.suffix == ".sqlite":
        return path
    return path / STORE_FILENAME


def _unwritable_directory(directory: Path) -> bool:
    from numerics.io import _probe_writable

    return _probe_writable(directory) is not None


def _has_wal_content(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    return wal.is_file() and wal.stat().st_size > 0


def _connect_readonly(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    if not path.is_file():
        raise FileNotFoundError(f"no sweep results store at {path} (run 'idepth sweep run' first)")
    # immutable: read the main file only, creating no -wal/-shm files; right for ``meta``,
    # which is written once, when the store is created (already checkpointed, see _create_store)
    if not immutable and _unwritable_directory(path.parent) and not _has_wal_content(path):
        # a read-only file system: ?mode=ro would need to create the -shm file; with no WAL
        # content left (the last writer checkpointed it) the main file is the whole store
        immutable = True
    query = "?immutable=1" if immutable else "?mode=ro"
    conn = sqlite3.connect(path.resolve().as_uri() + query, uri=True, timeout=30.0)
    conn.row_factory = sqlite3.Row
    return conn


def _read_meta(conn: sqlite3.Connection, path: Path) -> dict[str, str]:
    try:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:  # not SQLite at all, or no meta table
        raise StoreVersionError(f"{path} is not an inverse-depth sweep store ({exc})") from None


def _check_meta(meta: Mapping[str, str], path: Path, *, for_writing: bool) -> None:
    schema = meta.get("schema_version")
    if schema != str(SCHEMA_VERSION):
        raise StoreVersionError(
            f"{path} has store schema version {schema!r} (created by inverse-depth "
            f"{meta.get('package_version', '?')}); this inverse-depth reads schema {SCHEMA_VERSION}: "
            "use a new sweep directory or the package version that wrote it"
        )
    version = meta.get("package_version")
    if for_writing and version != _package_version():
        raise StoreVersionError(
            f"{path} was created by inverse-depth {version}; this is {_package_version()} and content "
            "hashes include the package version: write this sweep to a new directory"
        )


def check_store(path: str | os.PathLike, *, for_writing: bool = False) -> Path:
    """Check that an existing store can be read (or written) by this package version.

    Reads the file without locking or creating anything (``immutable=1``).

    Parameters
    ----------
    path : str or path-like
        A sweep directory or its ``results.sqlite``.
    for_writing : bool, default False
        Also require the store's package version to equal this package's.

    Returns
    -------
    pathlib.Path
        The store file.

    Raises
    ------
    FileNotFoundError
        No store at ``path``.
    StoreVersionError
        Incompatible schema (or, ``for_writing``, package) version, or not a store.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ResultsStore(tmp).close()
    ...     check_store(tmp, for_writing=True).name
    'results.sqlite'
    """
    path = store_path(path)
    conn = _connect_readonly(path, immutable=True)
    try:
        _check_meta(_read_meta(conn, path), path, for_writing=for_writing)
    finally:
        conn.close()
    return path


def encode_array(array: Any) -> bytes:
    """The bytes of a ``.npy`` file holding ``array`` (no pickled objects).

    Parameters
    ----------
    array : array_like
        Numeric (or string) array; object arrays are refused.

    Returns
    -------
    bytes
        What :func:`numpy.save` writes, read back by :func:`decode_array`.

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> import numpy as np
    >>> decode_array(encode_array(np.arange(3.0))).tolist()
    [0.0, 1.0, 2.0]
    """
    import numpy as np

    buffer = io.BytesIO()
    try:
        np.save(buffer, np.asarray(array), allow_pickle=False)
    except ValueError as exc:
        raise TypeError(f"array results must be numeric arrays; got {type(array).__name__} ({exc})") from None
    return buffer.getvalue()


def decode_array(npy: bytes) -> Any:
    """The array stored by :func:`encode_array` (a :class:`numpy.ndarray`).

    Parameters
    ----------
    npy : bytes
        Contents of a ``.npy`` file.

    Returns
    -------
    numpy.ndarray

    References
    ----------
    Bookkeeping only; no paper equation.

    Examples
    --------
    >>> decode_array(encode_array([[1, 2]])).shape
    (1, 2)
    """
    import numpy as np

    return np.load(io.BytesIO(npy), allow_pickle=False)


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


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced, as handed from a worker to the store's writer.

    Attributes
    ----------
    run_hash : str
        Content hash of the run's config.
    ok : bool
        True if the runner returned; False if it raised.
    metrics : dict
        JSON scalars (``R_L``, ``A_L``, ``C_L``, ``steps``, ``converged``, ...); empty if failed.
    arrays : dict of str to bytes
        ``.npy`` bytes (:func:`encode_array`) by name; empty if failed.
    error : str or None
        ``"ExceptionType: message"`` of a failed run.
    traceback : str or None
        The formatted traceback of a failed run.
    started_at, finished_at : float
        Unix times at which the worker started and finished the run.
    wall_time : float
        Seconds spent in the worker (monotonic clock).
    host : str
        Host name of the worker.
    pid : int
        Process id of the worker.

    References
    ----------
    The metrics are those of paper eqs. (12) and (61)-(63).

    Examples
    --------
    >>> RunOutcome("abc", True, {"R_L": 1.0}, {}, None, None, 0.0, 1.0, 1.0, "host", 1).ok
    True
    """

    run_hash: str
    ok: bool
    metrics: Mapping[str, Any]
    arrays: Mapping[str, bytes]
    error: str | None
    traceback: str | None
    started_at: float
    finished_at: float
    wall_time: float
    host: str
    pid: int


def _create_store(path: Path) -> None:
    """Create an empty store at ``path`` atomically (called with the directory lock held).

    The schema is written to a temporary file that is renamed into place, so a
    reader, or a driver killed during creation, never leaves or sees a store
    file without its tables.
    """
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # from a driver killed while creating
        stale.unlink()
    with atomic_path(path) as tmp_path:
        conn = sqlite3.connect(tmp_path, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("package_version", _package_version()),
                    ("created_at", repr(time.time())),
                ],
            )
            conn.execute("COMMIT")
        finally:
            conn.close()  # checkpoints and removes the temporary WAL


class ResultsStore:
    """Write access to the store of a sweep directory (the single writer).

    Opening creates ``DIR`` and ``DIR/results.sqlite`` if needed, checks the
    versions of an existing store (:func:`check_store`) and takes an exclusive
    lock on ``DIR`` that is held until :meth:`close` (or the process dies),
    so that two drivers never write the same sweep.

    Parameters
    ----------
    directory : str or path-like
        The sweep directory ``DIR``.

    Raises
    ------
    StoreVersionError
        The existing store is of another schema or package version.
    StoreLockedError
        Another live process holds the lock on ``DIR``.
    NotADirectoryError
        ``directory`` is an existing file.

    References
    ----------
    Bookkeeping only; the stored metrics are those of paper eqs. (12), (61)-(63).

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
        if directory.exists() and not directory.is_dir():
            raise NotADirectoryError(f"sweep directory {directory} is an existing file, not a directory")
        self.path = directory / STORE_FILENAME
        if self.path.exists():
            check_store(self.path, for_writing=True)  # read-only: nothing is written to a wrong store
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
                _create_store(self.path)
            self._conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self._conn.execute("PRAGMA foreign_keys=ON")
        except BaseException:
            self.close()
            raise

    # -- plumbing -------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self, *, durable: bool = False):
        # explicit transactions (the connection is in autocommit mode): all or nothing. Every
        # commit survives a crash of this process (WAL); a durable one also survives power loss
        # (fsync of the WAL, synchronous=FULL) -- used for finished runs, not for bookkeeping
        # whose loss only re-runs a run.
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

    # -- bookkeeping ------------------------------------------------------------
    def claim_runner(self, name: str) -> None:
        """Record ``name`` as the runner of this store, or refuse a store written by another runner.

        Runs are keyed by their config's content hash only; two runners that store
        different results for one config must therefore never share a store.

        Raises
        ------
        StoreRunnerError
            The store was written by a runner of another name.

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
        numerics.experiments.store.StoreRunnerError: ... holds the results of runner 'pkg.run'; ...
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
        """Add runs as ``pending``; hashes already in the store are left alone.

        Parameters
        ----------
        runs : iterable of (str, str)
            ``(content hash, config JSON)`` pairs.

        Returns
        -------
        int
            Number of new rows (a re-run of a sweep never duplicates a run).
        """
        now = time.time()
        with self._transaction():
            before = self._conn.total_changes
            self._conn.executemany(
                "INSERT OR IGNORE INTO runs (hash, status, config_json, queued_at) VALUES (?, 'pending', ?, ?)",
                [(run_hash, config_json, now) for run_hash, config_json in runs],
            )
            return self._conn.total_changes - before

    def statuses(self, hashes: Sequence[str] | None = None) -> dict[str, str]:
        """Status of each run.

        Parameters
        ----------
        hashes : sequence of str, optional
            Only these runs (unknown hashes are omitted); default: every run.

        Returns
        -------
        dict of str to str
            Hash -> one of :data:`STATUSES`.
        """
        rows = self._conn.execute("SELECT hash, status FROM runs").fetchall()
        found = dict(rows)
        if hashes is None:
            return found
        return {run_hash: found[run_hash] for run_hash in hashes if run_hash in found}

    def counts(self) -> dict[str, int]:
        """Number of runs in each status.

        Returns
        -------
        dict of str to int
            Every status of :data:`STATUSES`, zeros included.
        """
        counts = dict.fromkeys(STATUSES, 0)
        counts.update(self._conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
        return counts

    def requeue_running(self) -> int:
        """Turn every ``running`` row back into ``pending``.

        Only the lock holder writes, so a ``running`` row seen when the lock is
        taken was left by a driver that died: its run is queued again.

        Returns
        -------
        int
            Number of runs re-queued.
        """
        with self._transaction():
            return self._conn.execute(
                "UPDATE runs SET status = 'pending', queued_at = ? WHERE status = 'running'", (time.time(),)
            ).rowcount

    def reset(self, hashes: Iterable[str], *, from_status: str) -> int:
        """Turn the runs of ``hashes`` that are in ``from_status`` back into ``pending``.

        Parameters
        ----------
        hashes : iterable of str
            Runs to reset; runs in another status are left alone.
        from_status : {'pending', 'running', 'done', 'failed'}
            E.g. ``'failed'`` to retry failed runs.

        Returns
        -------
        int
            Number of runs reset (their error and traceback are cleared).
        """
        if from_status not in STATUSES:
            raise ValueError(f"from_status must be one of {', '.join(map(repr, STATUSES))}; got {from_status!r}")
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
        """Mark runs as handed to a worker and count the attempt.

        Parameters
        ----------
        hashes : iterable of str
            Runs submitted together (one transaction).
        """
        with self._transaction():
            self._conn.executemany(
                "UPDATE runs SET status = 'running', attempts = attempts + 1 WHERE hash = ?",
                [(run_hash,) for run_hash in hashes],
            )

    def record(self, outcome: RunOutcome) -> None:
        """Commit one finished run: status, timings, metrics and arrays, in one durable transaction.

        Parameters
        ----------
        outcome : RunOutcome
            ``ok`` -> ``done`` with its metrics and arrays (arrays of an earlier
            attempt are replaced); otherwise ``failed`` with its error.

        Raises
        ------
        KeyError
            The run was never registered (nothing is written).
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


# -- readers ------------------------------------------------------------------
def _open_for_reading(path: str | os.PathLike) -> tuple[sqlite3.Connection, Path]:
    path = store_path(path)
    conn = _connect_readonly(path)
    try:
        _check_meta(_read_meta(conn, path), path, for_writing=False)
    except BaseException:
        conn.close()
        raise
    return conn, path


def _row_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    record = {name: row[name] for name in _RESULT_COLUMNS}
    if record["converged"] is not None:
        record["converged"] = bool(record["converged"])
    record["config"] = json.loads(row["config_json"])
    record["metrics"] = json.loads(row["metrics_json"]) if row["metrics_json"] is not None else {}
    return record


def load_results(path: str | os.PathLike, *, as_frame: bool = False, status: str | None = None):
    """Every run of a sweep store, in the order the runs were first registered.

    Parameters
    ----------
    path : str or path-like
        A sweep directory or its ``results.sqlite``.
    as_frame : bool, default False
        Return a :class:`pandas.DataFrame` (needs pandas) with ``config.*`` and
        ``metrics.*`` columns flattened out.
    status : {'pending', 'running', 'done', 'failed'}, optional
        Only runs in this status.

    Returns
    -------
    list of dict or pandas.DataFrame
        One dict per run: the ``runs`` columns (``hash``, ``status``, ``error``,
        ``attempts``, timings, ``host``, ``pid``, ``R_L``, ``A_L``, ``C_L``,
        ``steps``, ``converged``; ``None`` for SQL ``NULL``), plus ``config``
        and ``metrics`` (dicts decoded from JSON; NaN metrics are kept as NaN).

    References
    ----------
    ``R_L`` is paper eq. (12); ``A_L``, ``C_L`` are eqs. (61)-(63).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         store.register([("h1", '{"depth": 2}')])
    ...         store.record(RunOutcome("h1", True, {"R_L": 0.5, "steps": 10}, {}, None, None, 0.0, 1.0, 1.0, "h", 1))
    ...     rows = load_results(tmp)
    1
    >>> [(r["status"], r["R_L"], r["steps"], r["config"]["depth"]) for r in rows]
    [('done', 0.5, 10, 2)]
    """
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(map(repr, STATUSES))} or None; got {status!r}")
    conn, _ = _open_for_reading(path)
    try:
        query = "SELECT * FROM runs" + (" WHERE status = ?" if status else "") + " ORDER BY id"
        records = [_row_to_dict(row) for row in conn.execute(query, (status,) if status else ())]
    finally:
        conn.close()
    if not as_frame:
        return records
    try:
        import pandas
    except ImportError:
        raise ImportError("load_results(as_frame=True) needs pandas (pip install pandas); "
                          "without it, use the list of dicts") from None
    return pandas.DataFrame([_flatten(record) for record in records])


def load_arrays(path: str | os.PathLike, run_hash: str, names: Sequence[str] | None = None) -> dict[str, Any]:
    """The array results of one run (by config content hash).

    Parameters
    ----------
    path : str or path-like
        A sweep directory or its ``results.sqlite``.
    run_hash : str
        The run's hash (the ``hash`` field of :func:`load_results`).
    names : sequence of str, optional
        Only these arrays (default: all).

    Returns
    -------
    dict of str to numpy.ndarray
        E.g. ``loss_curve``, ``layer_errors``, ``modewise_loss``.

    Raises
    ------
    KeyError
        No run with this hash in the store, or a requested name is missing.

    References
    ----------
    ``layer_errors`` are the E e_ℓ² of paper eq. (61).

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         _ = store.register([("h1", "{}")])
    ...         store.record(RunOutcome("h1", True, {}, {"curve": encode_array(np.ones(2))},
    ...                                 None, None, 0.0, 1.0, 1.0, "h", 1))
    ...     load_arrays(tmp, "h1")["curve"].tolist()
    [1.0, 1.0]
    """
    if not isinstance(run_hash, str):
        raise TypeError(f"run_hash must be a str; got {run_hash!r} ({type(run_hash).__name__})")
    conn, path = _open_for_reading(path)
    try:
        if conn.execute("SELECT 1 FROM runs WHERE hash = ?", (run_hash,)).fetchone() is None:
            raise KeyError(f"no run with hash {run_hash!r} in {path}")
        rows = conn.execute("SELECT name, npy FROM arrays WHERE run_hash = ? ORDER BY name", (run_hash,)).fetchall()
    finally:
        conn.close()
    arrays = {name: decode_array(npy) for name, npy in rows}
    if names is None:
        return arrays
    missing = [name for name in names if name not in arrays]
    if missing:
        raise KeyError(f"run {run_hash!r} has no array {missing[0]!r}; it has {sorted(arrays)}")
    return {name: arrays[name] for name in names}


def _flatten(record: Mapping[str, Any]) -> dict[str, Any]:
    flat = {key: value for key, value in record.items() if key not in ("config", "metrics")}
    for prefix in ("config", "metrics"):
        for key, value in record[prefix].items():
            flat[f"{prefix}.{key}"] = value
    return flat


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return "" if value is None else value


def export_csv(path: str | os.PathLike, csv_path: str | os.PathLike) -> int:
    """Write every run of a store as one CSV row, atomically.

    Columns: the ``runs`` columns of :func:`load_results`, then ``config.*``
    and ``metrics.*`` (nested values as JSON). The file is written to a
    temporary file in the same directory, fsynced and renamed over
    ``csv_path``, so a reader never sees a half-written CSV.

    Parameters
    ----------
    path : str or path-like
        A sweep directory or its ``results.sqlite``.
    csv_path : str or path-like
        Destination file (its directory must exist).

    Returns
    -------
    int
        Number of runs written.

    References
    ----------
    Bookkeeping only; the columns are the metrics of paper eqs. (12), (61)-(63).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         _ = store.register([("h1", '{"depth": 4}')])
    ...     export_csv(tmp, os.path.join(tmp, "runs.csv"))
    1
    """
    records = [_flatten(record) for record in load_results(path)]
    csv_path = Path(csv_path)
    if csv_path.is_dir():
        raise ValueError(f"CSV destination {csv_path} is a directory; give a file name")
    if not csv_path.parent.is_dir():
        raise FileNotFoundError(f"directory of the CSV file {csv_path} does not exist")
    fixed = [name for name in _RESULT_COLUMNS]
    extra: list[str] = []
    for prefix in ("config.", "metrics."):
        extra += sorted({key for record in records for key in record if key.startswith(prefix)})
    with atomic_path(csv_path) as tmp_path:
        with open(tmp_path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=fixed + extra, restval="")
            writer.writeheader()
            for record in records:
                writer.writerow({key: _csv_cell(value) for key, value in record.items()})
    return len(records)
