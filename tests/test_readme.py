"""The README's commands are the ones CI and users run."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_gives_exactly_two_commands_and_ci_runs_the_test_command_verbatim():
    blocks = [b.strip() for b in _bash_blocks((ROOT / "README.md").read_text()) if b.strip()]
    assert len(blocks) >= 2
    main_job, test_command = blocks[0], blocks[1]
    assert "\n" not in main_job and "\n" not in test_command
    assert "pytest" in test_command and "pip install" in test_command and "pip install" in main_job
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines()


def test_readme_quotes_the_one_measured_run_time_of_the_main_job():
    from numerics.experiments.reproduce.scales import get_scale, measured_run_time

    text = " ".join((ROOT / "README.md").read_text().split())
    measured = measured_run_time("quick").text()
    assert f"measured: {measured}" in text
    assert measured in get_scale("quick").description  # --help, the printed plan and the report quote it
    main_job = text.split("## Layout")[0].split("Install and run the test suite")[0]
    assert "minutes" not in main_job  # no second, unmeasured figure for the main job


def test_the_quoted_run_time_is_read_from_the_benchmarks_records_slowest_first():
    """measured_run_time reads what benchmarks/bench_reproduce.py wrote (the only source): first the run under
    numpy's AVX2 kernels (``reproduce_quick_avx2.json``, the slower), then the one under AVX-512."""
    import json

    from numerics.experiments.reproduce.scales import measured_run_time

    measured = measured_run_time("quick")
    results = ROOT / "benchmarks" / "results"
    pairs = [(results / "reproduce_quick_avx2.json", measured)] + [
        (results / "reproduce_quick.json", other) for other in measured.also]
    assert len(pairs) == 2
    for path, quoted in pairs:
        record = json.loads(path.read_text())
        assert record["scale"] == quoted.scale == "quick"
        assert (quoted.wall_seconds, quoted.cpu_seconds) == (record["wall_seconds"], record["cpu_seconds"])
        assert record["machine"] in quoted.machine  # cores, CPU and numpy's SIMD level
        cores = int(record["machine"].split(" core")[0])
        assert quoted.cores == cores
        assert quoted.idle == (record["load_average_during_mean"] <= cores + 0.5), path.name  # its own workers only
        # the printed estimate came from the cost model before training and is compared with the measured time
        assert record["estimate"] is not None
        assert record["estimate_over_measured_wall"] == round(record["estimate"]["wall_seconds"]
                                                              / record["wall_seconds"], 3)
    assert "AVX2" in json.loads(pairs[0][0].read_text())["machine"]
    assert "AVX-512" in json.loads(pairs[1][0].read_text())["machine"]
    assert "AVX-512 kernels disabled" in measured.machine and "disabled" not in measured.also[0].machine
    assert measured_run_time("smoke") is None  # never measured: nothing quoted


def test_readme_states_the_suites_time_idle_and_under_load():
    text = " ".join((ROOT / "README.md").read_text().split())
    suite = text.split("Install and run the test suite")[1].split("## Layout")[0]
    assert "idle cores" in suite and "three CPU hogs" in suite and "minutes" in suite


def test_readme_says_how_to_get_the_browser_tests():
    text = " ".join((ROOT / "README.md").read_text().split())
    assert "bash .ci/install-chromium.sh" in text and "skipped" in text and "chromium" in text
