"""Version 2 of the certified study: population-scale sets, U_L and diverse starts, doubled and long caps."""

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from page_parts import headings, table, tables
from tiny_certified import TINY
from tolerances import ROUNDOFF

from numerics.experiments.study.certified import SUMMARY_COLUMNS
from numerics.experiments.study.certified.cells import read_cell
from numerics.experiments.study.plan import REVISED_PLAN, Cell, Plan
from numerics.experiments.study.certified.facts import PairedDifference, revised_facts
from numerics.experiments.study.certified.revised import revised_sections
from numerics.experiments.study.certified.table import collect

COL = {name: i for i, name in enumerate(SUMMARY_COLUMNS)}
SHIPPED_CELLS = Path(__file__).resolve().parents[1] / "docs" / "results" / "certified" / "cells"
REVISED_CELLS = SHIPPED_CELLS.parents[1] / "certified-revised" / "cells"


def test_every_cell_has_the_revised_starts_and_caps(tiny_certified):
    cells = tiny_certified.cells
    # (start, rate, cap, doubled) of every candidate, by depth
    kinds = {c.depth: {(x.start, x.learning_rate, x.steps, x.doubled) for x in c.candidates} for c in cells.values()}
    (cold_rate,), (warm_rate,) = {lr for kind, lr in TINY.doubled_kinds if kind == "cold"}, TINY.expressible_rates
    warm, cold = TINY.warm_steps, TINY.cold_steps
    for depth in TINY.depths:
        assert {("expressible", 0.0, 0, False), ("expressible", warm_rate, warm, False),
                ("diverse", TINY.diverse_rates[0], TINY.diverse_steps, False),
                ("cold", cold_rate, 2 * cold, True), ("expressible", warm_rate, 2 * warm, True)} <= kinds[depth]
    assert ("nested", TINY.warm_rates[0], 2 * warm, True) in kinds[2] and ("nested", 0.0, 0, False) not in kinds[1]
    # the long caps only where the plan puts them, never doubled
    ((_, _, long_depth),), (half, full) = TINY.long_caps, TINY.long_steps
    assert {("cold", cold_rate, half, False), ("cold", cold_rate, full, False),
            ("expressible", warm_rate, full, False)} <= kinds[long_depth]
    for depth in set(TINY.depths) - {long_depth}:
        assert not any(steps == full for _, _, steps, _ in kinds[depth])
    assert not any(steps == 2 * full for _, _, steps, _ in kinds[long_depth])


def test_report_errors_are_block_means_of_the_whole_report_set(tiny_certified):
    """Each stored column is the mean of ``report_block`` consecutive report contexts: per context in the tiny study
    (its contrast runs pair with it context by context), blocks of 64 in a shipped revised cell."""
    shipped = sorted(REVISED_CELLS.glob("*.npz"))[0]
    for path in sorted(tiny_certified.cells_dir.glob("*.npz")) + [shipped]:
        record, arrays = read_cell(path)
        summary, blocks = arrays["summary"], arrays["report_errors"]
        config = record["config"]
        assert blocks.shape == (summary.shape[0], config["report_size"] // config["report_block"])
        np.testing.assert_allclose(blocks.mean(axis=1), summary[:, COL["R_report"]], rtol=1e-5)
    assert read_cell(shipped)[0]["config"]["report_block"] == 64


def test_exported_revised_cells_keep_their_winners_weights(tiny_certified):
    for path in sorted((tiny_certified.cells_dir).glob("*.npz")):
        record, arrays = read_cell(path)
        assert arrays["winner_W_q"].shape[0] == record["config"]["depth"]


def test_the_untrained_U_L_start_is_at_least_as_good_as_B_L_at_depth_two(tiny_certified):
    """U_L ≤ B_L by construction (its atomic branch is B_L): on the report set, within their paired noise."""
    rows, errors = collect(tiny_certified.cells_dir)
    at2 = {(r.start, r.steps): v for r, v in zip(errors.rows, errors.values) if r.depth == 2 and not r.doubled}
    diff = at2["expressible", 0] - at2["oracle", 0]
    assert diff.mean() <= 3 * diff.std(ddof=1) / np.sqrt(diff.size)


def test_cells_of_two_plan_versions_are_refused(tiny_certified, tmp_path):
    shutil.copytree(tiny_certified.cells_dir, tmp_path / "cells")
    shutil.copy(sorted(SHIPPED_CELLS.glob("*.npz"))[0], tmp_path / "cells")
    with pytest.raises(ValueError, match="mixes plan versions: version"):
        collect(tmp_path / "cells")


def test_the_first_studys_cells_are_read_as_data():
    """Its plan is retired: a cell dict without the format's fields reads, its evaluation sets at eval_size."""
    paths = sorted(SHIPPED_CELLS.glob("*.npz"))
    assert len(paths) == 424
    for path in paths[:5]:
        record, _ = read_cell(path)
        assert "version" not in record["config"]
        cell = Cell.from_dict(record["config"])
        assert cell.select_size == cell.report_size == cell.eval_size == 4096 and cell.report_block == 1
    rows, errors = collect(SHIPPED_CELLS)
    assert len({r.cell for r in rows}) == 424 and errors.values.shape[0] == len(rows)


def test_a_cell_of_an_unknown_format_is_refused_naming_the_field():
    record, _ = read_cell(sorted((SHIPPED_CELLS.parents[1] / "certified-revised" / "cells").glob("*.npz"))[0])
    assert record["config"]["version"] == 2
    with pytest.raises(ValueError, match="version must be 1 or 2"):
        Cell.from_dict({**record["config"], "version": 3})


@pytest.mark.parametrize("plan, cells", [(REVISED_PLAN, SHIPPED_CELLS.parents[1] / "certified-revised" / "cells")])
def test_the_plans_build_every_shipped_cell_hash_for_hash(plan, cells):
    """Nothing already trained is retrained: each shipped cell is the plan's cell, with the plan's recipe."""
    paths = sorted(cells.glob("*.npz"))
    assert paths
    for path in paths:
        record, _ = read_cell(path)
        c = record["config"]
        cell = plan.cell(c["a"], c["b"], c["P"], c["depth"], c["seed"], parent=c.get("parent"), k=c["k"])
        assert cell.content_hash() == record["hash"], path.name


@pytest.mark.parametrize("changes, match", [
    (dict(select_size=4096), "select_size = 4096 is smaller than the plan's minimum"),
    (dict(report_block=100), "report_block must divide report_size"),
    (dict(doubled_kinds=(("warm", 1e-3),)), "start must be one of"),
])
def test_the_revised_plan_refuses_bad_fields(changes, match):
    with pytest.raises(ValueError, match=match):
        dataclasses.replace(REVISED_PLAN, **changes)


def test_the_candidates_follow_the_plans_fields_not_a_version():
    """U_L's starts are in a cell where the plan has their rates and U_L is shipped for the setting."""
    with_U = Plan(expressible_rates=(3e-4,)).cell(0.0, 0.0, 64, 1, 0)
    without = Plan().cell(0.0, 0.0, 64, 1, 0)
    assert "expressible" in {c.start for c in with_U.candidates}
    assert "expressible" not in {c.start for c in without.candidates}


def test_the_revised_sections_say_what_ran_and_what_did_not(tiny_certified):
    rows, errors = collect(tiny_certified.cells_dir)
    plan = dataclasses.replace(TINY, depths=TINY.depths + (2 * TINY.depths[-1],))  # a depth the study never ran
    facts = revised_facts(rows, errors, plan, tiny_certified.cells_dir, population_contexts=2048)
    text = "\n".join(revised_sections(facts))
    # what ran and what did not: the coverage table (the depths not done are named, none judged on fewer seeds)
    done = ", ".join(map(str, TINY.depths))
    assert table(text, "spectrum", "depths done") == [["(0, 0)", done, str(plan.depths[-1])]]
    sections = headings(text, level=3)
    for heading in ("The L = 2 step at population scale", "The envelope against U_L", "Long caps",
                    "The envelope's decomposition (Fig. 6c/d)"):
        assert any(h.startswith(heading) for h in sections), heading
    assert facts["coverage"] == [{"a": 0.0, "b": 0.0, "done": list(TINY.depths), "todo": [plan.depths[-1]],
                                  "partial": [], "complete_seeds": 0}]
    ((_, _, long_depth),) = TINY.long_caps
    assert {r["depth"] for r in facts["envelope"]} == set(TINY.depths)
    assert [r["depth"] for r in facts["long"]] == [long_depth] * 4  # two starts at two caps
    assert [(r["depth"], r["half"], r["full"]) for r in facts["long_doubling"]] == [(long_depth, *TINY.long_steps)]
    assert revised_facts(rows, errors, Plan(), tiny_certified.cells_dir) is None
    assert revised_sections(None) == []


def test_the_winners_decomposition_is_read_back_or_recomputed_from_their_weights_alike(tiny_certified, monkeypatch):
    """A cell that stored its winner's A_L, C_L and one that did not (recomputed from the kept weights, on the
    same report contexts) give the same numbers; they recompose the winner's report loss (eq. 63)."""
    from numerics.experiments.study.certified import cells as cells_module
    from numerics.experiments.study.run import cell_decomposition

    rows, errors = collect(tiny_certified.cells_dir)
    facts = revised_facts(rows, errors, TINY, tiny_certified.cells_dir, population_contexts=2048,
                          decomposition_contexts=TINY.report_size)  # the whole report set: the stored values
    decomposition = {r["depth"]: r for r in facts["decomposition"]}
    assert set(decomposition) == set(TINY.depths) and decomposition[1]["C"] is None
    winner = next(r for r in rows if r.depth == 2 and r.selected)
    d2 = decomposition[2]
    recomposed = d2["C"]["value"] + d2["A_minus_C"]["value"] / 2
    assert recomposed == pytest.approx(winner.R_L, rel=ROUNDOFF[np.float32])
    stored = cell_decomposition(tiny_certified.cells_dir, winner.cell, TINY.report_size)
    real_read = cells_module.read_cell

    def without_stored(path):
        record, arrays = real_read(path)
        record["metrics"] = {k: v for k, v in record["metrics"].items() if not k.startswith(("A_L", "C_L"))}
        return record, arrays

    monkeypatch.setattr(cells_module, "read_cell", without_stored)
    recomputed = cell_decomposition(tiny_certified.cells_dir, winner.cell, TINY.report_size)
    for name in ("A_L", "C_L"):
        assert recomputed[name] == pytest.approx(stored[name], rel=ROUNDOFF[np.float32]), name


def test_a_paired_difference_is_judged_at_two_standard_errors():
    flat = np.zeros(100)
    assert PairedDifference.of([flat - 0.1 + 0.01 * np.sin(np.arange(100))]).word() == "below"
    assert PairedDifference.of([flat + 0.1 + 0.01 * np.sin(np.arange(100))]).word() == "above"
    assert PairedDifference.of([np.sin(np.arange(100))]).word() == "indistinguishable"
    assert PairedDifference.of([flat, flat]).word() == "equal"


@pytest.mark.parametrize("args, needle", [
    (["run", "certified", "--spectra", "9,9", "--report-only"], "--spectra: 9,9 not in the plan's spectra"),
    (["run", "later"], "invalid choice: 'later'"),
    (["certified", "--depths", "2,4", "--report-only"], "--depths must be a prefix of 1,2,4"),
])
def test_the_cli_refuses_a_bad_plan_spectrum_or_depth_list_in_one_line(args, needle, tmp_path):
    done = subprocess.run([sys.executable, "-m", "idepth", "study", *args, "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2
    assert needle in done.stderr and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_the_revised_page_and_its_facts_file_are_written_together(tiny_certified_page):
    import json

    from numerics.experiments.study.certified.page import PAGE
    from numerics.experiments.study.certified.revised import FACTS

    out = tiny_certified_page.out
    facts = json.loads((out / FACTS).read_text())
    page = (out / PAGE).read_text()
    assert "What the revised plan measured (version 2)" in headings(page, level=2)
    assert re.findall(r"independent one of (\d+)", page) == [str(TINY.report_size)]  # the method names the report set
    assert facts["coverage"][0]["done"] == list(TINY.depths) and facts["plan"]["select_size"] == TINY.select_size
    assert (out / "figures" / "certified-revised.png").stat().st_size > 0
    assert "](figures/certified-revised.png)" in page
    assert (out / "figures" / "certified-decomposition.png").stat().st_size > 0
    assert "](figures/certified-decomposition.png)" in page


def test_a_report_into_the_shipped_results_updates_the_answer_and_elsewhere_does_not(monkeypatch, tmp_path):
    import numerics.experiments.study.answer as answer
    import numerics.experiments.shipped as shipped
    calls = []
    monkeypatch.setattr(shipped, "shipped_path", lambda: tmp_path / "results")
    monkeypatch.setattr(answer, "write_answer_blocks", lambda: calls.append(1) or ["README.md"])
    assert answer.refresh(tmp_path / "elsewhere") == [] and calls == []
    assert answer.refresh(tmp_path / "results" / "certified-revised") == ["README.md"]
    answer.refresh(tmp_path / "results")
    assert calls == [1, 1]


def test_a_long_cap_depth_is_checked_by_its_own_doubling_as_well(tiny_certified):
    from numerics.experiments.study.certified.statistics import summarise

    rows, errors = collect(tiny_certified.cells_dir)
    summary, = summarise(rows, errors, planned_depths=TINY.depths, n_bootstrap=50)
    at2 = [c for c in summary.certificates if c.name == "doubling" and c.depth == 2]
    assert len(at2) == 2  # the usual doubled candidates, and the long runs' 15 -> 30
    assert (2 in summary.checked) == all(c.passed for c in at2)


def test_an_interrupted_cell_retrains_only_its_unfinished_candidates(tmp_path, monkeypatch):
    from numerics.experiments.study import run as run_module

    cell = TINY.cell(0.0, 0.0, TINY.P, 1, 0, None, TINY.k)
    whole = run_module.run_cell(cell)  # in this process: a worker's BLAS threads may round differently
    interrupted = dataclasses.replace(cell)
    object.__setattr__(interrupted, "resume_dir", str(tmp_path / "candidates"))
    saved, real_save = [], run_module.save_finished

    def save_then_interrupt(directory, index, result):
        saved.append(real_save(directory, index, result))
        if len(saved) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(run_module, "save_finished", save_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_module.run_cell(interrupted)
    monkeypatch.setattr(run_module, "save_finished", real_save)
    trained_again, real_lockstep = [], run_module.train_lockstep

    def counting_lockstep(configs, **options):
        trained_again.extend(configs)
        return real_lockstep(configs, **options)

    monkeypatch.setattr(run_module, "train_lockstep", counting_lockstep)
    resumed = run_module.run_cell(interrupted)
    n_trained = sum(c.trained for c in cell.candidates)
    assert len(trained_again) == n_trained - 2
    assert resumed.metrics["winner"] == whole.metrics["winner"]
    for name in ("summary", "report_errors"):
        np.testing.assert_array_equal(resumed.arrays[name], whole.arrays[name])
    assert {k for k in resumed.arrays} == {k for k in whole.arrays}
    for name, value in whole.arrays.items():
        np.testing.assert_array_equal(resumed.arrays[name], value, err_msg=name)


def test_a_finished_wave_leaves_no_candidate_files(tiny_certified):
    for store in (tiny_certified.first, tiny_certified.store):
        assert (store / "results.sqlite").is_file()
        assert list((store / "candidates").glob("*/*")) == []


def test_a_depth_some_seeds_have_done_is_named_with_their_count():
    """A depth done at some seeds is not counted done, and the page and the answer say how many seeds have it."""
    from numerics.experiments.study.certified.facts import _coverage

    plan = dataclasses.replace(TINY, depths=(1, 2, 4), seeds=(0, 1, 2))
    setting = (0.0, 0.0, plan.P, plan.k)
    cells = {setting: {(L, s): [] for L in (1, 2) for s in plan.seeds} | {(4, 0): [], (4, 2): []}}
    coverage = [c for c in _coverage(plan, cells) if (c["a"], c["b"]) == (0.0, 0.0)]
    assert coverage == [{"a": 0.0, "b": 0.0, "done": [1, 2], "todo": [4], "partial": [[4, 2]], "complete_seeds": 2}]


@pytest.mark.parametrize("finished", [((4, 0),), ((4, 0), (4, 2))])
def test_the_page_names_a_spectrum_judged_on_its_complete_seeds_by_the_verdicts_own_rule(finished):
    """The coverage sentence and the verdicts (statistics.judged_cells) agree on which seeds judge a spectrum."""
    from types import SimpleNamespace

    from numerics.experiments.study.certified.facts import _coverage
    from numerics.experiments.study.certified.revised import revised_sections
    from numerics.experiments.study.certified.statistics import judged_cells

    plan = dataclasses.replace(TINY, depths=(1, 2, 4), seeds=(0, 1, 2))
    cells = {(0.0, 0.0, plan.P, plan.k): {(L, s): [] for L in (1, 2) for s in plan.seeds} | dict.fromkeys(finished, [])}
    coverage = [c for c in _coverage(plan, cells) if (c["a"], c["b"]) == (0.0, 0.0)]
    facts = {"plan": {"select_size": 65536, "report_block": 64, "seeds": [0, 1, 2]}, "coverage": coverage,
             "cpu_hours": {}, "steps": [], "envelope": [], "long": []}
    text = "\n".join(revised_sections(facts))
    _, judged = judged_cells([SimpleNamespace(depth=L, seed=s) for L, s in cells[0.0, 0.0, plan.P, plan.k]],
                              plan.depths)
    alone = judged != list(plan.seeds)
    assert alone == (len(finished) == 2)
    # the spectra the page names as judged on their complete seeds alone
    assert re.findall(r"seeds alone \((.*)\)\.", text) == (["(0, 0)"] if alone else ["none now"])


def test_the_long_cap_convergence_is_the_verdicts_own_doubling_certificate(tiny_certified):
    """The revised page's "converged" column reads the long runs' doubling certificate of the statistics (the
    joint bootstrap the verdicts use), not a second computation; without it the depth is "not judged"."""
    from numerics.experiments.study.certified.statistics import summarise

    rows, errors = collect(tiny_certified.cells_dir)
    (summary,) = summarise(rows, errors, n_bootstrap=200)
    a, b, k, d, N, P = summary.setting
    (long,) = [c for c in summary.certificates if c.pair == "long"]
    assert long.name == "doubling" and long.depth == 2
    assert {c.pair for c in summary.certificates if c.name == "doubling"} <= {"long", "doubled"}
    checks = {(a, b, P, k, long.depth): long}
    (row,) = revised_facts(rows, errors, TINY, tiny_certified.cells_dir, population_contexts=2048,
                           long_checks=checks)["long_doubling"]
    assert row["converged"] is long.passed and row["certificate"] == {"excess": long.excess, "se": long.se,
                                                                       "allowed": long.allowed}
    # the same runs (the starts run at both caps, the best on the selection set): the same mean difference
    assert row["certificate"]["excess"] == pytest.approx(row["gain"]["value"], rel=1e-6)
    failing = {key: dataclasses.replace(c, allowed=c.excess - 1.0) for key, c in checks.items()}
    (row,) = revised_facts(rows, errors, TINY, tiny_certified.cells_dir, population_contexts=2048,
                           long_checks=failing)["long_doubling"]
    assert row["converged"] is False  # whatever the paired difference says: the certificate decides
    unjudged = revised_facts(rows, errors, TINY, tiny_certified.cells_dir, population_contexts=2048)
    assert unjudged["long_doubling"][0]["converged"] is None
    ((header, (row,)),) = [(h, r) for h, r in tables("\n".join(revised_sections(unjudged))) if h[-1] == "converged"]
    assert row[-1] == "not judged"


def test_the_winners_on_a_second_report_set(tiny_certified, monkeypatch):
    """On a second, independent set every winner reads like a fresh draw; pointed at the report set itself, the same
    path gives back the runner's own report-set losses, difference 0."""
    from numerics.experiments.study.certified import facts as facts_module
    from numerics.experiments.study.certified.facts import second_report

    rows, errors = collect(tiny_certified.cells_dir)
    winners = {r.depth: r for r in rows if r.selected}
    facts = revised_facts(rows, errors, TINY, tiny_certified.cells_dir, population_contexts=2048,
                          decomposition_contexts=TINY.report_size)
    (second,) = facts["second_report"]
    assert second["contexts"] == 2 * TINY.report_size and [d["depth"] for d in second["depths"]] == list(TINY.depths)
    for d in second["depths"]:
        assert d["report"][0] == pytest.approx(winners[d["depth"]].R_L, rel=ROUNDOFF[np.float32])
        assert d["difference"][0] == pytest.approx(d["report"][0] - d["second"][0], abs=1e-15)
        assert d["z"] == pytest.approx(d["difference"][0] / np.hypot(d["report"][1], d["second"][1]))
        assert d["second"][0] != d["report"][0] and abs(d["z"]) < 5  # another draw, within its noise
    assert second["pooled"]["report"][0] == pytest.approx(np.mean([w.R_L for w in winners.values()]), rel=1e-6)

    # the same path on the report set's own seed and size: the runner's stored losses come back exactly
    monkeypatch.setattr(facts_module, "second_seed", lambda cell: cell.eval_seed("report"))
    again = second_report(tiny_certified.cells_dir, {(L, 0): w.cell for L, w in winners.items()}, TINY.report_size)
    for L, w in winners.items():
        assert again["depths"][str(L)][0] == pytest.approx(w.R_L, rel=ROUNDOFF[np.float32])
