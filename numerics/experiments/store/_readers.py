"""Reading a store (read-only, also while a sweep writes it): runs, a run's arrays, the store as CSV."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

from numerics.io import atomic_path

from ._encoding import decode_array
from ._layout import RESULT_COLUMNS, check_status, open_for_reading


def _row_to_dict(row: sqlite3.Row) -> dict[str, Any]:
    record = {name: row[name] for name in RESULT_COLUMNS}
    if record["converged"] is not None:
        record["converged"] = bool(record["converged"])
    record["config"] = json.loads(row["config_json"])
    record["metrics"] = json.loads(row["metrics_json"]) if row["metrics_json"] is not None else {}
    return record


def load_results(path: str | os.PathLike, *, as_frame: bool = False, status: str | None = None):
    """Every run of the store of ``path`` (a sweep directory or its file), in the order first registered.

    Each run is a dict of the ``runs`` columns (``hash``, ``status``, ``error``, ``attempts``,
    timings, ``host``, ``pid``, ``R_L`` of paper eq. (12), ``A_L``, ``C_L`` of eqs. (61)-(63),
    ``steps``, ``converged``; ``None`` for SQL ``NULL``) plus the decoded ``config`` and
    ``metrics`` (NaN kept). ``status`` keeps the runs in that status; ``as_frame`` returns a
    :class:`pandas.DataFrame` with ``config.*`` and ``metrics.*`` columns (needs pandas).

    Examples
    --------
    >>> import tempfile
    >>> from numerics.experiments.store import ResultsStore, RunOutcome
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with ResultsStore(tmp) as store:
    ...         store.register([("h1", '{"depth": 2}')])
    ...         store.record(RunOutcome("h1", True, {"R_L": 0.5, "steps": 10}, {}, None, None, 0.0, 1.0, 1.0, "h", 1))
    ...     rows = load_results(tmp)
    1
    >>> [(r["status"], r["R_L"], r["steps"], r["config"]["depth"]) for r in rows]
    [('done', 0.5, 10, 2)]
    """
    check_status("status", status, optional=True)
    conn, _ = open_for_reading(path)
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
    """The arrays of the run ``run_hash`` by name (only ``names``, default all), e.g. ``loss_curve``.

    ``layer_errors`` are the E e_ℓ² of paper eq. (61). A :class:`KeyError` names an unknown run
    or a missing array.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from numerics.experiments.store import ResultsStore, RunOutcome, encode_array
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
    conn, path = open_for_reading(path)
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
    """Write every run of a store as one CSV row, atomically; return the number of runs.

    Columns: the ``runs`` columns of :func:`load_results`, then ``config.*`` and ``metrics.*``
    (nested values as JSON). ``csv_path``'s directory must exist.

    Examples
    --------
    >>> import tempfile, os
    >>> from numerics.experiments.store import ResultsStore
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
    extra: list[str] = []
    for prefix in ("config.", "metrics."):
        extra += sorted({key for record in records for key in record if key.startswith(prefix)})
    with atomic_path(csv_path) as tmp_path:
        with open(tmp_path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=[*RESULT_COLUMNS, *extra], restval="")
            writer.writeheader()
            for record in records:
                writer.writerow({key: _csv_cell(value) for key, value in record.items()})
    return len(records)
