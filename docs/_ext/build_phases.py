"""Sphinx extension: say the build's phases, with the seconds elapsed, on stderr.

Only under ``idepth docs build``, which sets :data:`idepth.commands.docs.STARTED_VARIABLE` to the
time it started (a plain ``sphinx-build`` stays as quiet as ``-q`` makes it). The lines are
:func:`idepth.commands.docs.phase_line`'s, the same as the command's own.
"""

from __future__ import annotations

import os
import sys


def _say(message: str) -> None:
    from idepth.commands.docs import STARTED_VARIABLE, phase_line

    started = os.environ.get(STARTED_VARIABLE)
    if started is None:
        return
    try:
        print(phase_line(message, float(started)), file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed stream or a malformed variable must not fail the build
        pass


def api_stubs(app, config=None) -> None:
    from idepth_api import has_api_section

    if has_api_section(app.srcdir):
        _say("writing the API reference stubs…")


#: seconds between two progress lines inside a phase (reading, writing): no silent stretch longer than this
EVERY_S = 10.0
_counts = {"phase": "", "total": 0, "done": 0, "said": 0.0}


def _start(phase: str, total: int) -> None:
    import time

    _counts.update(phase=phase, total=total, done=0, said=time.monotonic())


def _step(*args) -> None:
    """One more page of the current phase; a line when :data:`EVERY_S` seconds have passed since the last."""
    import time

    _counts["done"] += 1
    if time.monotonic() - _counts["said"] >= EVERY_S:
        _counts["said"] = time.monotonic()
        _say(f"{_counts['phase']} {min(_counts['done'], _counts['total'])} of {_counts['total']} pages…")


def reading(app, env, docnames) -> None:
    _say(f"reading {len(docnames)} of {len(env.found_docs)} pages (autodoc imports the package)…")
    _start("read", len(docnames))


def writing(app, builder) -> None:
    _say(f"resolving references and writing the {builder.format.upper()} pages…")
    _start("wrote", len(builder.env.found_docs))


def finishing(app, exception) -> None:
    if exception is None:
        _say("copying the offline MathJax…")


def setup(app):
    app.connect("config-inited", api_stubs, priority=100)  # before idepth_api writes them (priority 500)
    app.connect("env-before-read-docs", reading, priority=900)  # after any handler that changes the list
    app.connect("write-started", writing)
    app.connect("doctree-read", _step)  # a page read
    app.connect("html-page-context", _step)  # a page written
    app.connect("build-finished", finishing, priority=100)  # before sphinx-mathjax-offline copies it
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
