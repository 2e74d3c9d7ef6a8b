"""The store's on-disk layout (see :mod:`numerics.experiments.store`): tables, versions, errors, opening."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from numerics.io import atomic_path

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
RESULT_COLUMNS = (
    "hash", "status", "error", "attempts", "queued_at", "started_at", "finished_at",
    "wall_time", "host", "pid", *METRIC_COLUMNS,
)


class StoreVersionError(ValueError):
    """The store was created by an incompatible schema or package version."""


class StoreRunnerError(ValueError):
    """The store holds results of another runner (a store is keyed by config, so it serves one runner)."""


class StoreLockedError(ValueError):
    """Another process is writing to the sweep directory."""


def check_status(argument: str, value: str | None, *, optional: bool = False) -> None:
    """Refuse a run status outside :data:`STATUSES` (and ``None``, unless ``optional``).

    Parameters
    ----------
    argument : str
        The argument's name, for the error message.
    value : str or None
        The status given.
    optional : bool, default False
        Accept ``None`` (no status: every run).

    Raises
    ------
    ValueError
        Naming ``argument``, the value and the statuses allowed.

    Examples
    --------
    >>> check_status("status", "done")
    >>> check_status("status", "finished")
    Traceback (most recent call last):
    ...
    ValueError: status must be one of 'pending', 'running', 'done', 'failed'; got 'finished'
    """
    if value in STATUSES or (optional and value is None):
        return
    allowed = ", ".join(map(repr, STATUSES)) + (" or None" if optional else "")
    raise ValueError(f"{argument} must be one of {allowed}; got {value!r}")


def _package_version() -> str:
    # imported lazily: ``theory`` loads numpy, which workers import only after pinning BLAS threads
    from theory import __version__

    return __version__


def store_path(path: str | os.PathLike) -> Path:
    """The store file ``DIR/results.sqlite`` of a sweep directory ``DIR`` (``path`` itself if it is a file).

    Examples
    --------
    >>> store_path("runs/depth").as_posix()
    'runs/depth/results.sqlite'
    """
    path = Path(path)
    if path.is_file() or path.suffix == ".sqlite":
        return path
    return path / STORE_FILENAME


def _connect_readonly(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    if not path.is_file():
        raise FileNotFoundError(f"no sweep results store at {path} (run 'idepth sweep run' first)")
    # immutable: read the main file only, creating no -wal/-shm files; right for ``meta``,
    # which is written once, when the store is created (already checkpointed, see create_store)
    if not immutable:
        from numerics.io import probe_writable

        wal = path.with_name(path.name + "-wal")
        # a read-only file system: ?mode=ro would need to create the -shm file; with no WAL
        # content left (the last writer checkpointed it) the main file is the whole store
        has_wal = wal.is_file() and wal.stat().st_size > 0
        immutable = probe_writable(path.parent) is not None and not has_wal
    query = "?immutable=1" if immutable else "?mode=ro"
    conn = sqlite3.connect(path.resolve().as_uri() + query, uri=True, timeout=30.0)
    conn.row_factory = sqlite3.Row
    return conn


def _check_meta(conn: sqlite3.Connection, path: Path, *, for_writing: bool) -> None:
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:  # not SQLite at all, or no meta table
        raise StoreVersionError(f"{path} is not an inverse-depth sweep store ({exc})") from None
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
    """The store file of ``path`` after checking that this package version can read it (or write it).

    Reads the file without locking or creating anything (``immutable=1``). Raises
    :class:`FileNotFoundError` without a store, :class:`StoreVersionError` for another schema
    version, something that is not a store or, ``for_writing``, another package version.

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.store import ResultsStore
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ResultsStore(tmp).close()
    ...     check_store(tmp, for_writing=True).name
    'results.sqlite'
    """
    conn, path = open_for_reading(path, immutable=True, for_writing=for_writing)
    conn.close()
    return path


def writable_store(directory: str | os.PathLike) -> Path:
    """The store file of the sweep directory ``directory``, once checked that this package may write it there.

    Read-only (nothing is created or locked): called before any work, so that a wrong directory is
    refused before a sweep starts. The directory and its store may not exist yet.

    Raises
    ------
    NotADirectoryError
        ``directory`` is an existing file.
    StoreVersionError
        The directory holds a store of another schema or package version (:func:`check_store`).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     writable_store(Path(tmp) / "new").relative_to(tmp).as_posix()
    'new/results.sqlite'
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"sweep directory {directory} is an existing file, not a directory")
    path = directory / STORE_FILENAME
    if path.exists():
        check_store(path, for_writing=True)  # read-only: nothing is written to a wrong store
    return path


def create_store(path: Path) -> None:
    """Create an empty store at ``path``: the tables, schema and package version (the writer's first step).

    Written to a temporary file and renamed into place, so a killed driver never leaves half a
    store; the caller holds the directory's lock (:class:`ResultsStore` does).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     create_store(Path(tmp) / STORE_FILENAME)
    ...     check_store(tmp).name
    'results.sqlite'
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


def open_for_reading(path: str | os.PathLike, *, immutable: bool = False,
                     for_writing: bool = False) -> tuple[sqlite3.Connection, Path]:
    """A read-only connection to the store of ``path`` (rows as :class:`sqlite3.Row`) and the store file.

    The store's versions are checked first (:func:`check_store`); ``immutable`` reads the main
    file only (no ``-wal``/``-shm`` files). The caller closes the connection.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     create_store(Path(tmp) / STORE_FILENAME)
    ...     conn, path = open_for_reading(tmp)
    ...     conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0], path.name
    ...     conn.close()
    (0, 'results.sqlite')
    """
    path = store_path(path)
    conn = _connect_readonly(path, immutable=immutable)
    try:
        _check_meta(conn, path, for_writing=for_writing)
    except BaseException:
        conn.close()
        raise
    return conn, path


def runner_name(runner) -> str:
    """``module.qualname`` of a runner: what a store records so that one store holds one runner's results.

    Examples
    --------
    >>> from numerics.experiments.runner import run
    >>> runner_name(run)
    'numerics.experiments.runner.run'
    """
    return f"{getattr(runner, '__module__', '?')}.{getattr(runner, '__qualname__', type(runner).__name__)}"
