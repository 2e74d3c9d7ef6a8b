"""Publish a reproduction's figures into the documentation (``docs/figures/``).

``idepth reproduce`` writes its figures into ``OUT/figures``; :func:`write_figure_pages`
copies the PNGs into ``docs/figures/`` and writes one MyST page per figure (title, the
paper's figure and equations, the image, the command that regenerates it and the scale it
was run at) plus an index with a toctree, so the site shows what the package measured.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from .plan import ARTEFACTS

__all__ = ["write_figure_pages"]

_SCALE = re.compile(r"# Reproduction report — scale (\w+)")


def write_figure_pages(reproduction_dir, docs_figures_dir) -> list[Path]:
    """Copy the figures of a finished reproduction into the docs, one page per figure.

    Parameters
    ----------
    reproduction_dir : path
        The ``--out`` directory of ``idepth reproduce`` (holds ``REPORT.md`` and ``figures/``).
    docs_figures_dir : path
        Usually ``docs/figures``; its ``index.md`` is rewritten.

    Returns
    -------
    list of Path
        The pages written (index first).

    References
    ----------
    The paper's figures 1, 3-7, 9-14 (see :data:`numerics.experiments.reproduce.plan.ARTEFACTS`).

    Examples
    --------
    >>> write_figure_pages("no-such-dir", "docs/figures")
    Traceback (most recent call last):
    ...
    ValueError: reproduction_dir no-such-dir has no REPORT.md: run `idepth reproduce` first
    """
    source, target = Path(reproduction_dir), Path(docs_figures_dir)
    report = source / "REPORT.md"
    if not report.is_file():
        raise ValueError(f"reproduction_dir {source} has no REPORT.md: run `idepth reproduce` first")
    match = _SCALE.search(report.read_text(encoding="utf-8"))
    scale = match.group(1) if match else "quick"
    target.mkdir(parents=True, exist_ok=True)
    written, names = [], []
    for artefact in ARTEFACTS.values():
        png = source / "figures" / f"{artefact.id}.png"
        if artefact.kind != "figure" or not png.is_file():
            continue
        shutil.copyfile(png, target / png.name)
        page = target / f"{artefact.id}.md"
        page.write_text(
            f"# {artefact.paper.split(';')[0]}: {artefact.title}\n\n"
            f"Paper: {artefact.paper}. Measured by this package at scale `{scale}`.\n\n"
            f"![{artefact.id}]({png.name})\n\n"
            f"Regenerate (writes `reproduction/figures/{artefact.id}.png` and `.pdf`, reusing the run store):\n\n"
            f"```bash\nidepth reproduce --scale {scale} --only {artefact.id}\n```\n\n"
            "What the numbers mean, and where they agree or disagree with the paper, is in the\n"
            "reproduction's `REPORT.md` (verdicts are computed from the numbers).\n",
            encoding="utf-8",
        )
        names.append(artefact.id)
        written.append(page)
    if not names:
        raise ValueError(f"reproduction_dir {source} has no figures/*.png")
    index = target / "index.md"
    index.write_text(
        "# Reproduced figures\n\n"
        f"Each page shows one figure of the paper as measured by this package (`idepth reproduce --scale {scale}`),\n"
        "with the command that regenerates it. The pages are written by\n"
        "`numerics.experiments.reproduce.docs_pages.write_figure_pages(OUT, 'docs/figures')` from a finished reproduction.\n\n"
        "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(names) + "\n```\n",
        encoding="utf-8",
    )
    return [index, *written]
