"""One section vocabulary for the study's pages: a page is a list of :class:`Section` values and one
:func:`render_page` call.

The regime study's page, the plateau checks' sections (consistency and sizes) and the expressible check's page
are data built by their modules; only this module turns them into Markdown, so every page separates its
blocks, writes its tables (:func:`~numerics.experiments._markdown.markdown_table`) and links its figures one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from .._markdown import markdown_table

__all__ = ["Section", "render_page"]


@dataclass(frozen=True)
class Section:
    """One part of a page: an optional heading, paragraphs, an optional table and figures, in that order.

    Attributes
    ----------
    title : str
        The heading's text ('' for none: the section continues the previous one).
    paragraphs : tuple of str
        Each one block (a multi-line string is one block: a bullet list, or two lines of one paragraph).
    table : tuple or None
        ``(header, rows)`` of :func:`~numerics.experiments._markdown.markdown_table`.
    figures : tuple of (str, str)
        ``(alt text, path)`` of each image, one per line in one block.
    level : int
        The heading's level (``#`` count).

    Examples
    --------
    >>> Section("Result", ("One sentence.",), (("L", "R_L"), [(1, 2.0)])).level
    2
    """

    title: str = ""
    paragraphs: tuple = ()
    table: tuple | None = None
    figures: tuple = ()
    level: int = 2

    def blocks(self) -> list[str]:
        """The section's blocks (heading, paragraphs, table, figures), each a string without blank lines around it.

        Examples
        --------
        >>> Section("Fit", ("α ≈ 1.",), figures=(("map", "figures/a.png"),), level=1).blocks()
        ['# Fit', 'α ≈ 1.', '![map](figures/a.png)']
        """
        out = [f"{'#' * self.level} {self.title}"] if self.title else []
        out += list(self.paragraphs)
        if self.table is not None:
            out.append("\n".join(markdown_table(*self.table)))
        if self.figures:
            out.append("\n".join(f"![{alt}]({path})" for alt, path in self.figures))
        return out


def render_page(sections: Sequence[Section]) -> str:
    """The Markdown of ``sections``: every block separated by one blank line, the text ending with a newline.

    Examples
    --------
    >>> print(render_page([Section("Fit", ("α ≈ 1.",)), Section(table=(("L", "R_L"), [(1, 2.0)]))]), end="")
    ## Fit
    <BLANKLINE>
    α ≈ 1.
    <BLANKLINE>
    | L | R_L |
    |---|---|
    | 1 | 2.0 |
    """
    return "\n\n".join(block for section in sections for block in section.blocks()) + "\n"
