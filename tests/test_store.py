"""Claims about the sweep results store (numerics/experiments/store.py): durable, exact, versioned, single-writer."""

from __future__ import annotations

import csv
import json
import math
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from numerics.experiments import store as st_
from numerics.experiments.store import (
    ResultsStore,
    RunOutcome,
    StoreLockedError,
    StoreVersionError,
    check_store,
    decode_array,
    encode_array,
    export_csv,
    load_arrays,
    load_results,
)


def _outcome(run_hash, metrics=None, arrays=None, *, ok=True, error=None):
    return RunOutcome(
        run_hash=run_hash, ok=ok, metrics=metrics or {}, arrays={k: encode_array(v) for k, v in (arrays or {}).items()},
        error=error, traceback=None, started_at=10.0, finished_at=12.5, wall_time=2.5, host="host", pid=123,
    )


@pytest.fixture
def sweep_dir(tmp_path):
    return tmp_path / "sweep"


@given(hnp.arrays(
    dtype=st.sampled_from([np.float32, np.float64, np.int64, np.bool_, np.complex128]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
))
def test_npy_blobs_round_trip_bitwise(array):
    back = decode_array(encode_array(array))
    assert back.dtype == array.dtype and back.shape == array.shape
    assert back.tobytes() == array.tobytes()


def test_object_arrays_are_refused_as_results():
    with pytest.raises(TypeError, match="numeric arrays"):
        encode_array(np.array([{"a": 1}], dtype=object))


def test_a_finished_run_reads_back_with_its_metrics_and_bitwise_arrays(sweep_dir):
    rng = np.random.default_rng(0)
    curve, layer_errors = rng.standard_normal((7, 2)), rng.standard_normal(4).astype(np.float32)
    metrics = {"R_L": 0.25, "A_L": 0.5, "C_L": 0.125, "steps": 300, "converged": True, "wall_time": 1.5}
    with ResultsStore(sweep_dir) as results:
        assert results.register([("h1", json.dumps({"depth": 4}))]) == 1
        results.mark_running(["h1"])
        results.record(_outcome("h1", metrics, {"loss_curve": curve, "layer_errors": layer_errors}))
    (row,) = load_results(sweep_dir)
    assert row["status"] == "done" and row["attempts"] == 1
    assert (row["R_L"], row["A_L"], row["C_L"], row["steps"], row["converged"]) == (0.25, 0.5, 0.125, 300, True)
    assert row["metrics"] == metrics and row["config"] == {"depth": 4}
    assert (row["started_at"], row["finished_at"], row["wall_time"], row["host"], row["pid"]) == (10.0, 12.5, 2.5, "host", 123)
    arrays = load_arrays(sweep_dir, "h1")
    assert arrays["loss_curve"].tobytes() == curve.tobytes()
    assert arrays["layer_errors"].dtype == np.float32 and arrays["layer_errors"].tobytes() == layer_errors.tobytes()
    assert list(load_arrays(sweep_dir, "h1", names=["layer_errors"])) == ["layer_errors"]


def test_nan_metric_is_null_in_its_column_and_nan_in_the_json(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
        results.record(_outcome("h1", {"R_L": 1.0, "A_L": 1.0, "C_L": float("nan"), "steps": 3, "converged": False}))
    (row,) = load_results(sweep_dir)
    assert row["C_L"] is None and math.isnan(row["metrics"]["C_L"])
    assert row["converged"] is False


def test_registering_a_run_twice_never_duplicates_it(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        assert results.register([("h1", "{}"), ("h2", "{}")]) == 2
        results.record(_outcome("h1", {"R_L": 1.0}))
        assert results.register([("h1", "{}"), ("h2", "{}"), ("h3", "{}")]) == 1
        assert results.statuses() == {"h1": "done", "h2": "pending", "h3": "pending"}
    assert [row["hash"] for row in load_results(sweep_dir)] == ["h1", "h2", "h3"]


def test_a_failed_run_keeps_its_error_and_can_be_reset_to_pending(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
        results.record(_outcome("h1", ok=False, error="RuntimeError: boom"))
        assert load_results(sweep_dir, status="failed")[0]["error"] == "RuntimeError: boom"
        assert results.reset(["h1"], from_status="failed") == 1
        assert results.counts() == {"pending": 1, "running": 0, "done": 0, "failed": 0}
    assert load_results(sweep_dir)[0]["error"] is None


def test_recording_a_run_that_was_never_registered_changes_nothing(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        with pytest.raises(KeyError, match="not registered"):
            results.record(_outcome("nope", {"R_L": 1.0}, {"x": np.ones(2)}))
    with sqlite3.connect(st_.store_path(sweep_dir)) as conn:
        assert conn.execute("SELECT COUNT(*) FROM arrays").fetchone() == (0,)


@pytest.mark.parametrize(
    "update",
    ["UPDATE runs SET status = 'done'", "UPDATE runs SET status = 'failed'", "UPDATE runs SET status = 'lost'"],
)
def test_schema_refuses_a_done_row_without_metrics_a_failed_row_without_error_and_unknown_statuses(sweep_dir, update):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
    with sqlite3.connect(st_.store_path(sweep_dir)) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute(update)


def test_running_rows_left_by_a_dead_driver_are_requeued(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}"), ("h2", "{}")])
        results.mark_running(["h1", "h2"])
        results.record(_outcome("h2", {"R_L": 1.0}))
    with ResultsStore(sweep_dir) as results:
        assert results.requeue_running() == 1
        assert results.statuses() == {"h1": "pending", "h2": "done"}


def test_a_second_writer_is_refused_while_the_first_holds_the_lock(sweep_dir):
    first = ResultsStore(sweep_dir)
    try:
        with pytest.raises(StoreLockedError, match="lock"):
            ResultsStore(sweep_dir)
        assert load_results(sweep_dir) == []  # readers are not blocked
    finally:
        first.close()
    ResultsStore(sweep_dir).close()  # released on close


def _set_meta(sweep_dir, key, value):
    conn = sqlite3.connect(st_.store_path(sweep_dir))
    with conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    conn.close()


def test_store_of_another_schema_version_is_refused_with_one_line(sweep_dir):
    ResultsStore(sweep_dir).close()
    _set_meta(sweep_dir, "schema_version", "999")
    for action in (lambda: load_results(sweep_dir), lambda: ResultsStore(sweep_dir), lambda: check_store(sweep_dir)):
        with pytest.raises(StoreVersionError, match="schema version '999'") as info:
            action()
        assert "\n" not in str(info.value)


def test_store_of_another_package_version_is_readable_but_not_writable(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
    _set_meta(sweep_dir, "package_version", "0.0.1")
    before = st_.store_path(sweep_dir).read_bytes()
    assert len(load_results(sweep_dir)) == 1
    with pytest.raises(StoreVersionError, match="created by inverse-depth 0.0.1"):
        ResultsStore(sweep_dir)
    assert st_.store_path(sweep_dir).read_bytes() == before


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    (tmp_path / "results.sqlite").write_text("not a database at all " * 100)
    with pytest.raises(StoreVersionError, match="not an inverse-depth sweep store"):
        load_results(tmp_path)


def test_reading_a_missing_store_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no sweep results store"):
        load_results(tmp_path)
    assert not (tmp_path / "results.sqlite").exists()


def test_load_arrays_of_an_unknown_run_is_a_key_error(sweep_dir):
    ResultsStore(sweep_dir).close()
    with pytest.raises(KeyError, match="no run with hash"):
        load_arrays(sweep_dir, "nope")


def test_store_uses_wal_journal_and_passes_integrity_check(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
    with sqlite3.connect(st_.store_path(sweep_dir)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_as_frame_gives_a_flat_dataframe_or_says_pandas_is_needed(sweep_dir):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", json.dumps({"depth": 2}))])
        results.record(_outcome("h1", {"R_L": 0.5}))
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            load_results(sweep_dir, as_frame=True)
    else:
        frame = load_results(sweep_dir, as_frame=True)
        assert frame.loc[0, "config.depth"] == 2 and frame.loc[0, "R_L"] == 0.5


def test_csv_export_has_one_row_per_run_with_flattened_config_and_metrics(sweep_dir, tmp_path):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", json.dumps({"depth": 2, "init": {"scale": 0.5}})), ("h2", json.dumps({"depth": 4}))])
        results.record(_outcome("h1", {"R_L": 0.5, "steps": 7}))
    out = tmp_path / "runs.csv"
    assert export_csv(sweep_dir, out) == 2
    with out.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["hash"], r["status"], r["config.depth"], r["R_L"]) for r in rows] == [
        ("h1", "done", "2", "0.5"), ("h2", "pending", "4", "")]
    assert json.loads(rows[0]["config.init"]) == {"scale": 0.5} and rows[0]["metrics.steps"] == "7"


def test_csv_export_interrupted_mid_write_leaves_the_old_file_and_no_temporary(sweep_dir, tmp_path, monkeypatch):
    with ResultsStore(sweep_dir) as results:
        results.register([("h1", "{}")])
    out = tmp_path / "runs.csv"
    out.write_text("previous export\n")

    def broken_writerow(self, row):
        raise KeyboardInterrupt

    monkeypatch.setattr(csv.DictWriter, "writerow", broken_writerow)
    with pytest.raises(KeyboardInterrupt):
        export_csv(sweep_dir, out)
    assert out.read_text() == "previous export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.csv", "sweep"]


def test_a_store_interrupted_while_being_created_leaves_no_file_and_can_be_created_again(sweep_dir, monkeypatch):
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(st_._layout, "_package_version", interrupted)  # the module that creates the file
    with pytest.raises(KeyboardInterrupt):
        ResultsStore(sweep_dir)
    assert list(sweep_dir.iterdir()) == []
    monkeypatch.undo()
    with ResultsStore(sweep_dir) as results:
        assert results.counts()["pending"] == 0
