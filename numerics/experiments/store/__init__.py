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


from ._encoding import RunOutcome, decode_array, encode_array
from ._layout import METRIC_COLUMNS, SCHEMA_VERSION, STATUSES, STORE_FILENAME
from ._layout import StoreLockedError, StoreRunnerError, StoreVersionError, check_store, store_path
from ._readers import export_csv, load_arrays, load_results
from ._writer import ResultsStore

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
