"""The certified study's cells as files that travel with the repository (the store is a working copy).

Only committed files outlive a session: every finished cell goes to ``CELLS_DIR/<hash>.npz`` (with the
winner's weights, so a later evaluation on more contexts needs no retraining; the first study's cells kept none),
the winners of the *frontier* (cells whose next depth is not done) to
``FRONTIER_DIR/<hash>.npz``; :func:`import_cells` writes them back into a store, so a new session
continues without retraining a finished cell.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import numpy as np

from numerics.io import atomic_write

from ...store import ResultsStore, RunOutcome, encode_array, load_arrays, load_results, runner_name, store_path

__all__ = ["SUMMARY_COLUMNS", "cell_files", "export_cells", "finished_hashes", "import_cells", "read_cell"]

_RECORD = "_record"
_WINNER = "winner_"
#: the columns of a cell's ``summary``, a row per candidate (``step_share``: its share of the cell's steps)
SUMMARY_COLUMNS = ("learning_rate", "steps", "doubled", "diverged", "R_select", "R_select_se", "R_report",
                   "R_report_se", "step_share")


def _write_npz(path: Path, arrays: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def cell_files(directory) -> list:
    """The ``.npz`` files of ``directory``, sorted (none if it does not exist).

    Examples
    --------
    >>> cell_files("/nonexistent")
    []
    """
    return sorted(Path(directory).glob("*.npz"))


def finished_hashes(store_dir) -> set:
    """The hashes of the finished runs of the store at ``store_dir`` (none without a store).

    Examples
    --------
    >>> finished_hashes("/nonexistent")
    set()
    """
    return {r["hash"] for r in load_results(store_dir, status="done")} if store_path(store_dir).is_file() else set()


def read_cell(path) -> tuple[dict, dict]:
    """``(record, arrays)`` of an exported cell file: ``record`` has ``hash``, ``config``, ``metrics``.

    Raises
    ------
    ValueError
        A file that is not an exported cell (naming it).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "x.npz"
    ...     _write_npz(p, {_RECORD: np.array(json.dumps({"hash": "x"}))})
    ...     read_cell(p)[0]["hash"]
    'x'
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            record = json.loads(str(data[_RECORD]))
            arrays = {name: data[name] for name in data.files if name != _RECORD}
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"{path} is not an exported certified-study cell ({exc})") from None
    return record, arrays


def export_cells(store_dir, cells_dir, frontier_dir, children: dict | None = None, *,
                 recipes: dict | None = None) -> int:
    """Export the store's new finished cells to ``cells_dir``, the frontier's winners to ``frontier_dir``.

    ``frontier_dir`` None: the runs have no next depth that starts from them (the contrast runs).
    ``children`` maps a cell hash to its child's (next depth, same setting and seed); by default it is
    read from the store, so a process other than the study's driver can export while the study runs.
    ``recipes`` maps a run hash to its recipe's name, recorded in the file (``recipe``). Returns the
    number of cells written.

    Notes
    -----
    No example: it needs a store of trained cells (``tests/test_certified.py``).
    """
    if not store_path(store_dir).is_file():
        return 0
    records = {r["hash"]: r for r in load_results(store_dir, status="done")}
    if children is None:
        children = {r["config"].get("parent"): r["hash"] for r in load_results(store_dir) if r["config"].get("parent")}
    written = 0
    for run_hash, record in records.items():
        target = Path(cells_dir) / f"{run_hash}.npz"
        frontier = None if frontier_dir is None else Path(frontier_dir) / f"{run_hash}.npz"
        # the frontier file of a cell whose child is not done yet
        wanted = frontier if frontier is not None and children.get(run_hash) not in records else None
        if frontier is not None and wanted is None:
            frontier.unlink(missing_ok=True)
        if target.is_file() and (wanted is None or wanted.is_file()):
            continue
        arrays = load_arrays(store_dir, run_hash)
        if not target.is_file():
            meta = {"hash": run_hash, "config": record["config"], "metrics": record["metrics"]}
            if recipes and run_hash in recipes:
                meta["recipe"] = recipes[run_hash]
            _write_npz(target, {**arrays, _RECORD: np.array(json.dumps(meta, sort_keys=True))})
            written += 1
        if wanted is not None:
            _write_npz(wanted, {k: v for k, v in arrays.items() if k.startswith(_WINNER)})
    return written


def import_cells(cells_dir, frontier_dir, store_dir, runner) -> int:
    """Write into ``store_dir`` the exported cells (and frontier winners) it lacks; returns how many.

    ``frontier_dir`` None: runs without a frontier (the contrast runs).

    Notes
    -----
    No example: it needs exported cells (``tests/test_certified.py``).
    """
    done = finished_hashes(store_dir)
    todo = [f for f in cell_files(cells_dir) if f.stem not in done]
    if not todo:
        return 0
    with ResultsStore(store_dir) as store:
        store.claim_runner(runner_name(runner))
        for path in todo:
            record, arrays = read_cell(path)
            frontier = None if frontier_dir is None else Path(frontier_dir) / path.name
            if frontier is not None and frontier.is_file():
                with np.load(frontier, allow_pickle=False) as data:
                    arrays.update({name: data[name] for name in data.files})
            store.register([(record["hash"], json.dumps(record["config"], sort_keys=True))])
            now = time.time()
            store.record(RunOutcome(record["hash"], True, record["metrics"],
                                    {k: encode_array(v) for k, v in arrays.items()}, None, None, now, now, 0.0,
                                    socket.gethostname(), 0))
    return len(todo)
