"""``idepth reproduce``: every artefact is produced, tables quote the paper verbatim, verdicts follow the
numbers, re-running reuses the store, Ctrl-C leaves it consistent, and bad input is one line with exit 2.

The end-to-end checks read the ``smoke`` scale's reproduction (tiny sizes, ~40 short runs), built once per
session for this module and ``test_claims`` (``smoke_reproduction`` in ``tests/conftest.py``).
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tolerances import ROUNDOFF, rtol
from _checkout import checkout_env, idepth_command
from page_parts import headings, tables

from idepth.cli import main
from numerics.experiments.execution import Execution
from numerics.experiments.reproduce import ARTEFACTS, get_scale, make_plan, parse_only, reproduce
from numerics.io import figure_text_size, make_output_dir
from numerics.experiments import criteria
from numerics.experiments.study.curves import Curve, fit_curve
from numerics.experiments.sweep import HOLD_AFTER_COMMIT_VARIABLE
from theory.paper import paper_table

ROOT = Path(__file__).resolve().parents[1]
FIGURES = [a for a, art in ARTEFACTS.items() if art.kind == "figure"]
TABLES = [a for a, art in ARTEFACTS.items() if art.kind == "table"]


@pytest.fixture(scope="module")
def smoke(smoke_reproduction):
    """The session's one smoke reproduction (tests/conftest.py), read only."""
    return smoke_reproduction


# ------------------------------------------------------------------------------------------- end to end


def test_smoke_reproduction_writes_every_figure_as_png_and_pdf(smoke):
    for artefact_id in FIGURES:
        png, pdf = smoke.out_dir / "figures" / f"{artefact_id}.png", smoke.out_dir / "figures" / f"{artefact_id}.pdf"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", artefact_id
        assert pdf.read_bytes()[:5] == b"%PDF-", artefact_id
        assert png.stat().st_size > 5_000 and pdf.stat().st_size > 1_000, artefact_id


def test_smoke_reproduction_writes_every_table_and_the_report(smoke):
    for artefact_id in TABLES:
        text = (smoke.out_dir / "tables" / f"{artefact_id}.md").read_text(encoding="utf-8")
        assert text.startswith(f"# {artefact_id}:") and text.count("\n|") >= 3, artefact_id
    report = smoke.report.read_text(encoding="utf-8")
    for heading in ("## Scale", "## Verdict", "## Where inverse-depth scaling appears", "## Consistency with the paper",
                    "## Figures", "## Tables"):
        assert heading in report, heading
    for artefact_id in FIGURES:
        assert f"](figures/{artefact_id}.png)" in report, artefact_id
    for artefact_id in TABLES:
        assert f"### {artefact_id}:" in report, artefact_id
    assert not list(smoke.out_dir.glob("**/*.tmp")), "a temporary file was left behind"


@pytest.mark.parametrize("name", TABLES)
def test_tables_carry_the_papers_values_verbatim(smoke, name):
    text = (smoke.out_dir / "tables" / f"{name}.md").read_text(encoding="utf-8")
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    body = [[cell.strip() for cell in row] for row in rows[1:]]  # rows[0] is the header
    verbatim = paper_table(name, as_float=False)
    assert len(body) >= len(verbatim)
    assert all("†" in cells[1] for cells in body[len(verbatim):]), "extra rows must be marked as not the paper's"
    for cells, row in zip(body, verbatim):
        for column, value in row.items():
            if column in ("a", "b", "k") or value is None:
                continue
            assert any(value in cell for cell in cells), (name, column, value, cells)


def test_table_agreement_cells_are_computed_from_the_numbers(smoke):
    import json

    table = json.loads((smoke.out_dir / "tables" / "table3.json").read_text(encoding="utf-8"))
    checked = 0
    for row in table["rows"]:
        values = row["_values"]
        if "plateau" not in values:
            assert row["agrees (2 SE)"] == "n/a"
            continue
        expected = criteria.agrees(values["plateau"], values["plateau_se"], values["floor"], values["floor_se"])
        assert row["agrees (2 SE)"] == {True: "yes", False: "no", None: "n/a"}[expected]
        within = criteria.relative_deviation(values["plateau"], values["floor"]) < 0.10
        assert row["within 10 %"] == ("yes" if within else "no")
        checked += 1
    assert checked >= 1


def test_rerunning_reuses_the_store_and_trains_nothing(smoke, tmp_path):
    import shutil

    out = tmp_path / "again"  # a copy: the shared reproduction stays as it was built
    shutil.copytree(smoke.out_dir, out)
    again = reproduce("smoke", out_dir=out, execution=Execution(workers=1, progress=False), study=False,
                      log=lambda text: None)
    assert again.sweep.executed == 0
    assert again.sweep.skipped == again.plan.n_runs == smoke.plan.n_runs
    assert again.report.read_text(encoding="utf-8").startswith("# Reproduction report — scale smoke")


def test_interrupting_leaves_the_store_consistent_and_rerunning_continues(tmp_path):
    out = tmp_path / "interrupted"
    command = idepth_command("reproduce", "--scale", "smoke", "--only", "fig6a", "--out", str(out),
                             "--workers", "1", "--no-progress")
    # deterministic interruption: the sweep driver creates `marker` after its first commit and waits there
    marker = tmp_path / "first-commit"
    env = checkout_env(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **{HOLD_AFTER_COMMIT_VARIABLE: str(marker)})
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # a bound on a hang, not a race: the driver waits for us
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), f"the sweep never committed a run: {proc.poll()=}"
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground process group
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, stderr.decode()
    store = out / "store" / "results.sqlite"
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())
    assert counts.get("running", 0) == 0, counts
    done = counts.get("done", 0)
    total = sum(counts.values())
    assert done == 1 and total > 1, counts  # interrupted right after the first commit
    result = reproduce("smoke", "fig6a", out, execution=Execution(workers=1, progress=False), study=False,
                       log=lambda text: None)
    assert result.sweep.skipped == done
    assert result.sweep.executed == total - done
    assert result.report.exists()


# ------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("argv, fragment", [
    (["--only", "fig2"], "unknown artefact ID 'fig2'"),
    (["--only", "fig1,tableX"], "unknown artefact ID 'tableX'"),
    (["--scale", "huge"], "scale must be one of"),
    (["--workers", "0"], "workers must be an integer >= 1"),
])
def test_bad_input_is_one_line_on_stderr_with_exit_status_2(tmp_path, capsys, argv, fragment):
    out = tmp_path / "out"
    status = main(["reproduce", "--out", str(out), "--no-progress", *argv])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and fragment in err, err
    assert not out.exists(), "nothing may be written on bad input"


def test_an_output_directory_that_is_a_file_is_refused_with_exit_status_2(tmp_path, capsys):
    target = tmp_path / "a-file"
    target.write_text("not a directory")
    for out in (target, target / "below"):
        status = main(["reproduce", "--scale", "smoke", "--out", str(out), "--no-progress"])
        err = capsys.readouterr().err
        assert status == 2 and err.count("\n") == 1 and ("is a file" in err or "existing file" in err), err
    assert target.read_text() == "not a directory"


def test_an_unwritable_output_directory_is_refused(tmp_path, monkeypatch, capsys):
    import numerics.io as io_module

    # root can write anywhere: a directory that refuses the write probe stands for a read-only one
    monkeypatch.setattr(io_module, "probe_writable", lambda directory: "Read-only file system")
    status = main(["reproduce", "--scale", "smoke", "--out", str(tmp_path / "ro"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and "not writable" in err and err.count("\n") == 1, err


def test_make_output_dir_refuses_a_file_and_creates_nothing(tmp_path):
    target = tmp_path / "f"
    target.write_text("x")
    with pytest.raises(ValueError, match="existing file"):
        make_output_dir(target)
    with pytest.raises(ValueError, match="is a file"):
        make_output_dir(target / "below")
    assert target.read_text() == "x"


# ------------------------------------------------------------------------------------------- plan and scales


def test_every_artefact_id_is_planned_and_unknown_ids_are_refused():
    assert parse_only(None) == tuple(ARTEFACTS)
    assert parse_only("table5,fig1") == ("fig1", "table5")
    with pytest.raises(ValueError, match="unknown artefact ID 'fig8'"):
        parse_only("fig8")
    with pytest.raises(ValueError, match="selects no artefact"):
        parse_only(" , ")


def test_quick_scale_reaches_depth_32_on_the_nonlinear_difficult_task_with_three_seeds():
    family = get_scale("quick").families["nonlinear_lazy"]
    assert max(family.depths) >= 32 and len(family.seeds) >= 3
    spectra = set(family.spectra)
    assert (0.0, 0.0) in spectra and any(a > 0 for a, _ in spectra) and any(b > 0 for _, b in spectra)


def test_paper_scale_puts_softmax_at_the_inferred_sizes_and_linear_at_table3s():
    from numerics.experiments.reproduce.scales import INFERRED_SOFTMAX_SIZES

    plan = make_plan("paper", "fig6a")
    family = plan.family("nonlinear_lazy")
    assert (family.d, family.N, family.P, max(family.depths)) == (16, 32, 64, 256) == (
        INFERRED_SOFTMAX_SIZES["d"], INFERRED_SOFTMAX_SIZES["N"], INFERRED_SOFTMAX_SIZES["P"], 256)
    for name, fam in get_scale("paper").families.items():
        sizes = (fam.d, fam.N, fam.P)
        assert sizes == ((128, 128, 1024) if fam.model == "linear" else (16, 32, 64)), name
    assert "Dask cluster" in plan.format(2)


def test_paper_scale_description_states_the_cost_the_plan_prints():
    """The core-hours in the paper scale's description (shown by --help and the plan) are the cost model's total,
    studies included, and that total fits a 16-core workstation's day (issue 10)."""
    import re

    plan = make_plan("paper")
    stated = float(re.search(r"≈ ([\d ]+) core-hours", get_scale("paper").description).group(1).replace(" ", ""))
    assert set(plan.study_seconds) == {"regime study"}  # the certified study is read, never trained here
    assert stated == pytest.approx(plan.total_seconds / 3600, rel=0.05)
    assert plan.total_seconds / 3600 / 16 <= 24
    assert "all together" in plan.format(16, backend="dask")
    assert make_plan("paper", "table1").study_seconds == {}  # the studies run by default only for every artefact


def test_quick_scale_puts_softmax_at_the_inferred_sizes_and_rechecks_shipped_runs():
    from numerics.experiments.reproduce.envelope import spot_check_configs
    from numerics.experiments.reproduce.scales import INFERRED_SOFTMAX_SIZES

    scale = get_scale("quick")
    inferred = (INFERRED_SOFTMAX_SIZES["d"], INFERRED_SOFTMAX_SIZES["N"], INFERRED_SOFTMAX_SIZES["P"])
    for name in ("nonlinear_lazy", "nonlinear_converged", "nonlinear_k16", "single_stream", "untied_values"):
        family = scale.families[name]
        assert (family.d, family.N, family.P) == inferred, name
    assert scale.study.sizes == ((inferred[0], inferred[2], inferred[1]),)  # (d, P, N): the same runs
    checks = spot_check_configs(scale.certified_checks)
    assert [cfg.depth for _, cfg in checks] == [1, 2] and all(cfg.d == inferred[0] for _, cfg in checks)
    assert all((cfg.N, cfg.P) == (inferred[1], inferred[2]) for _, cfg in checks)


def test_at_quick_scale_a_claim_reading_a_family_below_the_paper_sizes_is_not_judged(tmp_path):
    from numerics.experiments.reproduce.context import ReproductionContext
    from numerics.experiments.reproduce.report import evaluate_claims

    scale = get_scale("quick")
    small = scale.undersized_families()
    assert small and all(scale.families[name].d < scale.softmax_claim_sizes[0] for name in small)
    ctx = ReproductionContext.open(scale, tmp_path, families=("context_updates", "context_updates_k16", "linear_easy"))
    claims = {c.id: c for c in evaluate_claims(ctx)}
    assert claims["context_updates"].mark == "NOT JUDGED (quick scale)"
    assert all(name in claims["context_updates"].evidence for name in small)
    # a claim reading no such family keeps its own status
    assert claims["linear_easy"].status == claims["linear_easy"].measured_status != "NOT JUDGED"
    assert get_scale("medium").undersized_families() == {}


def test_identical_runs_of_two_artefacts_are_planned_once():
    both = make_plan("smoke", "fig6c,fig6d")
    one = make_plan("smoke", "fig6c")
    assert both.n_runs == one.n_runs == get_scale("smoke").families["nonlinear_lazy"].n_runs


# ------------------------------------------------------------------------------------------- decision rules


@given(m=st.floats(-1e3, 1e3), r=st.floats(-1e3, 1e3), s=st.floats(1e-6, 1e2))
def test_agreement_is_symmetric_and_is_the_two_sigma_rule(m, r, s):
    assert criteria.agrees(m, s, r, 0.0) == criteria.agrees(r, 0.0, m, s)
    assert criteria.agrees(m, s, r, 0.0) == (abs(m - r) <= criteria.AGREEMENT_SIGMAS * s)


@given(m=st.floats(0.0, 10.0), s=st.floats(0.0, 1.0), lo=st.floats(0.1, 3.0))
def test_between_is_the_interval_widened_by_two_standard_errors(m, s, lo):
    hi = 2 * lo
    expected = lo - criteria.AGREEMENT_SIGMAS * s <= m <= hi + criteria.AGREEMENT_SIGMAS * s
    assert criteria.between(m, s, lo, hi) == expected


def test_a_missing_value_is_never_counted_as_agreement():
    assert criteria.agrees(math.nan, 0.1, 1.0) is None
    assert criteria.between(math.nan, 0.1, 1.0, 2.0) is None
    assert criteria.settles(0.0, 1.0) is None


def test_fit_recovers_an_exact_inverse_depth_law_and_its_settling():
    depths = np.array([1, 2, 4, 8, 16, 32])
    losses = 2.0 + 5.0 / depths
    curve = Curve("R_L", 0.0, 0.0, depths, losses[None], losses, np.zeros(6), np.ones(6, int), "held-out")
    fit = fit_curve(curve)
    assert fit.ok
    assert fit.value("alpha") == pytest.approx(1.0, rel=1e3 * rtol(ROUNDOFF))
    assert fit.value("L0") == pytest.approx(2.0, rel=1e3 * rtol(ROUNDOFF))
    lo, hi, change = criteria.last_doubling(curve.depths, curve.mean)
    assert (lo, hi) == (16, 32)
    assert change == pytest.approx((losses[4] - losses[5]) / losses[4], rel=rtol(ROUNDOFF))


def test_figure_pages_of_a_report_without_its_json_take_captions_from_the_report(tmp_path):
    """A reproduction with REPORT.md but no report.json: the pages carry the captions and say no verdicts were kept."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from numerics.experiments.reproduce.docs_pages import write_figure_pages

    source = tmp_path / "reproduction"
    (source / "figures").mkdir(parents=True)
    figure = plt.figure(figsize=(2, 1))
    figure.savefig(source / "figures" / "fig1.png")
    plt.close(figure)
    (source / "REPORT.md").write_text("# Reproduction report — scale smoke\n\n![fig1](figures/fig1.png)\n\n"
                                      "Loss against depth, one curve per spectrum.\n\n")
    index, page = write_figure_pages(source, tmp_path / "docs")
    text = page.read_text()
    assert page.stem == "fig1" and "**Caption.** Loss against depth, one curve per spectrum." in text
    assert "recorded no verdicts per figure" in text and "idepth reproduce --scale smoke --only fig1" in text


def test_figure_pages_for_the_docs_show_every_reproduced_figure_with_its_command(smoke, tmp_path):
    from numerics.experiments.reproduce.docs_pages import write_figure_pages

    pages = write_figure_pages(smoke.out_dir, tmp_path)
    figures = sorted(p.stem for p in Path(smoke.out_dir, "figures").glob("*.png"))
    assert sorted(p.stem for p in pages[1:]) == figures
    for page in pages[1:]:
        text = page.read_text()
        assert f"```{{image}} {page.stem}.png\n" in text and f"--only {page.stem}" in text
        assert (tmp_path / f"{page.stem}.png").stat().st_size > 0
    index = pages[0].read_text()
    assert all(name in index for name in figures) and "{toctree}" in index


# ------------------------------------------------------------------------------------------- run time


def test_the_report_gives_cpu_time_as_cpu_time_summed_from_the_runs(smoke):
    import re

    from numerics.experiments.reproduce.results import StoreResults

    report = " ".join(smoke.report.read_text(encoding="utf-8").split())
    results = StoreResults(smoke.out_dir / "store")
    cpu = [results.metrics(c)["cpu_time"] for c in smoke.plan.configs]
    wall = results.wall_time(smoke.plan.configs)
    assert all(value > 0 for value in cpu)
    match = re.search(r"summed over the (\d+) finished runs in the store: (\d+) s of CPU time in the workers and "
                      r"(\d+) s of worker wall time", report)
    assert match, report[:2000]
    assert int(match.group(1)) == smoke.plan.n_runs
    assert int(match.group(2)) == round(sum(cpu)) and int(match.group(3)) == round(wall)
    assert re.search(r"\*\*Run time\*\*: \d+ s wall and \d+ s of CPU time \(user \+ system", report)
    assert "core-seconds" not in report


def test_help_plan_and_readme_quote_the_one_measured_run_time(capsys):
    from numerics.experiments.reproduce.scales import measured_run_time

    measured = measured_run_time("quick").text()
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert measured in " ".join(capsys.readouterr().out.split())
    full = make_plan("quick").format(2)
    assert f"whole reproduction measured: {measured}" in full and "estimate" not in full
    assert "cost-model estimate" in make_plan("quick", "fig6a").format(2)
    assert measured in (ROOT / "README.md").read_text().replace("\n", " ")


# ------------------------------------------------------------------------------------------- figures a reader can read


@pytest.fixture(scope="module")
def drawn(smoke, tmp_path_factory):
    """Every figure of the smoke reproduction redrawn from its store, with the matplotlib figures kept."""
    import shutil

    from numerics.experiments.reproduce import plotting as plot_module
    from numerics.experiments.reproduce import figures as figures_module
    from numerics.experiments.reproduce.context import ReproductionContext

    out = tmp_path_factory.mktemp("redrawn")
    shutil.copytree(smoke.out_dir / "store", out / "store")
    from numerics.experiments.reproduce.envelope import load_envelopes

    ctx = ReproductionContext.open(smoke.plan.scale, out, families=smoke.plan.families, envelopes=load_envelopes(),
                                   envelopes_error="")  # the shipped certified study, as reproduce reads it
    kept, save = {}, plot_module.save
    plot_module.save = lambda ctx_, fig, artefact_id: (kept.__setitem__(artefact_id, fig), save(ctx_, fig, artefact_id))[1]
    try:
        built = {artefact_id: figures_module.build_figure(ctx, artefact_id) for artefact_id in FIGURES}
    finally:
        plot_module.save = save
    return ctx, built, kept


def _curves(ax):
    """(label, marker, line style) of every legend entry drawn with markers (data, not fits or bounds)."""
    from matplotlib.container import ErrorbarContainer

    out = []
    for handle, label in zip(*ax.get_legend_handles_labels()):
        line = handle.lines[0] if isinstance(handle, ErrorbarContainer) else handle
        if not hasattr(line, "get_marker"):  # a band (fill_between, axvspan)
            continue
        marker = line.get_marker()
        if marker not in (None, "None", "", " "):
            out.append((label, marker, line.get_linestyle()))
    return out


@pytest.mark.parametrize("artefact_id", FIGURES)
def test_no_two_data_curves_of_a_panel_share_marker_and_line_style(drawn, artefact_id):
    _, _, kept = drawn
    for ax in kept[artefact_id].axes:
        styles = [(marker, style) for _, marker, style in _curves(ax)]
        assert len(styles) == len(set(styles)), (artefact_id, ax.get_title(), _curves(ax))


def test_fits_that_do_not_determine_alpha_are_not_drawn_and_the_legend_says_why():
    from theory.fitting import fit_depth_law

    from numerics.experiments.reproduce.plotting import fit_problem, plot_fit as _plot_fit
    from numerics.experiments.study.curves import FitSummary

    depths = np.array([1, 2, 4, 8])
    flat = FitSummary(fit_depth_law(depths, 2.0 + 1e-3 * np.array([1.0, -1.0, 1.0, -1.0]), None))
    good = FitSummary(fit_depth_law(depths, (2.0 + 5.0 / depths) * (1 + 1e-3 * np.array([1.0, -1.0, 1.0, -1.0])), None))
    assert fit_problem(good) is None
    assert "flat curve" in fit_problem(flat)
    assert fit_problem(FitSummary(None, "2 depth(s) with data")) == "no fit: 2 depth(s) with data"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    assert _plot_fit(ax, good, depths, "C0", "fit good") and not _plot_fit(ax, flat, depths, "C1", "fit flat")
    lines = [line for line in ax.get_lines() if line.get_xdata().size]
    assert len(lines) == 1  # only the good fit is drawn
    labels = ax.get_legend_handles_labels()[1]
    assert labels[0].startswith("fit good: α = ") and labels[1].startswith("fit flat: not drawn, α = ")
    plt.close(fig)


def test_fig3a_and_fig3b_draw_the_slopes_zeta_and_two_zeta_and_fig3b_says_which_spectra_it_lacks(drawn):
    _, built, kept = drawn
    for artefact_id in ("fig3a", "fig3b"):
        labels = [label for ax in kept[artefact_id].axes for label in ax.get_legend_handles_labels()[1]]
        panels = [ax for ax in kept[artefact_id].axes if ax.get_legend_handles_labels()[1]]
        assert panels and all(any(l.startswith("slope ζ = ") for l in ax.get_legend_handles_labels()[1])
                              and any(l.startswith("slope 2ζ = ") for l in ax.get_legend_handles_labels()[1])
                              for ax in panels), (artefact_id, labels)
        assert "slopes ζ (constrained polynomial, eq. 34) and 2ζ (free polynomial, eq. 40)" in built[artefact_id].caption
    # fig3b names each of the paper's spectra at b = 2 that this scale does not run, and why it is absent
    from theory.paper import paper_table

    from numerics.experiments.study.curves import spectrum_label

    ctx = drawn[0]
    absent = [spectrum_label(r["a"], r["b"]) for r in paper_table("table2")
              if r["b"] == 2 and (float(r["a"]), float(r["b"])) not in ctx.family("linear_easy").spectra]
    caption = built["fig3b"].caption
    assert absent, "the smoke scale leaves out some of the paper's b = 2 spectra"
    for label in absent:
        assert label in caption.split("The paper's other spectra of this panel:")[1], caption


def test_fig12_plots_no_learned_m_at_depth_1(drawn):
    ctx, built, kept = drawn
    top = kept["fig12"].axes[0]
    for handle in top.get_legend_handles_labels()[0]:
        line = getattr(handle, "lines", [handle])[0]
        assert 1 not in set(np.asarray(line.get_xdata(), dtype=float).tolist())
    if 1 in ctx.family("context_updates").depths:
        assert "L = 1 not shown: m is not used there" in top.get_legend_handles_labels()[1]
    assert "learned m = " in built["fig12"].caption and "at L = [1," not in built["fig12"].caption.split("ρ")[0]


def test_fig7b_caption_gives_the_spread_numbers_of_the_verdict(smoke, drawn):
    from numerics.experiments.reproduce.figures import reducible_mode_spread

    ctx, built, _ = drawn
    spectrum = next(s for s in ctx.family("nonlinear_lazy").spectra if s[0] > 0)
    depths, spread = reducible_mode_spread(ctx, "nonlinear_lazy", spectrum)
    numbers = ", ".join(f"{v:.3f} at L = {L}" for L, v in zip(depths, spread))
    assert numbers and f"as in the verdict: {numbers}" in built["fig7b"].caption
    verdict = {c.id: c for c in smoke.claims}["modewise"].evidence
    assert f"spread {numbers}" in verdict


def test_fig13_and_fig5a_are_small_multiples_one_panel_per_spectrum(drawn):
    ctx, _, kept = drawn
    visible = lambda fig: [ax for ax in fig.axes if ax.get_visible()]  # noqa: E731
    assert len(visible(kept["fig13"])) == len(ctx.family("nonlinear_lazy").spectra)
    assert len(visible(kept["fig5a"])) == len(ctx.family("linear_difficult").spectra)
    assert len(visible(kept["fig4c"])) == 2  # the mass, and 1 - mass on a log scale


def test_docs_figure_pages_give_each_figure_its_size_caption_and_verdict_and_scale_it_to_the_column(smoke, tmp_path):
    from numerics.experiments.reproduce.docs_pages import _escape, png_size, write_figure_pages

    pages = write_figure_pages(smoke.out_dir, tmp_path)
    claims = {c.id: c for c in smoke.claims}
    captions = {f.id: f.caption for f in smoke.figures}
    for page in pages[1:]:
        text = page.read_text()
        width, _ = png_size(tmp_path / f"{page.stem}.png")
        assert f":width: {width}px" in text and ":::{container} idepth-figure" in text
        assert f"**Caption.** {_escape(captions[page.stem])}" in text
        assert "## Verdict" in text
    fig13 = (tmp_path / "fig13.md").read_text()
    assert f"**{claims['selection_tail'].mark}**" in fig13
    css = (ROOT / "docs" / "_static" / "custom.css").read_text()
    # the PNG's own width is declared (a click opens it at that size); the box scales it down to its scrolling
    # container, never below the width at which its smallest text is 9 px (docs/_ext/readable_figures.py sets
    # that min-width from the PNG's record), so no panel is cut at 1280 px (the browser suite measures it)
    assert ".idepth-scroll img { max-width: 100%; height: auto; }" in css and "overflow-x: auto" in css
    assert all(figure_text_size(tmp_path / f"{page.stem}.png").points is not None for page in pages[1:])


# ------------------------------------------------------------------------------------------- a report a reader can act on


def test_the_report_opens_with_a_conclusion_on_each_central_claim_from_its_verdict(smoke):
    import dataclasses

    from numerics.experiments.reproduce.report import CENTRAL_CLAIMS, conclusions

    report = smoke.report.read_text(encoding="utf-8")
    sections = [line for line in report.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Conclusions", sections[:3]
    opening = report.split("## Conclusions", 1)[1].split("\n## ", 1)[0]
    claims = {c.id: c for c in smoke.claims}
    # what one training recipe finds (cold, Adam 1e-3 in the certified study) is a contrast, not a central claim of the paper
    assert set(CENTRAL_CLAIMS) >= {"inverse_depth_certified", "linear_easy", "linear_floor"}
    assert "inverse_depth" not in CENTRAL_CLAIMS
    for claim_id, topic in CENTRAL_CLAIMS.items():
        claim = claims[claim_id]
        assert f"**{topic}: {claim.mark}**" in opening, (claim_id, opening)
        assert (claim.summary or claim.evidence.rstrip(".")) in opening, claim_id
        assert opening.count(f"**{topic}:") == 1  # one sentence each
    assert conclusions(smoke.claims) in opening
    # computed from the verdict objects: another status or other numbers give another paragraph
    central = claims["inverse_depth_certified"]
    other = dataclasses.replace(central, status="reproduced", note="", reason="", summary="14 of 14 spectra meet it")
    changed = conclusions([other if c.id == "inverse_depth_certified" else c for c in smoke.claims])
    assert (f"**{CENTRAL_CLAIMS['inverse_depth_certified']}: REPRODUCED** — its criterion is met by the numbers: "
            "14 of 14") in changed


def test_the_verdict_counts_the_papers_claims_apart_from_the_packages_contrasts(smoke):
    from numerics.experiments.criteria import Verdict
    from numerics.experiments.reproduce.report import counts_text, verdict_counts

    report = smoke.report.read_text(encoding="utf-8")
    paper = [c for c in smoke.claims if c.kind == "paper"]
    contrasts = [c for c in smoke.claims if c.kind == "contrast"]
    assert {c.id for c in contrasts} == {"inverse_depth", "lazy_contrast", "shipped_rerun"}
    assert len(paper) == len(smoke.claims) - 3
    counts = verdict_counts(smoke.claims)
    assert sum(map(len, counts["paper"].values())) == len(paper)
    assert not any(c.id in ids for c in contrasts for ids in counts["paper"].values())
    assert f"Verdicts: {counts_text(smoke.claims)}." in report
    verdict = report.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    mine = verdict.split("### The package's own contrasts", 1)
    assert len(mine) == 2 and "Claims of the paper" in headings(mine[0], level=3)
    assert all(c.paper in mine[1] and c.paper not in mine[0] for c in contrasts)
    assert all(c.paper in mine[0] for c in paper)
    for status in Verdict:
        marks = {c.mark for c in paper if c.status is status}
        for mark in marks:
            n = sum(c.mark == mark for c in paper)
            assert f"{n} {mark}" in counts_text(smoke.claims).split(";")[0]


def test_the_report_prints_numbers_not_numpy_reprs(smoke):
    for path in (smoke.report, smoke.out_dir / "report.json"):
        text = path.read_text(encoding="utf-8")
        for fragment in ("np.int64(", "np.float64(", "np.float32(", "np.int32("):
            assert fragment not in text, (path.name, fragment, text[max(text.find(fragment) - 200, 0):][:300])


def test_the_recipe_contrasts_per_setting_numbers_are_one_table(smoke):
    claim = {c.id: c for c in smoke.claims}["inverse_depth"]
    report = smoke.report.read_text(encoding="utf-8")
    assert claim.table and len(claim.table) >= 2
    header, *rows = claim.table
    assert all(len(row) == len(header) for row in rows)
    assert claim.table_markdown.splitlines()[0] in " ".join(report.split("\n    "))
    assert len(claim.evidence.split()) < 60, claim.evidence  # the numbers are in the table, not in a paragraph
    for row in rows:  # every spectrum's α and gain is shown
        assert f"| {row[0]} | {row[1]} | {row[2]} |" in report


def test_consistency_statements_below_the_bound_are_one_table_not_bullets():
    from numerics.experiments.bounds import HeadBound
    from numerics.experiments.study import paper_consistency
    from numerics.experiments.study.page import consistency_markdown

    def fake(a, b, d, P, k):
        return HeadBound(5.0, 0.1, 10.0, 1.0, 4.0, 0.1, (), (), 60.0, "", P, k, "cosine", 64, 64, d)

    consistency = paper_consistency(P_values=(1024, 2048), bound=fake)
    below = [r for r in consistency.rows if r.below_bound]
    assert len(below) >= 18 and consistency.markdown.count("\n- The paper's") == len(below)  # the study's bullets
    text = consistency_markdown(consistency.rows, below_as_table=True)  # what reproduce writes into REPORT.md
    assert "\n- " not in text
    table = [line for line in text.splitlines() if line.startswith("| Table ")]
    assert len(table) == len(consistency.rows) + len(below)  # the study's table, then one row per value below
    assert ["paper value", "best mixture ± SE", "× paper", "SE above the paper", "best single head"] in [
        header[-5:] for header, _ in tables(text)]


def _log_tick_labels(fig) -> list[str]:
    from numerics.experiments.reproduce.plotting import _renderer

    _renderer(fig)
    return [t.get_text() for ax in fig.axes for axis in (ax.xaxis, ax.yaxis) if axis.get_scale() == "log"
            for t in axis.get_ticklabels(which="both") if t.get_text()]


@pytest.mark.parametrize("artefact_id", FIGURES)
def test_log_axes_are_labelled_with_plain_numbers(drawn, artefact_id):
    _, _, kept = drawn
    labels = _log_tick_labels(kept[artefact_id])
    assert not [label for label in labels if "times" in label or "^" in label or "×" in label], (artefact_id, labels)


@pytest.mark.parametrize("artefact_id", FIGURES)
def test_no_legend_covers_a_data_point(drawn, artefact_id):
    from numerics.experiments.reproduce.plotting import _renderer, legend_covers_data

    _, _, kept = drawn
    fig = kept[artefact_id]
    renderer = _renderer(fig)
    assert not [ax.get_title() for ax in fig.axes if legend_covers_data(ax, renderer)], artefact_id


@pytest.mark.parametrize("artefact_id", FIGURES)
def test_every_title_and_axis_label_lies_inside_the_figure(drawn, artefact_id):
    """A label longer than its axis (fig7b's reducible-loss formula once was) is clipped at the figure's edge."""
    from numerics.experiments.reproduce.plotting import _renderer

    _, _, kept = drawn
    fig = kept[artefact_id]
    renderer = _renderer(fig)
    edge = fig.bbox
    clipped = []
    for ax in (ax for ax in fig.axes if ax.get_visible()):
        for text in (ax.title, ax.xaxis.label, ax.yaxis.label):
            box = text.get_window_extent(renderer)
            if text.get_text() and not (edge.x0 <= box.x0 and edge.y0 <= box.y0 and box.x1 <= edge.x1
                                        and box.y1 <= edge.y1):
                clipped.append(text.get_text())
    assert not clipped, (artefact_id, clipped)


def test_a_legend_over_data_is_detected_and_moved_below_the_panel():
    from numerics.experiments.reproduce import plotting as plot_module

    plt = plot_module.pyplot()
    fig, ax = plt.subplots(figsize=(4, 3), constrained_layout=True)
    ax.plot([1, 2, 3], [1, 2, 3], "o-", label="data")
    ax.plot([1, 3], [3, 3], "s", label="corner point")
    ax.legend(loc="upper right")
    assert plot_module.legend_covers_data(ax)
    plot_module.legends_clear_of_data(fig)
    assert not plot_module.legend_covers_data(ax)
    renderer = plot_module._renderer(fig)
    assert ax.get_legend().get_window_extent(renderer).y1 <= ax.bbox.y0
    plt.close(fig)


def test_fig1_names_the_training_regime_of_each_panel_and_that_the_middle_panel_is_the_certified_envelope(drawn):
    from numerics.experiments.reproduce.report import CLAIM_FIGURES

    _, built, kept = drawn
    titles = [ax.get_title() for ax in kept["fig1"].axes]
    assert len(titles) == 3
    assert "CERTIFIED ENVELOPE" in titles[1] and "the best loss each depth reaches" in titles[1]
    assert "on which the inverse-depth law is judged" in built["fig1"].caption
    assert "LAZY CONTRAST" in titles[2] and "not the paper's regime" in titles[2]
    assert "fig1" in CLAIM_FIGURES["inverse_depth"] and "fig1" in CLAIM_FIGURES["lazy_contrast"]
    assert "certified envelope" in built["fig1"].caption and "lazy-training contrast" in built["fig1"].caption
