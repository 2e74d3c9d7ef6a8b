"""Publish a reproduction's figures into the documentation (``docs/figures/``).

:func:`write_figure_pages` copies the PNGs of ``OUT/figures`` and writes a MyST
page per figure (the image at its own size, caption, verdicts about it, the
command that regenerates it) and an index.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from .artefacts import ARTEFACTS

__all__ = ["write_figure_pages", "png_size"]

_SCALE = re.compile(r"# Reproduction report — scale (\w+)")
#: characters with a meaning in MyST Markdown, escaped in captions and verdict texts
_MARKDOWN = re.compile(r"([\\`*_\[\]<>$|#{}])")


def png_size(path) -> tuple[int, int]:
    """(width, height) in pixels of a PNG file, read from its header.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     fig = plt.figure(figsize=(2, 1)); fig.savefig(pathlib.Path(tmp) / "f.png", dpi=100); plt.close(fig)
    ...     png_size(pathlib.Path(tmp) / "f.png")
    (200, 100)
    """
    with open(path, "rb") as fh:
        header = fh.read(24)
    if header[:8] != b"\x89PNG\r\n\x1a\n" or header[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    return struct.unpack(">II", header[16:24])


def _escape(text: str) -> str:
    return _MARKDOWN.sub(r"\\\1", " ".join(str(text).split()))


def _captions_from_report(report_text: str) -> dict:
    """Without ``report.json``: the paragraph after each figure in REPORT.md."""
    return {match.group(1): {"caption": match.group(2), "verdicts": None}
            for match in re.finditer(r"!\[(\w+)\]\(figures/\1\.png\)\n\n(.+?)\n\n", report_text)}


def _page(artefact, png: Path, scale: str, entry: dict, claims: dict) -> str:
    from .report import claim_bullets

    width, _ = png_size(png)
    lines = [
        f"# {artefact.paper.split(';')[0]}: {artefact.title}", "",
        f"Paper: {artefact.paper}. Measured by this package at scale `{scale}`.", "",
        ":::{container} idepth-figure",
        "```{image} " + png.name,
        f":alt: {artefact.id}",
        f":width: {width}px",
        f":target: {png.name}",
        "```",
        ":::", "",
    ]
    caption = entry.get("caption")
    if caption:
        lines += [f"**Caption.** {_escape(caption)}", ""]
    verdicts = [claims[v] for v in entry.get("verdicts") or () if v in claims]  # None: none recorded
    lines += ["## Verdict", ""]
    if verdicts:
        lines += ["Computed from the numbers by the reproduction (`REPORT.md`, section *Verdict*):", ""]
        for claim in verdicts:
            lines += claim_bullets(claim, lead=":", escape=_escape)
        lines.append("")
    elif entry.get("verdicts") is None or "caption" not in entry:
        lines += ["The reproduction this page was made from recorded no verdicts per figure; see its `REPORT.md`.", ""]
    else:
        lines += ["No claim of the paper is tested on this figure alone; the caption gives its numbers.", ""]
    lines += [
        f"Regenerate (writes `reproduction/figures/{artefact.id}.png` and `.pdf`, reusing the run store):", "",
        f"```bash\nidepth reproduce --scale {scale} --only {artefact.id}\n```", "",
    ]
    return "\n".join(lines)


def write_figure_pages(reproduction_dir, docs_figures_dir) -> list[Path]:
    """Copy the figures of a finished reproduction into the docs, one page per figure.

    ``reproduction_dir`` is ``idepth reproduce``'s ``--out``; ``docs_figures_dir``
    gets the PNGs, the pages and ``index.md``. Returns the pages, index first.

    Examples
    --------
    >>> write_figure_pages("no-such-dir", "docs/figures")
    Traceback (most recent call last):
    ...
    ValueError: reproduction_dir no-such-dir has no REPORT.md: run `idepth reproduce` first
    """
    from numerics.io import write_together

    source, target = Path(reproduction_dir), Path(docs_figures_dir)
    report = source / "REPORT.md"
    if not report.is_file():
        raise ValueError(f"reproduction_dir {source} has no REPORT.md: run `idepth reproduce` first")
    report_text = report.read_text(encoding="utf-8")
    match = _SCALE.search(report_text)
    scale = match.group(1) if match else "quick"
    data_file = source / "report.json"
    if data_file.is_file():
        data = json.loads(data_file.read_text(encoding="utf-8"))
        figures, claims = data.get("figures", {}), {c["id"]: c for c in data.get("claims", [])}
    else:
        figures, claims = _captions_from_report(report_text), {}
    files, names = {}, []
    for artefact in ARTEFACTS.values():
        png = source / "figures" / f"{artefact.id}.png"
        if artefact.kind != "figure" or not png.is_file():
            continue
        files[png.name] = png.read_bytes()
        files[f"{artefact.id}.md"] = _page(artefact, png, scale, figures.get(artefact.id, {}), claims)
        names.append(artefact.id)
    if not names:
        raise ValueError(f"reproduction_dir {source} has no figures/*.png")
    files["index.md"] = (
        "# Reproduced figures\n\n"
        f"Each page shows one figure of the paper as measured by this package (`idepth reproduce --scale {scale}`)\n"
        "at its own size, with its caption, the verdicts computed about it and the command that regenerates it.\n"
        "The pages are written by `numerics.experiments.reproduce.docs_pages.write_figure_pages(OUT, 'docs/figures')`\n"
        "from a finished reproduction.\n\n"
        "```{toctree}\n:maxdepth: 1\n\n" + "\n".join(names) + "\n```\n"
    )
    written = write_together(target, files)  # the pages, their figures and the index replace the old ones together
    return [written[-1], *(path for path in written if path.suffix == ".md" and path.name != "index.md")]
