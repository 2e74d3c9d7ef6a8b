"""Claims about the run-time estimate of a reproduction on the machine it runs on
(numerics.experiments.reproduce.calibration): the cost model's CPU seconds are divided by the speed of
the engine each run uses, and the printed line names the machine (cores, SIMD level) and the speed."""

from __future__ import annotations

import re

import pytest

from numerics.experiments.reproduce.calibration import (Calibration, calibrate, calibrated_estimate,
                                                        format_estimate, machine_description, simd_level)
from numerics.experiments.reproduce.plan import estimate_run_seconds, make_plan


def test_each_run_is_scaled_by_the_speed_of_its_own_engine():
    plan = make_plan("smoke", "fig5a,fig6c")  # linear and softmax runs
    slow_linear = Calibration({"softmax": 1.0, "linear": 0.25}, "m", None, 0.0)
    runs, studies, costs = calibrated_estimate(plan, slow_linear)
    for config in plan.configs:
        factor = 4.0 if config.model == "linear" else 1.0
        assert costs[config.content_hash()] == pytest.approx(factor * estimate_run_seconds(config))
    assert runs == pytest.approx(sum(costs.values())) and studies == 0.0  # a selection runs no study


def test_the_estimate_line_names_the_machine_and_divides_the_cpu_time_among_the_workers():
    plan = make_plan("quick")
    calibration = Calibration({"softmax": 0.5, "linear": 0.5}, "2 cores, AMD EPYC, AVX-512 (AVX512_ICL)", 0.0, 3.0)
    line = format_estimate(plan, calibration, 1)
    match = re.match(r"estimated (\S+) min wall on 1 local worker, (\S+) min CPU \(calibrated: this CPU runs "
                     r"the engine at 0\.5x the reference", line)
    assert match, line
    assert float(match.group(1)) == float(match.group(2)) == pytest.approx(plan.total_seconds / 0.5 / 60, abs=0.06)
    assert "2 cores, AMD EPYC, AVX-512 (AVX512_ICL)" in line and "busy" not in line


def test_the_machine_is_named_by_its_cores_and_numpys_simd_level():
    assert re.match(r"\d+ cores?, .+, .+", machine_description())
    assert simd_level() in machine_description()


def test_a_calibration_measures_a_positive_speed_per_engine_in_seconds():
    calibration = calibrate(repeats=1)  # a few seconds
    assert set(calibration.speeds) == {"softmax", "linear"} and all(s > 0 for s in calibration.speeds.values())
    assert calibration.seconds < 120
