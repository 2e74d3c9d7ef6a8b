"""``idepth study page PLAN``: a plan's page from its exported cells; bad input is one line and exit 2, before any work."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
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
    looked_in = Path(shipped.__file__).resolve().parents[2] / "docs" / "results"  # where a checkout keeps them
    assert err[0].endswith(f"looked in {looked_in}")


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


# ------------------------------------------------------------------------ the pages that render from shipped tables

def _shipped(*parts: str) -> Path:
    from numerics.experiments.shipped import shipped_path

    return shipped_path(*parts)


def _read_rows(path: Path, kind) -> list:
    """The dataclass rows of a CSV the expressible check wrote (``page.csv_text``: floats exact, ints as ints)."""
    fields = kind.__dataclass_fields__
    return [kind(**{k: int(v) if fields[k].type == "int" else float(v) for k, v in row.items()})
            for row in csv.DictReader(path.open())]


def test_the_expressible_page_renders_byte_identical_from_its_shipped_tables():
    """Rendering only: the page is a function of the two CSV tables written beside it (nothing recomputed)."""
    from numerics.experiments.study.expressible_checks import LazyFit, LazyRow
    from numerics.experiments.study.page import LAZY_CSV, LAZY_FIT_CSV, PAGE, csv_text, expressible_markdown

    rows, fits = _read_rows(_shipped(LAZY_CSV), LazyRow), _read_rows(_shipped(LAZY_FIT_CSV), LazyFit)
    assert len(fits) == 7 and len(rows) == 7 * 8  # every Table 1 spectrum, depths 1-128
    assert csv_text(rows) == _shipped(LAZY_CSV).read_text() and csv_text(fits) == _shipped(LAZY_FIT_CSV).read_text()
    assert expressible_markdown(rows, fits) == _shipped(PAGE).read_text()


def test_the_sizes_page_renders_byte_identical_from_its_shipped_record():
    from numerics.experiments.study.page import sizes_markdown
    from numerics.experiments.study.plateaus import SizeInference

    record = json.loads(_shipped("sizes", "sizes.json").read_text())
    fields = {k: np.asarray(v, dtype=float) if isinstance(v, list) and k.startswith(("mixture", "single", "chi2"))
              else tuple(map(tuple, v)) if k.startswith("region") else tuple(v) if isinstance(v, list) else v
              for k, v in record.items()}
    result = SizeInference(**fields)
    assert (result.best_mixture, len(result.rows)) == (tuple(record["best_mixture"]), 14)
    assert sizes_markdown(result, "figures/sizes_chi2.png") == _shipped("sizes", "sizes.md").read_text()
