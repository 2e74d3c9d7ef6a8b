"""Sphinx extension: every figure is shown at least as wide as it must be for its smallest text to be legible.

A PNG written by the package records the size of its smallest text in points
(:func:`numerics.io.savefig`; read back by :func:`numerics.io.figure_text_size`). Shown ``w`` pixels wide, a
PNG ``W`` pixels wide at ``dpi`` dots per inch draws that text ``points * dpi / 72 * w / W`` pixels tall; this
extension gives each such image

* ``width``: its natural width (never magnified), shrunk by the page's CSS (``max-width: 100%``) to its
  container, and
* ``min-width``: :func:`readable_width`, the width at which the smallest text is :data:`MIN_TEXT_PX` pixels
  tall (CSS ``min-width`` wins over ``max-width``),

and makes the image's container (a paragraph, or the ``idepth-figure`` container of the figure pages) scroll
sideways when the figure is wider than the column, so the page itself never is
(``docs/_static/custom.css``). A figure whose natural-size text is already under :data:`MIN_TEXT_PX` is shown
at the width that brings it there (magnified). An image without the record (saved before it existed, or not by
the package) is left as it was: ``tests/test_docs_browser.py`` reports it.
"""

from __future__ import annotations

import math
from pathlib import Path

from docutils import nodes

#: the smallest height, in CSS pixels, at which a figure's smallest text is shown
MIN_TEXT_PX = 9.0
#: classes: an image sized here, and the container that scrolls sideways around it
IMAGE_CLASS = "idepth-readable"
SCROLL_CLASS = "idepth-scroll"
#: a table of this many columns or more is set in a smaller font (class ``idepth-wide``), so it fits the column
WIDE_COLUMNS = 6
WIDE_CLASS = "idepth-wide"


def readable_width(size) -> int | None:
    """The display width, in CSS pixels, at which the smallest text of a figure is :data:`MIN_TEXT_PX` tall.

    ``size``: a :class:`numerics.io.FigureTextSize`; None when it records no text size.

    Examples
    --------
    >>> from numerics.io import FigureTextSize
    >>> readable_width(FigureTextSize(7.0, 144.0, 1400))  # 14 px text at 1400 px: 9 px at 900 px
    900
    """
    if size.points is None:
        return None
    return math.ceil(size.width * MIN_TEXT_PX / (size.points * size.dpi / 72.0) - 1e-9)


def _source(builder, node) -> Path | None:
    candidate = (node.get("candidates") or {}).get("*") or node.get("uri")
    if not candidate or "://" in candidate:
        return None
    path = Path(builder.srcdir) / candidate
    return path if path.suffix.lower() == ".png" and path.is_file() else None


def mark_containers(app, doctree) -> None:
    """Give the paragraph or container around each image the class that lets it scroll sideways, and tables of
    :data:`WIDE_COLUMNS` columns or more the class of a smaller font."""
    for table in doctree.findall(nodes.table):
        groups = list(table.findall(nodes.tgroup))
        if groups and int(groups[0].get("cols", 0)) >= WIDE_COLUMNS and WIDE_CLASS not in table["classes"]:
            table["classes"].append(WIDE_CLASS)
    for image in list(doctree.findall(nodes.image)):
        inline = image.parent if isinstance(image.parent, nodes.reference) else image  # a linked image: its link
        parent = inline.parent
        if isinstance(parent, (nodes.paragraph, nodes.container, nodes.figure)):
            if SCROLL_CLASS not in parent["classes"]:
                parent["classes"].append(SCROLL_CLASS)
        elif parent is not None:  # an image directive directly in a section: a container of its own around it
            wrapper = nodes.container(classes=[SCROLL_CLASS])
            parent.replace(inline, wrapper)
            wrapper += inline


def visit_image(self, node) -> None:
    from sphinx.writers.html5 import HTML5Translator

    from numerics.io import figure_text_size

    path = _source(self.builder, node)
    size = figure_text_size(path) if path is not None else None
    minimum = readable_width(size) if size is not None else None
    if minimum is None:
        HTML5Translator.visit_image(self, node)
        return
    node = node.deepcopy()  # the HTML is written from a copy: the doctree keeps its own width
    for key in ("width", "height", "scale"):
        node.attributes.pop(key, None)
    node["classes"] = [*node["classes"], IMAGE_CLASS]
    HTML5Translator.visit_image(self, node)
    tag = self.body[-1]
    style = f'style="width: {max(size.width, minimum)}px; min-width: {minimum}px" '
    self.body[-1] = tag.replace("<img ", f"<img {style}", 1)


def depart_image(self, node) -> None:
    from sphinx.writers.html5 import HTML5Translator

    HTML5Translator.depart_image(self, node)


def setup(app):
    app.add_node(nodes.image, override=True, html=(visit_image, depart_image))
    app.connect("doctree-read", mark_containers)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
