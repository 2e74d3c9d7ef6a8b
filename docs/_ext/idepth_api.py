"""Sphinx extension: the API reference, one page per public module, function, class and datum.

At ``config-inited`` it walks the documented packages (:data:`API_PACKAGES`,
``pkgutil.walk_packages``), skips private modules (any dotted component starting
with ``_``) and writes reStructuredText stubs into ``docs/api/generated/`` (not
committed; rewritten only where they changed): a page per package listing its
modules, a page per module (its docstring and a table of its objects, one line
each) and a page per object of the module's ``__all__`` (``.. autofunction::``,
``.. autoclass::`` with its members, ``.. autodata::``). Each object is documented
once, under its home module (:func:`object_homes`): where it is defined, or, for one
defined in a private module, the public module that exports it. New modules and
objects therefore appear without editing the docs; a module that fails to import
fails the build (autodoc warns, and warnings are errors).

``.. package-api:: theory`` (the former one-page-per-package form) is kept for other
pages that want a whole package on one page.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import re
from pathlib import Path

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


# ------------------------------------------------------------------------------ one page per object

#: packages of the API reference, with the one line their index page opens with
API_PACKAGES = {
    "theory": "What the paper predicts: every function cites the paper's equation numbers in its *References* "
              "section and carries a runnable *Examples* section (run as doctests by the test suite).",
    "numerics": "What is simulated: the data of eqs. (1)-(6), the attention models of eqs. (7)-(12) and appendix C, "
                "training, diagnostics, and the experiments layer (depth sweeps, studies, the reproduction).",
}
#: where the stubs are written, relative to the docs source directory
GENERATED = "api/generated"


def _assigned_names(module) -> set:
    """Top-level names bound in ``module``'s own source (assignments, defs, classes), not imports."""
    try:
        tree = ast.parse(inspect.getsource(module))
    except (OSError, TypeError, SyntaxError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.isroutine(obj) and getattr(obj, "__qualname__", "").count(".") == 0:
        return "function"
    return "data"


def object_homes(packages=None) -> dict:
    """``{module: [(name, kind), ...]}``: the objects each public module documents, in ``__all__`` order.

    A class or function is documented by the module that defines it (``__module__``) when that module
    is public and lists it in ``__all__``; else by the public exporters' module nearest to its
    definition (longest common dotted prefix, then the deepest). Data is documented by the exporter
    whose source binds the name, else by the deepest exporter. Sub-modules and private names in an
    ``__all__`` are not objects.
    """
    exports: dict = {}  # (id, name) -> (obj, [exporting modules])
    assigned: dict = {}
    for package in packages or API_PACKAGES:
        for module_name in [package] + public_modules(package):
            module = importlib.import_module(module_name)
            assigned[module_name] = _assigned_names(module)
            for name in getattr(module, "__all__", ()):
                if name.startswith("_") or not hasattr(module, name):
                    continue
                obj = getattr(module, name)
                if inspect.ismodule(obj):
                    continue
                exports.setdefault((id(obj), name), (obj, []))[1].append(module_name)
    homes: dict = {}
    for (_, name), (obj, exporters) in exports.items():
        kind = _kind(obj)
        defining = getattr(obj, "__module__", None) if kind != "data" else None
        if defining in exporters:
            home = defining
        elif kind == "data" and any(name in assigned[m] for m in exporters):
            home = next(m for m in exporters if name in assigned[m])
        else:
            def nearness(module_name):
                common = os.path.commonprefix([module_name.split("."), (defining or "").split(".")])
                return (len(common), module_name.count("."), module_name)

            home = max(exporters, key=nearness)
        homes.setdefault(home, []).append((name, kind))
    for module_name, entries in homes.items():
        order = list(getattr(importlib.import_module(module_name), "__all__", ()))
        entries.sort(key=lambda entry: order.index(entry[0]))
    return homes


def _summary(obj, kind: str) -> str:
    """The first sentence of an object's docstring (empty for data, whose docstring is its class's)."""
    if kind == "data":
        return ""
    doc = inspect.getdoc(obj) or ""
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ").strip()
    return first


#: a Python cross-reference role in a docstring's first sentence; shown as code in the tables, whose page
#: may not have the docstring's module as context
_PY_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|data|attr|mod|obj|exc|const):`~?([^`]+)`")


def _plain(sentence: str) -> str:
    return _PY_ROLE.sub(lambda match: f"``{match.group(1).split('<')[-1].rstrip('>')}``", sentence)


def _title(text: str) -> list:
    return [text, "=" * len(text), ""]


def _escape(name: str) -> str:
    return name.replace("_", r"\_")


def api_stubs(packages=None) -> dict:
    """``{relative path: reStructuredText}`` of every generated page (see the module docstring)."""
    homes = object_homes(packages)
    documented = {f"{module}.{name}" for module, entries in homes.items() for name, _ in entries}
    pages = {}
    for package, intro in API_PACKAGES.items():
        if packages is not None and package not in packages:
            continue
        modules = [package] + public_modules(package)
        lines = [f".. _api-{package}:", ""] + _title(f"API reference: ``{package}``") + [intro, ""]
        lines += ["One page per module (its docstring and a table of its objects) and one per public function, "
                  "class and constant.", "", ".. list-table::", "   :widths: 35 65", ""]
        for module_name in modules:
            doc = (inspect.getdoc(importlib.import_module(module_name)) or "").strip()
            first = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
            lines += [f"   * - :py:mod:`{module_name}`", f"     - {_plain(first)}" if first else "     -"]
        lines += ["", ".. toctree::", "   :hidden:", ""] + [f"   {m}" for m in modules] + [""]
        pages[f"index-{package}.rst"] = "\n".join(lines)
        for module_name in modules:
            module = importlib.import_module(module_name)
            entries = homes.get(module_name, [])
            lines = _title(f"``{module_name}``") + [f".. automodule:: {module_name}", "   :no-members:", ""]
            if entries:
                lines += [".. list-table::", "   :widths: 30 70", ""]
                for name, kind in entries:
                    role = {"function": "func", "class": "class", "exception": "exc"}.get(kind, "data")
                    summary = _summary(getattr(module, name), kind)
                    lines += [f"   * - :py:{role}:`~{module_name}.{name}`",
                              f"     - {_plain(summary)}" if summary else "     -"]
                lines += ["", ".. toctree::", "   :hidden:", ""]
                lines += [f"   {module_name}.{name}" for name, _ in entries] + [""]
            pages[f"{module_name}.rst"] = "\n".join(lines)
            for name, kind in entries:
                obj = getattr(module, name)
                original = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
                if kind != "data" and getattr(obj, "__name__", name) != name and original in documented:
                    # an alias (``reference_forward = reference.nonlinear_rms``): documented where it is defined
                    role = {"function": "func", "class": "class", "exception": "exc"}[kind]
                    lines = _title(_escape(f"{module_name}.{name}"))
                    lines += [f".. currentmodule:: {module_name}", "", f".. py:data:: {name}", "",
                              f"   Alias of :py:{role}:`{original}`.", ""]
                    pages[f"{module_name}.{name}.rst"] = "\n".join(lines)
                    continue
                directive = {"function": "autofunction", "class": "autoclass", "exception": "autoexception"}.get(
                    kind, "autodata")
                lines = _title(_escape(f"{module_name}.{name}"))
                lines += [f"*{kind}* in :py:mod:`{module_name}`", "", f".. currentmodule:: {module_name}", "",
                          f".. {directive}:: {name}", ""]
                pages[f"{module_name}.{name}.rst"] = "\n".join(lines)
    return pages


def has_api_section(srcdir) -> bool:
    """Whether the project in ``srcdir`` has an API section (``api/index``), which gets the stubs."""
    return any((Path(srcdir) / "api").glob("index.*"))


def write_api_stubs(app, config=None) -> None:
    """``config-inited``: write the stubs into ``docs/api/generated/``, only those that changed, and
    remove stale ones (an object that left the API). A project without an API section
    (no ``api/index``) gets no stubs: they would be pages outside every toctree.

    It runs before Sphinx lists the source files (a fresh environment lists them before
    ``builder-inited``): a stale stub removed later would still be read, and autodoc would fail
    to import the module it names."""
    if not has_api_section(app.srcdir):
        return
    out = Path(app.srcdir) / GENERATED
    out.mkdir(parents=True, exist_ok=True)
    pages = api_stubs()
    for relative, text in pages.items():
        path = out / relative
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # atomic: a concurrent build reads a whole page
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    for path in out.glob("*.rst"):
        if path.name not in pages:
            path.unlink(missing_ok=True)


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
    if module and klass:
        # a class documented at its home whose docstring names things of a module that re-exports it
        # (``TrainConfig`` of numerics.config, exported by numerics.train, cites :func:`train`)
        context = _locate(f"{module}.{klass}")
        candidates += [f"{exporter}.{target}" for exporter in _exporters().get(id(context), ())]
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


_EXPORTERS: dict = {}


def _exporters() -> dict:
    """``{id(object): [public modules whose __all__ exports it]}`` (computed once per build process)."""
    if not _EXPORTERS:
        for package in API_PACKAGES:
            for module_name in [package] + public_modules(package):
                module = importlib.import_module(module_name)
                for name in getattr(module, "__all__", ()):
                    if hasattr(module, name):
                        _EXPORTERS.setdefault(id(getattr(module, name)), []).append(module_name)
    return _EXPORTERS


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
    app.connect("config-inited", write_api_stubs)
    app.connect("autodoc-process-docstring", escape_absolute_value_bars, priority=100)
    # before numpydoc (priority 500) rewrites the lines
    app.connect("autodoc-process-docstring", drop_class_docstring_of_data, priority=100)
    app.connect("missing-reference", resolve_reexport)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
