"""Sphinx configuration of the inverse-depth documentation.

Build with ``idepth docs build [--out DIR]`` (a thin wrapper around
``sphinx-build -b html -W --keep-going -E``). Warnings are errors, and
cross-references are checked (``nitpicky``), so a broken link, a missing
module or a malformed numpydoc docstring fails the build.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))  # document the source tree that sits next to these docs

project = "inverse-depth"
author = "the inverse-depth authors"
copyright = "2026, " + author

try:
    from theory import __version__ as release
except Exception:  # the API pages will report the import error themselves
    release = "unknown"
version = release

# Markdown (MyST) pages; the generated API pages are reStructuredText because autodoc emits it.
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
# Commands quoted in prose (figure pages, results pages) must survive copy and paste: no "--" → "–".
smartquotes = False
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "**/.*.tmp"]

# Math must render without any network: the MathJax 3.2.2 files come from the PyPI package
# `sphinx-mathjax-offline` (a Sphinx extension that copies them into _static/mathjax/ after the
# build). Fail early with an actionable message when it is missing, rather than silently falling
# back to Sphinx's default CDN URL.
if importlib.util.find_spec("sphinx-mathjax-offline") is None:
    raise RuntimeError(
        "the docs need the PyPI package 'sphinx-mathjax-offline' (offline MathJax); "
        'install it with: pip install "sphinx-mathjax-offline>=0.0.2"'
    )

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "offline_math",  # drops MathJax's CDN loader latest.js from the copied bundle
    # numpydoc rather than napoleon: the package's docstrings *are* numpydoc (References and
    # Examples sections are required), numpydoc renders every numpydoc section (References,
    # Examples as doctest blocks, Attributes) faithfully and reports malformed sections as
    # warnings, which this build turns into errors; napoleon accepts and rewrites less strictly.
    "numpydoc",
    "idepth_api",
    "readable_figures",  # figures never shown narrower than their smallest text allows (9 px)
    "build_phases",  # the phases and their elapsed seconds on stderr, under `idepth docs build` only
]

# --- MathJax (local copy, see above) -------------------------------------------------------
mathjax_path = "mathjax/tex-chtml.js"
mathjax3_config = {
    # The context menu is off because its speech/explorer options would load the speech-rule
    # engine, whose data files the offline bundle does not contain (they live on a CDN).
    "options": {"enableMenu": False},
}

# --- MyST --------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --- autodoc + numpydoc --------------------------------------------------------------------
# No undoc-members: a frozen result's fields are described in its numpydoc "Attributes" section
# (listing them again as bare entries would only repeat their names). References to such fields
# render as plain text (docs/_ext/idepth_api.py: existing but undocumented objects).
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # types are stated in the numpydoc Parameters sections
numpydoc_show_class_members = False  # autodoc :members: documents them; avoids duplicate entries
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# --- strictness ----------------------------------------------------------------------------
# Every explicit cross-reference (:func:, :class:, {py:obj}, {ref}, {doc}) must resolve.
nitpicky = True
_EXTERNAL = (
    # other libraries and the standard library: no intersphinx, which would need the network
    "numpy|np|sympy|sp|scipy|mpmath|dask|distributed|matplotlib|pandas|tqdm|hypothesis|pytest"
    "|os|sys|io|json|sqlite3|pathlib|concurrent|multiprocessing|subprocess|tempfile|typing|dataclasses"
    "|collections|functools|itertools|numbers|abc|hashlib|argparse|logging|warnings|contextlib|enum|math"
)
nitpick_ignore_regex = [
    (r"py:.*", rf"({_EXTERNAL})(\..*)?"),
    # builtins and numpydoc type words
    (r"py:.*", r"(optional|array_like|array-like|callable|scalar|path|str|int|float|bool|dict|list|tuple|None"
               r"|object|bytes|Exception|ValueError|TypeError|RuntimeError|KeyError|OSError|FileNotFoundError)"),
    # private helpers are not part of the API reference, so references to them cannot resolve
    (r"py:.*", r"(.*\.)?_[A-Za-z0-9]\w*"),
]
suppress_warnings: list[str] = []

# --- HTML ----------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = "inverse-depth"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "description": "Emergent inverse-depth scaling from nonlinearity in attention: theory, numerics, derivations.",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}
html_show_sourcelink = False
html_last_updated_fmt = None  # keep builds reproducible
