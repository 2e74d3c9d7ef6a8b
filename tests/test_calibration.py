"""Claims about the run-time estimate of a reproduction on the machine it runs on
(numerics.experiments.reproduce.calibration): the cost model's CPU seconds are divided by the speed of
the engine each run uses, and the printed line names the machine (cores, SIMD level) and the speed."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from numerics.experiments.reproduce.calibration import (TIMED_SHARE, Calibration, RunTiming, calibrate,
                                                        calibrated_estimate, format_estimate, machine_description,
                                                        run_shape, simd_level, time_runs, timed_shapes)
from numerics.experiments.execution import usable_cores
from numerics.experiments.reproduce.plan import analysis_seconds, estimate_run_seconds, make_plan, step_milliseconds
from numerics.models import MODELS, get_model
from numerics.models.cost import StepCost
from numerics.train import TrainConfig
from tolerances import ROUNDOFF, rtol


def test_each_run_is_scaled_by_the_speed_of_its_own_engine():
    plan = make_plan("smoke", "fig5a,fig6c")  # linear and softmax runs
    slow_linear = Calibration({"softmax": 1.0, "linear": 0.25}, "m", None, 0.0)
    runs, analysis, costs = calibrated_estimate(plan, slow_linear)
    for config in plan.configs:
        factor = 4.0 if config.model == "linear" else 1.0
        assert costs[config.content_hash()] == pytest.approx(factor * estimate_run_seconds(config))
    assert runs == pytest.approx(sum(costs.values()))
    # the analysis after training is scaled by the mean speed (here 0.5); a selection runs no study
    reference = analysis_seconds(plan.scale, plan.artefacts, study=False)
    assert analysis == pytest.approx({part: seconds / 0.5 for part, seconds in reference.items()})


def test_the_analysis_after_training_is_priced_and_the_studies_bounds_are_pooled():
    whole, selection = analysis_seconds("quick"), analysis_seconds("quick", study=False)
    assert whole["parallel"] > selection["parallel"] > 0  # the study's and the consistency check's bounds
    assert whole["serial"] > selection["serial"] > 0  # the frozen-heads controls
    # one more artefact is one more figure to draw in the main process
    assert analysis_seconds("quick", ["fig1", "table2"], study=False)["serial"] > \
        analysis_seconds("quick", ["table2"], study=False)["serial"]


def test_the_estimate_line_names_the_machine_and_divides_the_cpu_time_among_the_workers():
    plan = make_plan("quick")
    calibration = Calibration({"softmax": 0.5, "linear": 0.5}, "2 cores, AMD EPYC, AVX-512 (AVX512_ICL)", 0.0, 3.0)
    line = format_estimate(plan, calibration, 1)
    match = re.match(r"estimated (\S+) min wall on 1 local worker, (\S+) min CPU \(training (\S+) min, analysis "
                     r"(\S+) (s|min) of which (\S+) (s|min) in the main process; calibrated: this CPU runs the engine "
                     r"at 0\.5x the reference", line)
    assert match, line
    cpu = (plan.estimated_seconds + sum(analysis_seconds(plan.scale, plan.artefacts).values())) / 0.5
    assert float(match.group(1)) == float(match.group(2)) == pytest.approx(cpu / 60, abs=0.06)  # one worker
    assert float(match.group(3)) == pytest.approx(plan.estimated_seconds / 0.5 / 60, abs=0.06)
    assert "2 cores, AMD EPYC, AVX-512 (AVX512_ICL)" in line and "busy" not in line
    # two workers share the training and the pooled analysis, not the main process's part
    runs, analysis, _ = calibrated_estimate(plan, calibration, study=True)
    two = re.match(r"estimated (\S+) min wall", format_estimate(plan, calibration, 2))
    expected = (runs + analysis["parallel"]) / min(2, usable_cores()) + analysis["serial"]
    assert float(two.group(1)) == pytest.approx(expected / 60, abs=0.06)


def test_the_machine_is_named_by_its_cores_and_numpys_simd_level():
    assert re.match(r"\d+ cores?, .+, .+", machine_description())
    assert simd_level() in machine_description()


def test_a_calibration_measures_a_positive_speed_per_engine_in_seconds():
    calibration = calibrate(repeats=1)  # a few seconds
    assert set(calibration.speeds) == {"softmax", "linear"} and all(s > 0 for s in calibration.speeds.values())
    assert calibration.seconds < 120 and calibration.runs == {}


def test_the_quick_plans_costliest_families_are_timed_at_both_ends_of_their_depths():
    plan = make_plan("quick")
    chosen = timed_shapes(plan.configs)
    total = sum(map(estimate_run_seconds, plan.configs))
    timed = Calibration({"softmax": 1.0, "linear": 1.0}, "", None, 0.0,
                        runs={run_shape(c): RunTiming(c.eval_every, 1.0, 1.0) for c in chosen})
    covered = sum(estimate_run_seconds(c) for c in plan.configs if timed._timing(c) is not None)
    def family(config):  # the shape without the depth
        shape = run_shape(config)
        return shape[:5] + shape[6:]

    for config in chosen:  # the least and the greatest depth of its family, never one between
        depths = {c.depth for c in plan.configs if family(c) == family(config)}
        assert config.depth in (min(depths), max(depths))
    assert covered >= min(TIMED_SHARE, 0.6) * total


def test_a_run_is_priced_by_its_shapes_timing_and_between_timed_depths_by_interpolation():
    def run(depth, steps=400, model="nonlinear"):
        return TrainConfig(model=model, d=8, N=8, P=32, depth=depth, max_steps=steps, eval_every=100)

    timed = {run_shape(run(1)): RunTiming(100, first=1.0, interval=0.25),
             run_shape(run(9)): RunTiming(100, first=5.0, interval=1.25)}
    c = Calibration({"softmax": 0.5, "linear": 0.25}, "", None, 0.0, runs=timed)
    assert c.run_seconds(run(1)) == pytest.approx(1.0 + 3 * 0.25)
    assert c.run_seconds(run(5, steps=800)) == pytest.approx(3.0 + 7 * 0.75)  # halfway in depth
    # a family not timed: the cost model over its engine's speed
    assert c.run_seconds(run(2, model="linear")) == pytest.approx(estimate_run_seconds(run(2, model="linear")) / 0.25)


def test_timing_a_run_shape_measures_its_first_interval_and_each_further_one():
    config = TrainConfig(model="nonlinear", d=4, N=4, P=8, depth=2, max_steps=90, eval_every=30, eval_size=32)
    [timing] = time_runs([config])
    assert timing.eval_every == 30 and timing.first > 0 and timing.interval >= 0
    assert timing.seconds(90) == pytest.approx(timing.first + 2 * timing.interval)


def test_each_shortened_run_keeps_its_least_time_over_the_repeats(monkeypatch):
    """One slow repeat (a page-fault storm, a busy neighbour) does not set the interval: the least time does."""
    import numerics.train
    from numerics.experiments.reproduce import calibration

    clock = iter([0.0, 5.0, 10.0, 11.0,          # each timed run reads start, end: E steps take 5 s, then 1 s
                  20.0, 22.0, 30.0, 39.0])       # 2E steps: 2 s, then 9 s (the warm-up run is not timed)
    monkeypatch.setattr(numerics.train, "train", lambda config: None)
    monkeypatch.setattr(calibration.time, "process_time", lambda: next(clock))
    config = TrainConfig(model="nonlinear", d=4, N=4, P=8, depth=2, max_steps=90, eval_every=30, eval_size=32)
    [timing] = calibration.time_runs([config], repeats=2)
    assert (timing.first, timing.interval) == (1.0, 1.0)  # min(5, 1) and min(2, 9) - 1


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_registered_model_declares_the_cost_of_its_step(model):
    assert isinstance(get_model(model).STEP_COST, StepCost)
    config = TrainConfig(model=model, d=4, N=4, P=8, depth=2, max_steps=10)
    assert 0 < step_milliseconds(config) and 0 < estimate_run_seconds(config)


def test_a_model_without_a_step_cost_or_an_unknown_model_has_no_estimate(monkeypatch):
    config = TrainConfig(model="single_stream", d=4, N=4, P=8, depth=2, max_steps=10)
    monkeypatch.delattr(get_model("single_stream"), "STEP_COST")
    with pytest.raises(ValueError, match="'single_stream' declares no STEP_COST"):
        estimate_run_seconds(config)
    with pytest.raises(ValueError, match="transformer"):
        step_milliseconds(SimpleNamespace(model="transformer", batch_size=1, P=1, N=1, d=1, depth=1, a=0.0, b=0.0))


#: (model, sizes, step ms, run s) of the cost model before the coefficients moved into the models
PINNED_ESTIMATES = [
    ("linear", dict(d=128, N=128, P=1024, depth=16, batch_size=128), 154.46244510719998, 159.45736904826876),
    ("linear", dict(d=16, N=32, P=64, depth=4, batch_size=256, a=0.5, b=0.25), 3.1693943296000002, 4.2110549245952),
    ("nonlinear", dict(d=16, N=32, P=64, depth=16, batch_size=256), 2.78783872, 3.8244992614399997),
    ("nonlinear", dict(d=16, N=32, P=64, depth=8, batch_size=256, a=0.25, b=0.5), 2.4331118079999996,
     3.4594905511253327),
    ("nonlinear_rms", dict(d=16, N=32, P=64, depth=32, batch_size=256), 3.9964147199999998, 5.055635346773333),
    ("untied_values", dict(d=32, N=64, P=128, depth=32, batch_size=256), 15.36840576, 16.593766208853335),
    ("single_stream", dict(d=16, N=32, P=64, depth=16, batch_size=256), 22.973295359999998, 24.31754507605333),
    ("context_updates", dict(d=16, N=32, P=64, depth=4, batch_size=256, a=1.0, b=0.0), 66.172529408,
     68.319504596992),
]


@pytest.mark.parametrize("model, sizes, step_ms, run_seconds", PINNED_ESTIMATES)
def test_the_estimated_cost_of_a_run_is_pinned(model, sizes, step_ms, run_seconds):
    config = TrainConfig(model=model, task="difficult", max_steps=1000, eval_every=100, eval_size=1024, **sizes)
    assert step_milliseconds(config) == pytest.approx(step_ms, rel=rtol(ROUNDOFF))
    assert estimate_run_seconds(config) == pytest.approx(run_seconds, rel=rtol(ROUNDOFF))


def test_the_busy_warning_counts_other_jobs_running_now_not_a_load_average_or_its_own_children(tmp_path):
    """A job paused or finished a minute ago is not "busy" (the 1-minute average remembers it; the runnable
    count does not), and the calibration's children are read after the count was taken."""
    from numerics.experiments.reproduce.calibration import other_load

    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.95 2.10 1.00 1/380 4242\n")  # a high average, but only this process runs
    assert other_load(loadavg, samples=3, interval=0.0) == 0.0
    loadavg.write_text("0.10 0.10 0.10 4/380 4242\n")  # three other processes running now
    assert other_load(loadavg, samples=1) == 3.0
