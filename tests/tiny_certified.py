"""One tiny certified study, trained once per test session and read by every test of the certified study.

The plan is the revised plan (:data:`~numerics.experiments.study.plan.REVISED_PLAN`) at the sizes of a
shipped ``U_L`` (d = 16, P = 64, top-2: its ``expressible`` and ``diverse`` starts exist only there), shrunk in
steps, sets and depths: one spectrum, depths 1, 2, 4, one seed, a long cap at L = 2, the doubled candidates of
every cell, and the contrast recipes (lazy, equal budget: plans of the same cells, one run each) on the same
report set. The report set is kept per context (``report_block`` 1, ``eval_size`` = ``report_size``); the block
means of ``report_block`` > 1 are checked on the shipped revised cells.

It is trained the way a long study runs, in two sessions: depths 1 and 2 into a first store (``first``), exporting
the cells; then every depth into a fresh store (``store``) that starts from the exported files only, so depth 4
nests on an imported parent. ``tests/conftest.py::tiny_certified`` builds it; tests read it and copy what they write.
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

from numerics.experiments.execution import Execution
from numerics.experiments.study.plan import REVISED_PLAN

__all__ = ["CONTRAST_STEPS", "FIRST_DEPTHS", "ONE_WORKER", "TINY", "TinyCertified", "WrittenPage", "cli_page",
           "tiny_page", "train_tiny_certified"]

TINY = dataclasses.replace(
    REVISED_PLAN, spectra=((0.0, 0.0),), depths=(1, 2, 4), seeds=(0,), cold_steps=24, warm_steps=12, diverse_steps=24,
    batch_size=32, warmup_steps=4, evals_per_run=2, eval_size=256, bound_contexts=512, select_size=256,
    report_size=256, report_block=1, min_eval_size=256, long_caps=((0.0, 0.0, 2),), long_steps=(15, 30))
#: the depths of the first session (the second one trains the rest from the exported files)
FIRST_DEPTHS = TINY.depths[:2]
#: the contrast recipes' step cap here (the study's: :data:`~numerics.experiments.study.certified.contrasts.CONTRAST_STEPS`)
CONTRAST_STEPS = 20
#: the tiny studies run in one local worker, silently
ONE_WORKER = Execution(workers=1, progress=False)


@dataclass(frozen=True)
class TinyCertified:
    """The trained tiny study: its plan, stores, cells (``{hash: Cell}``) and exported files."""

    plan: object
    root: Path
    first: Path  # the first session's store: depths FIRST_DEPTHS only
    store: Path  # the second session's store: every depth, FIRST_DEPTHS imported from the exported files
    cells: dict
    cells_dir: Path
    frontier_dir: Path
    contrast_store: Path
    contrasts_dir: Path
    contrast_runs: int  # the contrast plans' cells (one run each)

    def cell_at(self, depth: int) -> tuple[str, object]:
        """``(hash, cell)`` of the study's one cell at ``depth``."""
        (found,) = [(h, c) for h, c in self.cells.items() if c.depth == depth]
        return found

    def copy_cells(self, into: Path) -> Path:
        """A copy of the exported cells in ``into/cells`` (for a test that adds or changes files)."""
        shutil.copytree(self.cells_dir, Path(into) / "cells")
        return Path(into) / "cells"


def train_tiny_certified(root: Path) -> TinyCertified:
    """Train :data:`TINY` under ``root`` in two sessions, and its contrast plans (one store, one driver)."""
    from numerics.experiments.study import run_plan
    from numerics.experiments.study.certified.contrasts import CONTRAST_RECIPES, contrast_plan

    root = Path(root)
    files = dict(cells_dir=root / "cells", frontier_dir=root / "frontier")
    run_plan(TINY, root / "first", depths=FIRST_DEPTHS, execution=ONE_WORKER, **files)
    cells = run_plan(TINY, root / "store", execution=ONE_WORKER, **files)
    done = sum(len(run_plan(contrast_plan(TINY, recipe, steps=CONTRAST_STEPS), root / "contrast-store",
                            execution=ONE_WORKER, cells_dir=root / "contrasts")) for recipe in CONTRAST_RECIPES)
    return TinyCertified(TINY, root, root / "first", root / "store", cells, files["cells_dir"], files["frontier_dir"],
                         root / "contrast-store", root / "contrasts", done)


@dataclass(frozen=True)
class WrittenPage:
    """A page written from the tiny study: where, the exit status and standard output of the command that wrote it."""

    out: Path
    status: int
    stdout: str


def cli_page(study: TinyCertified, out: Path) -> WrittenPage:
    """``idepth study certified --report-only`` on the tiny study's exported cells and contrast runs (the CLI's plan,
    with its Monte-Carlo predictions, cached beside the cells: a second call reads them back)."""
    import contextlib
    import io

    from idepth import cli

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        status = cli.main(["study", "certified", "--report-only", "--cells", str(study.root), "--out", str(out)])
    return WrittenPage(Path(out), status, stdout.getvalue())


def tiny_page(study: TinyCertified, out: Path) -> WrittenPage:
    """The page of :data:`TINY` itself (its revised sections at the tiny sizes, the contrast recipes), without
    predictions."""
    from numerics.experiments.study.certified.facts import write_certified

    write_certified(out, study.cells_dir, TINY, command="tiny", predictions=False, contrasts_dir=study.contrasts_dir,
                    cache_dir=Path(out).parent / "tiny-page-cache")
    return WrittenPage(Path(out), 0, "")
