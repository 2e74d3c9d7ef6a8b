"""Sphinx extension: ``.. package-api:: theory`` documents every public module of a package.

The directive walks the package (``pkgutil.walk_packages``), skips private
modules (any dotted component starting with ``_``) and emits, for each
module, a section with ``.. automodule:: NAME`` and ``:members:`` (which
follows the module's ``__all__``). New modules therefore appear in the API
reference without editing the docs; a module that fails to import fails the
build (autodoc warns, and warnings are errors).
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


def public_modules(package: str) -> list[str]:
    """Dotted names of the public modules of ``package`` (the package itself excluded), sorted."""
    root = importlib.import_module(package)
    names = []
    # a sub-package that fails to import is still listed (autodoc then reports the error)
    for info in pkgutil.walk_packages(root.__path__, prefix=package + ".", onerror=lambda name: None):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        names.append(info.name)
    return sorted(names)


def _foreign_data(module) -> list[str]:
    """Names in ``module.__all__`` bound to data whose ``__module__`` names another module."""
    import inspect

    names = []
    for member in getattr(module, "__all__", ()):
        obj = getattr(module, member, None)
        if obj is None or inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
            continue
        owner = getattr(obj, "__module__", None)
        if isinstance(owner, str) and owner != module.__name__:
            names.append(member)
    return names


class PackageAPI(SphinxDirective):
    """Automodule sections for every public module of a package."""

    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0]
        try:
            modules = public_modules(package)
        except Exception as exc:  # an import error of the package itself
            raise self.error(f"package-api: cannot import {package!r}: {type(exc).__name__}: {exc}") from exc
        lines: list[str] = [f".. automodule:: {package}", "   :no-members:", ""]
        for name in modules:
            try:
                module = importlib.import_module(name)
            except Exception:  # autodoc reports the import error as a warning (= build error)
                module = None
            module_file = getattr(module, "__file__", None)
            if module_file:
                self.env.note_dependency(module_file)
            foreign = _foreign_data(module)
            lines += [f"``{name}``", "=" * (len(name) + 4), "", f".. automodule:: {name}"]
            if foreign:
                lines.append(f"   :exclude-members: {', '.join(foreign)}")
            lines.append("")
            # __all__ is the declared API: data objects whose class reports another __module__
            # (sympy expressions: ``Mul.__module__ == 'sympy.core.mul'``) are skipped by automodule
            # as "imported" unless a ``#:`` comment documents them, so they are listed explicitly
            for member in foreign:
                lines += [f".. autodata:: {name}.{member}", ""]
        source = self.get_source_info()[0] or "<package-api>"
        content = StringList(lines, source=source)
        container = nodes.section()
        container.document = self.state.document
        nested_parse_with_titles(self.state, content, container)
        return container.children


#: packages whose re-exported names (``theory.predict_loss``) resolve to their defining module
REEXPORTING_PACKAGES = ("theory", "numerics", "derivations")


def _locate(dotted: str):
    """The object at ``dotted`` (``package.name``) if it is a re-export of a documented module."""
    package, _, rest = dotted.partition(".")
    if package not in REEXPORTING_PACKAGES or not rest:
        return None
    try:
        obj = importlib.import_module(package)
        for part in rest.split("."):
            obj = getattr(obj, part)
    except Exception:
        return None
    return obj


def resolve_reexport(app, env, node, contnode):
    """``missing-reference`` handler: ``theory.X`` → ``theory.<module>.X`` where X is defined.

    Public names are re-exported by the packages' ``__init__``; the API reference documents each
    object once, under the module that defines it, so a reference to the re-exported name is
    retried with the defining module's name.
    """
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip(".~")
    module = node.get("py:module")
    klass = node.get("py:class")
    candidates = [target]
    if module and klass:
        candidates.append(f"{module}.{klass}.{target}")
    if module:
        candidates.append(f"{module}.{target}")
    if module and klass:
        # a class re-exported by a package is documented there too: look in its defining module
        context = _locate(f"{module}.{klass}")
        home = getattr(context, "__module__", None)
        if isinstance(home, str) and home != module:
            candidates.append(f"{home}.{target}")
    domain = env.get_domain("py")
    for candidate in candidates:
        obj = _locate(candidate)
        defining = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if not defining or not qualname:
            continue
        real = f"{defining}.{qualname}"
        if real == candidate:
            continue
        resolved = domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], real, node, contnode)
        if resolved is not None:
            return resolved
    # An object that exists but is not part of the documented API (a module constant outside
    # __all__, say) is shown as unlinked text; a name that does not exist at all stays an error.
    for candidate in candidates:
        if _exists(candidate):
            return contnode
    return None


def _exists(dotted: str) -> bool:
    """Whether ``dotted`` names an attribute reachable from one of the project's packages."""
    parts = dotted.split(".")
    if parts[0] not in REEXPORTING_PACKAGES:
        return False
    for split in range(len(parts), 0, -1):  # longest importable module prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except Exception:
            continue
        for part in parts[split:]:
            if hasattr(obj, part):
                obj = getattr(obj, part)
            elif isinstance(obj, type) and any(part in getattr(k, "__annotations__", {}) for k in obj.__mro__):
                obj = None  # a declared field (a dataclass field without default is no class attribute)
            else:
                return False
        return True
    return False


def drop_class_docstring_of_data(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``: a data object (a sympy expression, a tuple) has no docstring of
    its own; autodoc would show its *class's* docstring (sympy's ``Mul`` manual), so drop it."""
    if what not in ("data", "attribute") or not lines:
        return
    import inspect

    class_doc = inspect.getdoc(type(obj)) or ""
    if class_doc and "\n".join(lines).strip() == inspect.cleandoc(class_doc).strip():
        lines.clear()


#: ``|text|`` with no space inside the bars: reStructuredText reads it as a substitution reference
_BARS = re.compile(r"(?<![\\`|\w])\|(?=[^\s|`])([^|`]*?[^\s|`\\])\|(?![|`_\w])")


def escape_absolute_value_bars(app, what, name, obj, options, lines):
    """``autodoc-process-docstring``: the project writes plain-text maths in docstrings, where
    ``|dk/dλ|`` means an absolute value; reStructuredText would read it as an (undefined)
    substitution and fail the build. The project defines no substitutions, so such bars are
    escaped; doctest lines and grid-table rows are left alone."""
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith((">>>", "...", "| ", "+-", "+=")) or stripped == "|":
            continue
        lines[index] = _BARS.sub(lambda match: "\\|" + match.group(1) + "\\|", line)


def setup(app):
    app.add_directive("package-api", PackageAPI)
    app.connect("autodoc-process-docstring", escape_absolute_value_bars, priority=100)
    # before numpydoc (priority 500) rewrites the lines
    app.connect("autodoc-process-docstring", drop_class_docstring_of_data, priority=100)
    app.connect("missing-reference", resolve_reexport)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
