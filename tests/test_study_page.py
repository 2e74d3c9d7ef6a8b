"""``idepth study page PLAN``: a plan's page from its exported cells; bad input is one line and exit 2, before any work."""

from __future__ import annotations

import pytest

from idepth import cli


def test_a_results_directory_without_cells_is_refused_naming_where_it_looked(tmp_path, capsys):
    (tmp_path / "cells").mkdir()
    assert cli.main(["study", "page", "certified", "--cells", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(tmp_path / "cells") in err[0] and "--cells" in err[0]
    assert list(tmp_path.iterdir()) == [tmp_path / "cells"]  # nothing written


def test_no_shipped_results_is_refused_naming_the_variable(tmp_path, monkeypatch, capsys):
    from numerics.experiments import shipped

    monkeypatch.setattr(shipped, "results_dir", lambda: None)  # outside a checkout, IDEPTH_RESULTS unset
    assert cli.main(["study", "page", "certified"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and shipped.RESULTS_VARIABLE in err[0]


def test_results_named_by_the_variable_without_the_plans_cells_are_refused(tmp_path, monkeypatch, capsys):
    from numerics.experiments.shipped import RESULTS_VARIABLE

    monkeypatch.setenv(RESULTS_VARIABLE, str(tmp_path))
    assert cli.main(["study", "page", "certified"]) == 2
    assert str(tmp_path.resolve() / "certified-revised" / "cells") in capsys.readouterr().err


def test_each_page_plan_names_shipped_results_that_hold_its_cells():
    """The defaults point at the checkout's cells: docs/results/certified-revised/cells (the first study's page is
    retired: its cells stay as data, no page plan writes from them)."""
    from idepth.commands.study import PAGE_PLANS
    from numerics.experiments.shipped import shipped_path

    for plan, (results, page) in PAGE_PLANS.items():
        assert any((shipped_path() / results / "cells").glob("*.npz")), plan
        assert (shipped_path() / page / "certified-study.md").is_file(), plan
    assert set(PAGE_PLANS) == {"certified"}
    assert not (shipped_path() / "certified-study.md").exists()  # the superseded page left the docs


def test_an_unknown_plan_is_refused_naming_the_plans(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["study", "page", "certfied"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "certified" in err and "certified-v1" not in err


def test_the_page_writer_refuses_a_directory_without_cells(tmp_path):
    from numerics.experiments.study.plan import Plan
    from numerics.experiments.study.certified.facts import write_certified

    with pytest.raises(ValueError, match="no exported cells in"):
        write_certified(tmp_path / "out", tmp_path / "cells", Plan(), command="test")
    assert not (tmp_path / "out").exists()
