"""Claims about progress output (numerics.progress): when the output is not a terminal, a one-line
record with done/total and an ETA appears at the start, at least every ``interval`` seconds (even
while nothing finishes) and at the end; on a terminal a bar; nothing when switched off.
Time is a fake clock: no test sleeps."""

from __future__ import annotations

import io
import re

import pytest

from numerics.progress import ProgressLog, progress_bar

RECORD = re.compile(r"^sweep: (\d+)/(\d+) runs \(\d+ %\), \S+ elapsed, (ETA \S+|finished|stopped)")


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _records(stream: io.StringIO) -> list[str]:
    lines = stream.getvalue().splitlines()
    assert all(RECORD.match(line) for line in lines), lines
    return lines


def test_a_record_is_written_at_least_every_interval_while_runs_finish():
    clock, out = FakeClock(), io.StringIO()
    log = ProgressLog(100, desc="sweep", unit="run", interval=30, stream=out, clock=clock, heartbeat=False)
    for _ in range(100):
        clock.now += 7.0  # a run every 7 s: 700 s in all
        log.update(1)
    log.close()
    lines = _records(out)
    # start, then one record per 30 s window (every 5th run: 35 s > 30 s), then the final one
    assert len(lines) == 1 + 100 // 5 + 1
    done = [int(RECORD.match(line).group(1)) for line in lines]
    assert done[0] == 0 and done[-1] == 100 and lines[-1].endswith("finished")
    gaps = [b - a for a, b in zip(done[1:-1], done[2:-1])]
    assert set(gaps) == {5}, gaps  # never more than 30 s (5 runs x 7 s > 30 s) without a record


def test_a_record_is_written_while_nothing_finishes():
    clock, out = FakeClock(), io.StringIO()
    log = ProgressLog(3, desc="sweep", unit="run", interval=30, stream=out, clock=clock, heartbeat=False)
    clock.now = 29.0
    assert not log.poll()  # what the heartbeat thread calls
    clock.now = 30.0
    assert log.poll()
    clock.now = 59.0
    assert not log.poll()
    clock.now = 60.5
    assert log.poll()
    assert [RECORD.match(line).group(3) for line in _records(out)] == ["ETA unknown"] * 3


def test_the_eta_extrapolates_the_runs_done_in_this_call_not_those_reused():
    clock, out = FakeClock(), io.StringIO()
    log = ProgressLog(10, initial=4, desc="sweep", unit="run", interval=30, stream=out, clock=clock, heartbeat=False)
    clock.now = 40.0
    log.update(2)  # 2 runs in 40 s, 4 to go: 80 s
    assert _records(out)[-1] == "sweep: 6/10 runs (60 %), 40s elapsed, ETA 1m20s"


def test_the_heartbeat_thread_writes_records_without_updates():
    clock, out = FakeClock(), io.StringIO()
    log = ProgressLog(2, desc="sweep", unit="run", interval=0.01, stream=out, clock=clock)
    try:
        for _ in range(3):
            clock.now += 1.0
            # the thread polls at the interval (0.01 s of real time); wait for it without a fixed sleep
            deadline = len(out.getvalue().splitlines()) + 1
            for _ in range(10_000):
                if len(out.getvalue().splitlines()) >= deadline:
                    break
                log._closed.wait(0.001)
            assert len(out.getvalue().splitlines()) >= deadline
    finally:
        log.close()
    assert len(_records(out)) >= 5


def test_progress_bar_is_records_off_a_terminal_a_bar_on_one_and_nothing_when_off():
    out = io.StringIO()
    with progress_bar(2, enabled=None, desc="sweep", unit="run", stream=out) as bar:
        bar.update(2)
    assert isinstance(bar, ProgressLog) and _records(out)[-1].startswith("sweep: 2/2 runs (100 %)")

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    bar = progress_bar(2, enabled=None, desc="sweep", unit="run", stream=tty)
    bar.update(2)
    bar.close()
    assert not isinstance(bar, ProgressLog) and "2/2" in tty.getvalue()

    silent = io.StringIO()
    with progress_bar(2, enabled=False, stream=silent) as bar:
        bar.update(2)
    assert silent.getvalue() == ""


def test_a_sweep_whose_output_is_not_a_terminal_writes_records(tmp_path, capsys):
    from test_sweep import ToyConfig, toy_runner

    from numerics.experiments.sweep import Execution, Grid, run_sweep

    run_sweep(Grid(depth=[1, 2, 3], config_type=ToyConfig), tmp_path, runner=toy_runner, execution=Execution(workers=1))
    lines = capsys.readouterr().err.splitlines()
    assert RECORD.match(lines[0]).group(1, 2) == ("0", "3")
    assert lines[-1].startswith("sweep: 3/3 runs (100 %)") and lines[-1].endswith("finished, failed=0")


def test_interval_must_be_positive():
    with pytest.raises(ValueError, match="interval"):
        ProgressLog(1, interval=0)


WEIGHTED = re.compile(r"^sweep: (\d+)/(\d+) runs \((\d+) % of the estimated work\), \S+ elapsed, "
                      r"(ETA (\S+)|finished|stopped)")


def test_the_eta_weighs_runs_by_their_estimated_cost_so_a_long_last_run_is_not_hidden():
    # nine cheap runs (cost 1) finish first, then one run of cost 91 is left: counting runs would say
    # ETA 1 s after 9 s; by cost 9 of 100 are done in 9 s, so 91 s remain
    costs = [1.0] * 9 + [91.0]
    clock, out = FakeClock(), io.StringIO()
    log = ProgressLog(10, desc="sweep", unit="run", interval=30, stream=out, clock=clock, heartbeat=False,
                      total_cost=sum(costs))
    for cost in costs[:9]:
        clock.now += 1.0
        log.update(1, cost=cost)
    weighted = log.record()
    assert WEIGHTED.match(weighted).group(1, 3, 5) == ("9", "9", "1m31s"), weighted
    counted = ProgressLog(10, desc="sweep", unit="run", stream=io.StringIO(), clock=clock, heartbeat=False)
    counted._started = 0.0
    counted.update(9)
    assert counted.record().endswith("ETA 1s")  # what the count said: the defect this weighting removes
    # while the long run runs, a record still appears every 30 s (nothing finishes: the ETA stays the
    # estimate from the work done, 9 cost in 9 s)
    for _ in range(3):
        clock.now += 30.0
        assert log.poll()
        assert WEIGHTED.match(_last(out)).group(1, 3) == ("9", "9")
    clock.now += 1.0
    log.update(1, cost=costs[9])
    log.close()
    assert WEIGHTED.match(_last(out)).group(1, 3, 4) == ("10", "100", "finished")


def _last(stream: io.StringIO) -> str:
    return stream.getvalue().splitlines()[-1]


def test_runs_reused_from_the_store_count_as_done_work_but_not_as_speed():
    clock, out = FakeClock(), io.StringIO()
    # 4 reused runs of cost 40 of 100; 10 more cost done in 20 s: 50 left at 0.5 cost/s = 100 s
    log = ProgressLog(10, initial=4, desc="sweep", unit="run", interval=1, stream=out, clock=clock, heartbeat=False,
                      total_cost=100.0, initial_cost=40.0)
    clock.now = 20.0
    log.update(1, cost=10.0)
    assert WEIGHTED.match(_last(out)).group(1, 3, 5) == ("5", "50", "1m40s")


def test_a_cost_bar_on_a_terminal_counts_runs_and_its_remaining_time_follows_the_cost():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    tty = Terminal()
    bar = progress_bar(3, desc="sweep", unit="run", stream=tty, total_cost=10.0)
    bar.update(1, cost=1.0)
    bar.set_postfix(failed=0)
    bar.close()
    text = tty.getvalue()
    assert "1/3 runs" in text and "failed=0" in text and "% of the estimated work" in text


def test_weighted_costs_must_be_consistent():
    with pytest.raises(ValueError, match="total_cost"):
        ProgressLog(2, total_cost=1.0, initial_cost=2.0, heartbeat=False, stream=io.StringIO())


def test_the_sweep_weighs_each_run_by_its_given_cost_and_a_missing_run_by_their_mean():
    from numerics.experiments.sweep._run import _run_costs

    assert _run_costs(None, ["a", "b"]) is None
    assert _run_costs({"a": 1.0, "b": 3.0, "z": 100.0}, ["a", "b", "c"]) == {"a": 1.0, "b": 3.0, "c": 2.0}
    with pytest.raises(ValueError, match="costs"):
        _run_costs({"a": -1.0}, ["a"])
    with pytest.raises(TypeError, match="costs"):
        _run_costs([1.0], ["a"])


def test_a_sweep_given_costs_writes_cost_weighted_records(tmp_path, capsys):
    from test_sweep import ToyConfig, toy_runner

    from numerics.experiments.sweep import Execution, Grid, run_sweep

    grid = Grid(depth=[1, 2], config_type=ToyConfig)
    costs = {config.content_hash(): 1.0 + 9.0 * (config.depth == 2) for config in grid.configs}
    run_sweep(grid, tmp_path, runner=toy_runner, costs=costs, execution=Execution(workers=1))
    lines = capsys.readouterr().err.splitlines()
    assert WEIGHTED.match(lines[0]).group(1, 3) == ("0", "0")
    assert WEIGHTED.match(lines[-1]).group(1, 3, 4) == ("2", "100", "finished")


def test_a_missing_value_is_shown_as_a_dash_never_nan():
    from numerics.progress import NO_VALUE, format_value

    assert NO_VALUE == "–"
    assert format_value(float("nan")) == format_value(None) == NO_VALUE
    assert format_value(0.0) == "0" and format_value(1234567.0) == "1.235e+06" and format_value(2.5, ".2f") == "2.50"
