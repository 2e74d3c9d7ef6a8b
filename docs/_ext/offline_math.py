"""Sphinx extension: keep the vendored MathJax bundle free of CDN loaders.

``sphinx-mathjax-offline`` copies MathJax 3.2.2 into ``_static/mathjax/`` when the build
finishes. Its ``latest.js`` is MathJax's loader that fetches "the latest MathJax" from a CDN;
no page uses it, and shipping it would put a CDN loader into the site, so it is removed
(after the copy: this handler runs with a later priority).
"""

from __future__ import annotations

from pathlib import Path

#: files of the MathJax distribution whose only purpose is loading MathJax from a CDN
CDN_LOADERS = ("latest.js",)


def remove_cdn_loaders(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    mathjax = Path(app.outdir) / "_static" / "mathjax"
    for name in CDN_LOADERS:
        (mathjax / name).unlink(missing_ok=True)


def setup(app):
    app.connect("build-finished", remove_cdn_loaders, priority=800)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
