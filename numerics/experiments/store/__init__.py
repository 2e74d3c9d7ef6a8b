"""The results store of a depth sweep: one SQLite file, ``DIR/results.sqlite``, per sweep directory.

Tables (``_layout.py``): ``meta`` (schema and package version), ``runs`` (one row per
config content hash: status, config, error, timings, worker, the :data:`METRIC_COLUMNS` and all
metrics as JSON) and ``arrays`` (each array result as ``.npy`` bytes, :func:`encode_array`).
Another schema version cannot be read, another package version cannot be written (content
hashes include it): :class:`StoreVersionError`.

One writer, the sweep driver (:class:`ResultsStore`), holds a ``flock`` on ``DIR`` and commits
each finished run in its own transaction (WAL; ``synchronous=FULL`` for runs), so a killed
driver loses no committed run; workers never touch the file, so ``DIR`` must be local to the
driver; :func:`writable_store` checks a directory before any work. Readers (:func:`load_results`,
:func:`load_arrays`, :func:`export_csv`) open it read-only, also during a sweep. numpy is
imported only to encode arrays (workers pin BLAS threads first).
"""

from ._encoding import RunOutcome, decode_array, encode_array
from ._layout import METRIC_COLUMNS, SCHEMA_VERSION, STATUSES, STORE_FILENAME
from ._layout import StoreLockedError, StoreRunnerError, StoreVersionError, check_store, store_path, writable_store
from ._layout import runner_name
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
    "runner_name",
    "check_store",
    "writable_store",
    "encode_array",
    "decode_array",
    "load_results",
    "load_arrays",
    "export_csv",
]
