"""The page and figure of the checks against trained models (:mod:`numerics.experiments.study.expressible_checks`).

Split from the checks by job: they compute the rows, this module writes them as Markdown (one
:func:`~numerics.experiments.study.render.render_page` of :class:`~numerics.experiments.study.render.Section`
values), CSV and a figure.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from numerics.io import savefig, write_together

from .._markdown import fixed
from .._plotting import depth_ticks, pyplot
from .expressible_checks import (FIGURE, LAW_CONTEXTS, LAW_DRAWS, LAW_LAYERS, LAZY_CSV, LAZY_FIT_CSV, PAGE,
                                 lazy_checks, lazy_law)
from ..recipes import LAZY
from .certified.contrasts import collect_contrasts
from .plan import TABLE1_SPECTRA, Plan
from .render import Section, render_page

__all__ = ["check_results_dir", "draw_figure", "expressible_markdown", "write_expressible_checks"]


def check_results_dir(out_dir, name: str = "out_dir", *, certified_dir=None) -> Path:
    """``out_dir`` as a path if it is a writable results directory holding the certified study's contrast runs.

    The checks run before any Monte Carlo (the lazy heads' law takes CPU minutes): ``out_dir`` must be a
    writable directory, and the certified study's lazy contrast runs (``certified_dir/contrasts``, default
    ``out_dir/certified/contrasts``) must be there, since every row of the page compares one of them.

    Raises
    ------
    ValueError
        Naming ``name``, the path and what it lacks.

    Examples
    --------
    >>> check_results_dir("/no/such/results", "--out")
    Traceback (most recent call last):
    ...
    ValueError: --out '/no/such/results' holds no certified study: '/no/such/results/certified/contrasts' is not a directory (a results directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/contrasts)
    """
    from numerics.io import check_output_dir

    out = check_output_dir(out_dir, name)
    runs = (Path(certified_dir) if certified_dir is not None else out / "certified") / "contrasts"
    if not runs.is_dir():
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(runs)!r} is not a directory (a results "
                         "directory is docs/results of a checkout, or $IDEPTH_RESULTS, holding certified/contrasts)")
    if not any(runs.iterdir()):
        raise ValueError(f"{name} {str(out)!r} holds no certified study: {str(runs)!r} is empty")
    return out


def _label(a: float, b: float) -> str:
    return f"(a, b) = ({a:g}, {b:g})"


def _csv(records) -> str:
    """The rows (dataclasses) as CSV, floats written exactly (``repr``)."""
    records = [asdict(r) for r in records]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]) if records else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: repr(v) if isinstance(v, float) else v for k, v in r.items()} for r in records)
    return buffer.getvalue()


def draw_figure(lazy_rows: list):
    """The figure (not written): per spectrum, the lazy recipe's trained ``R_L`` (dots) and its law, gain 1 (lines).

    Notes
    -----
    No example: it needs the checks' rows.
    """
    from matplotlib import ticker

    fig, ax = pyplot().subplots(figsize=(6.4, 4.4))
    for i, (a, b) in enumerate(dict.fromkeys((r.a, r.b) for r in lazy_rows)):
        rows = sorted((r for r in lazy_rows if (r.a, r.b) == (a, b)), key=lambda r: r.depth)
        L, colour = [r.depth for r in rows], f"C{i % 10}"
        ax.errorbar(L, [r.trained for r in rows], yerr=[r.trained_se for r in rows], color=colour, marker="o",
                    ms=3, ls="none", capsize=2)
        ax.plot(L, [r.law_fixed for r in rows], color=colour, lw=1.2, label=f"({a:g}, {b:g})")
    depth_ticks(ax, sorted({r.depth for r in lazy_rows}))
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.FixedLocator([0.2, 0.3, 0.5, 1, 2, 3, 5, 10]))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set(ylabel="loss", title="lazy recipe: trained (dots) vs its exchangeable law, gain 1 (lines)")
    if lazy_rows:
        ax.legend(title="(a, b)", fontsize=8, ncol=2)
    fig.tight_layout()
    return fig


def _opening(fits, missing: list) -> list[str]:
    lines = []
    if fits:
        pd, cd = [f.plateau_difference for f in fits], [f.c_difference for f in fits]
        lines.append(f"The lazy recipe's trained curve, fitted as plateau + c/L, has its plateau "
                     f"{min(p for p, _ in pd):+.3f} to {max(p for p, _ in pd):+.3f} and its c "
                     f"{min(c for c, _ in cd):+.3f} to {max(c for c, _ in cd):+.3f} away from the exchangeable law of "
                     f"its own initial heads with the gain fixed at 1 (per-spectrum SEs in the table), over "
                     f"{len(fits)} spectra.")
    if missing:
        lines.append("No shipped U_L yet at " + ", ".join(_label(a, b) for a, b in missing) + ": not compared.")
    return lines


def expressible_markdown(lazy_rows, fits, *, missing=(), command: str = "idepth expressible check") -> str:
    """The page: opening sentences computed from the rows, the figure, then the lazy recipe's tables.

    Examples
    --------
    >>> print(expressible_markdown([], [], missing=[(0.0, 0.5)]).splitlines()[2])
    No shipped U_L yet at (a, b) = (0, 0.5): not compared.
    """
    law = (f"{fits[0].layers} layers, {fits[0].draws} independent draws, {fits[0].contexts} fresh contexts each"
           if fits else "–")
    return render_page([
        Section("Checks against trained models: the lazy recipe and its exchangeable law", (
            " ".join(_opening(fits, list(missing))),
            f"Regenerated by `{command}` from the certified study's contrast runs (`docs/results/certified/`) and "
            "the shipped U_L (`theory/data/expressible/`); nothing is trained."),
            figures=(("the lazy recipe against its exchangeable law", FIGURE),), level=1),
        Section("The lazy recipe against its exchangeable law", (
            f"Trained: the certified contrasts' lazy runs (gain frozen at 1, lr {LAZY['learning_rate']:g}), "
            "report-set loss, mean over seeds, joint-bootstrap SE; plateau + c/L fitted by weighted least squares, "
            "SEs from refitting each bootstrap replicate. Law: the per-layer reads p_ℓ·y of a model drawn with the "
            f"recipe's initialisation ({law}), fed to `theory.head_families.exchangeable_law_from_reads`; with the "
            "gain fixed at 1 the law is exactly plateau + c/L with plateau = s − 2h + q and c = v; SEs: spread over "
            "the draws.",),
            (("spectrum", "trained plateau", "law plateau (gain 1)", "plateau difference", "trained c",
              "law c (gain 1)", "c difference"),
             [(_label(f.a, f.b), fixed(f.plateau, f.plateau_se), fixed(f.law_plateau, f.law_plateau_se),
               fixed(*f.plateau_difference), fixed(f.c, f.c_se), fixed(f.law_c, f.law_c_se),
               fixed(*f.c_difference)) for f in fits])),
        Section(table=(("spectrum", "refitted law R_∞", "refitted law c", "refitted law L₀"),
                       [(_label(f.a, f.b), fixed(f.refit_plateau, f.refit_plateau_se),
                         fixed(f.refit_c, f.refit_c_se), fixed(f.refit_shift, None, 3)) for f in fits])),
        Section(table=(("spectrum", "L", "trained lazy R_L", "law, gain 1", "trained − law", "law, gain refitted"),
                       [(_label(r.a, r.b), r.depth, fixed(r.trained, r.trained_se),
                         fixed(r.law_fixed, r.law_fixed_se), fixed(r.difference, r.difference_se),
                         fixed(r.law_refit, r.law_refit_se)) for r in lazy_rows])),
    ])


def write_expressible_checks(out_dir=None, *, progress=print, certified_dir=None, expressible_dir=None,
                             spectra=TABLE1_SPECTRA, law_draws: int = LAW_DRAWS, law_layers: int = LAW_LAYERS,
                             law_contexts: int = LAW_CONTEXTS, plan: Plan | None = None) -> list[Path]:
    """Compute the lazy recipe's check and write the page, its figure and two CSV tables; nothing is written on failure.

    ``certified_dir``: the certified study's files (default ``out_dir/certified``: its ``contrasts/``);
    ``expressible_dir``: the shipped U_L (default ``theory/data/expressible``), at whose depths the law is drawn.
    A spectrum without a shipped U_L is left out and named on the page. Returns the written paths.

    Notes
    -----
    No example: it reads the study's files (``tests/test_expressible_checks.py``).
    """
    from theory.expressible import ExpressibleLoss

    from .expressible import SETTINGS, data_dir, file_name

    if out_dir is None:
        from ..shipped import shipped_path

        out_dir = shipped_path()
    out_dir = check_results_dir(out_dir, "out_dir", certified_dir=certified_dir)  # before any Monte Carlo
    plan = plan or Plan()
    certified_dir = Path(certified_dir) if certified_dir is not None else out_dir / "certified"
    expressible_dir = Path(expressible_dir) if expressible_dir is not None else data_dir()
    contrasts = collect_contrasts(certified_dir / "contrasts")  # a corrupt run is named before anything is done
    expressible, missing = {}, []
    for a, b in spectra:
        path = expressible_dir / file_name(a, b, SETTINGS)
        if path.is_file():
            expressible[float(a), float(b)] = ExpressibleLoss.from_dict(json.loads(path.read_text())["result"])
        else:
            missing.append((float(a), float(b)))
    progress(f"U_L shipped at {len(expressible)} of {len(spectra)} spectra" +
             (f" (missing: {', '.join(_label(a, b) for a, b in missing)})" if missing else ""))
    progress(f"certified study: {len(contrasts)} contrast runs")
    laws = {}
    for (a, b), loss in expressible.items():
        progress(f"{_label(a, b)}: the lazy initial heads' law ({law_draws} draws of {law_layers} layers on "
                 f"{law_contexts} contexts)")
        laws[a, b] = (loss.depths, lazy_law(a, b, plan, loss.depths, layers=law_layers, draws=law_draws,
                                            contexts=law_contexts))
    lazy_rows, fits = lazy_checks(contrasts, laws, plan, rng=1)
    # everything computed and drawn before anything is written; then all files replace the old ones together
    page = expressible_markdown(lazy_rows, fits, missing=missing)
    fig = draw_figure(lazy_rows)
    try:
        written = write_together(out_dir, {FIGURE: lambda path: savefig(fig, path, dpi=100),
                                           LAZY_CSV: _csv(lazy_rows), LAZY_FIT_CSV: _csv(fits), PAGE: page})
    finally:
        pyplot().close(fig)
    for path in written:
        progress(f"wrote {path}")
    return written
