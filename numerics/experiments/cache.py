"""The one on-disk cache of the experiments layer: Monte-Carlo bounds, floors, predictions, decompositions.

A value is a JSON file ``CACHE_DIR/<kind>-<digest>.json``, one per entry, written atomically
(:func:`numerics.io.write_json`), so concurrent writers lose nothing. The digest is a SHA-256 of the canonical
JSON of the value's kind, its key (the inputs) and ``code``: a digest of the code that computes it, which the
caller hands in (:func:`function_digest` of the functions that compute the value; it follows the package's
functions, classes and constants they reach by name). So an edited error message elsewhere in a module keeps
every key, and any change to the computing code gives new keys: a stale entry is never read. Docstrings and
comments are left out of the digest (:func:`code_digest`). The stored key is compared on read (a collision or a
damaged file is recomputed); ``recompute=True`` overwrites. :func:`cached_many` computes the missing values of
many keys, optionally in the sweep's local worker processes.
"""

from __future__ import annotations

import ast
import builtins
import concurrent.futures as cf
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable, Sequence

from numerics.io import json_clean, write_json

__all__ = ["cache_file", "cached", "cached_many", "code_digest", "function_digest", "read_cached"]

#: the packages whose code a digest follows (the rest -- numpy, scipy, the standard library -- is taken as fixed)
PACKAGES = ("theory", "numerics")


def code_digest(*sources: str) -> str:
    r"""A hash of the code of Python ``sources`` (a module's or a function's text), docstrings and comments left out.

    What computes a cached value is its code: a reworded docstring or comment keeps every key (and
    recomputes nothing); any change to the code, a constant included, gives new keys.

    Examples
    --------
    >>> code_digest("def f(x):\n    'Twice x.'\n    return 2 * x  # doubled\n") == code_digest(
    ...     "def f(x):\n    'Two times x (reworded).'\n    return 2 * x\n")
    True
    >>> code_digest("def f(x):\n    return 2 * x\n") == code_digest("def f(x):\n    return 3 * x\n")
    False
    """
    digest = hashlib.sha256()
    for source in sources:
        tree = ast.parse(textwrap.dedent(source))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]  # the docstring (comments never reach the tree)
        digest.update(ast.dump(tree).encode())
    return digest.hexdigest()


def _ours(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in PACKAGES


def _namespace(obj, tree: ast.AST) -> dict:
    """The names ``obj``'s code can reach: its module's globals, its closure, and the imports inside its body."""
    func = inspect.unwrap(obj) if callable(obj) else obj
    names = dict(vars(importlib.import_module(func.__module__)))
    code = getattr(func, "__code__", None)
    if code is not None and func.__closure__:  # only the closure's functions and classes: its values are inputs
        names.update({n: c.cell_contents for n, c in zip(code.co_freevars, func.__closure__)
                      if inspect.isfunction(c.cell_contents) or inspect.isclass(c.cell_contents)})
    package = sys.modules[func.__module__].__package__
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            module = importlib.import_module(base)
            for alias in node.names:
                value = getattr(module, alias.name, None)
                names[alias.asname or alias.name] = (importlib.import_module(f"{base}.{alias.name}")
                                                     if value is None else value)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                names[alias.asname or top] = importlib.import_module(alias.name if alias.asname else top)
    return names


def _reached(value, attributes: list[str]):
    """What ``value.a.b...`` names, following the attribute chain while it stays in a module."""
    for name in attributes:
        if not inspect.ismodule(value) or not hasattr(value, name):
            break
        value = getattr(value, name)
    return value


def _stable_repr(value) -> str:
    """``repr`` with the elements of sets sorted (a set's order changes with the process's hash seed)."""
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_stable_repr(v) for v in value)) + "}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_stable_repr(v) for v in value) + ")"
    return repr(value)


def _without_annotations(tree: ast.AST) -> ast.AST:
    """``tree`` without its type annotations: they name types, they compute nothing."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            node.annotation = None
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
        elif isinstance(node, ast.AnnAssign):
            node.annotation = ast.Constant(None)
    return tree


def _chains(tree: ast.AST):
    """Every ``name`` and ``name.attr.attr`` read in ``tree``, as (name, [attr, ...])."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [], node
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name):
                yield inner.id, chain[::-1]
        elif isinstance(node, ast.Name):
            yield node.id, []


@functools.lru_cache(maxsize=256)
def function_digest(*functions) -> str:
    """A hash of the code of ``functions`` and of all the package code they reach by name.

    It follows every function, class and module-level constant of ``theory`` and ``numerics`` that the
    functions' code names (through their module's globals, their closures, imports inside their bodies and
    ``module.attribute`` chains), recursively; docstrings and comments are left out (:func:`code_digest`).
    Code reached only through an object's attributes at run time (``self.f()``, a registry lookup) is not
    seen: hand such functions in as well.

    Examples
    --------
    >>> from numerics.experiments import criteria
    >>> function_digest(criteria.exceeds) == function_digest(criteria.exceeds)
    True
    >>> function_digest(criteria.exceeds) == function_digest(criteria.at_most)
    False
    """
    seen: dict[int, str] = {}
    constants: dict[str, str] = {}
    todo = list(functions)
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        try:
            source = textwrap.dedent(inspect.getsource(obj))
        except (OSError, TypeError) as error:
            raise ValueError(f"function_digest: no source for {obj!r} ({error})") from None
        tree = _without_annotations(ast.parse(source))
        # the code, not where it lives: moving a function to another module keeps its values' keys
        seen[id(obj)] = code_digest(source)
        names = _namespace(obj, tree)
        for name, chain in _chains(tree):
            if name not in names or hasattr(builtins, name) and names[name] is getattr(builtins, name):
                continue
            value = _reached(names[name], chain)
            if (inspect.isfunction(value) or inspect.isclass(value)) and _ours(value):
                todo.append(value)
            elif isinstance(value, (int, float, str, bytes, tuple, frozenset)) and not inspect.ismodule(names[name]):
                module = getattr(inspect.unwrap(obj) if callable(obj) else obj, "__module__", "")
                if module.split(".")[0] in PACKAGES:
                    constants[f"{module}.{name}"] = _stable_repr(value)
    return hashlib.sha256(json.dumps([sorted(seen.values()), constants], sort_keys=True).encode()).hexdigest()


def _canonical(kind: str, key: dict, code: str) -> str:
    return json.dumps({"kind": kind, "key": json_clean(key), "code": code}, sort_keys=True)


def cache_file(cache_dir: str | os.PathLike, kind: str, key: dict, code: str) -> Path:
    """The file that holds the value of ``(kind, key)`` computed by ``code`` (a :func:`function_digest`).

    Examples
    --------
    >>> cache_file("/tmp/c", "oracle-bound", {"d": 4}, "abc").name.startswith("oracle-bound-")
    True
    >>> cache_file("/tmp/c", "oracle-bound", {"d": 4}, "abc") != cache_file("/tmp/c", "oracle-bound", {"d": 4}, "abd")
    True
    """
    digest = hashlib.sha256(_canonical(kind, key, code).encode("utf-8")).hexdigest()[:24]
    return Path(cache_dir) / f"{kind}-{digest}.json"


def read_cached(cache_dir: str | os.PathLike | None, kind: str, key: dict, code: str) -> Any:
    """The stored value of ``(kind, key, code)``, or ``None`` if there is none (or it is damaged).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     read_cached(tmp, "demo", {"x": 1}, "code") is None
    True
    """
    if cache_dir is None:
        return None
    path = cache_file(cache_dir, kind, key, code)
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, or damaged: recomputed
    if (not isinstance(stored, dict) or stored.get("key") != json_clean(key) or stored.get("code") != code
            or "value" not in stored):
        return None
    return stored["value"]


def _save(cache_dir: str | os.PathLike | None, kind: str, key: dict, code: str, value: Any) -> Any:
    """``value`` made JSON-able, and stored for ``(kind, key, code)`` when there is a cache."""
    value = json_clean(value)
    if cache_dir is not None:
        path = cache_file(cache_dir, kind, key, code)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"kind": kind, "key": json_clean(key), "code": code, "value": value})
    return value


def _count(counts: dict | None, what: str, path: Path | None = None) -> None:
    if counts is not None:
        counts[what] = counts.get(what, 0) + 1
        if path is not None:
            counts.setdefault("used", set()).add(path.name)


def cached(cache_dir: str | os.PathLike | None, kind: str, key: dict, compute: Callable[[], Any], *, code: str,
           recompute: bool = False, counts: dict | None = None) -> Any:
    """``compute()`` for ``(kind, key)``, read from ``cache_dir`` when it is there (``None``: no cache).

    ``code``: the digest of the code that computes the value (:func:`function_digest`). The value must be
    JSON-able (non-finite floats are stored as ``null``). ``counts`` (optional) counts ``'cached'`` and
    ``'computed'`` entries and collects the file names read or written in ``'used'`` (what a page keeps).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = cached(tmp, "demo", {"x": 1}, lambda: {"value": 2.0}, code="v1")
    ...     again = cached(tmp, "demo", {"x": 1}, lambda: {"value": -1.0}, code="v1")
    ...     fresh = cached(tmp, "demo", {"x": 1}, lambda: {"value": -1.0}, code="v1", recompute=True)
    ...     other = cached(tmp, "demo", {"x": 1}, lambda: {"value": 5.0}, code="v2")  # other code: a new entry
    >>> first == again == {"value": 2.0}, fresh, other
    (True, {'value': -1.0}, {'value': 5.0})
    """
    return cached_many(cache_dir, kind, [key], lambda _: compute(), code=code, recompute=recompute, counts=counts)[0]


def cached_many(cache_dir: str | os.PathLike | None, kind: str, keys: Sequence[dict], compute: Callable[[dict], Any],
                *, code: str | None = None, workers: int = 1, progress: bool | None = False, desc: str | None = None,
                recompute: bool = False, counts: dict | None = None) -> list[Any]:
    """``[compute(key) for key in keys]``, computing only what ``cache_dir`` lacks, in ``workers`` processes.

    ``code``: the digest of the computing code (default :func:`function_digest` of ``compute``). ``compute``
    must be a module-level function when ``workers > 1`` (it is sent to
    :func:`numerics.experiments.sweep.local_pool` workers). Each value is stored as it arrives. ``counts``: as
    :func:`cached`'s.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     cached_many(tmp, "demo", [{"x": 1}, {"x": 2}, {"x": 1}], lambda key: {"y": 10 * key["x"]}, code="v1")
    [{'y': 10}, {'y': 20}, {'y': 10}]
    """
    from numerics.progress import progress_bar

    code = function_digest(compute) if code is None else code
    values: dict[str, Any] = {}
    todo: dict[str, dict] = {}
    for key in keys:
        ident = _canonical(kind, key, code)
        if ident in values or ident in todo:
            continue
        stored = None if recompute else read_cached(cache_dir, kind, key, code)
        if stored is not None:
            values[ident] = stored
            _count(counts, "cached", None if cache_dir is None else cache_file(cache_dir, kind, key, code))
        else:
            todo[ident] = key
    if todo:
        bar = progress_bar(len(todo), enabled=progress, desc=desc or kind, unit="value")
        try:
            def keep(ident: str, value: Any) -> None:
                key = todo[ident]
                values[ident] = _save(cache_dir, kind, key, code, value)
                _count(counts, "computed", None if cache_dir is None else cache_file(cache_dir, kind, key, code))
                bar.update(1)

            if workers > 1 and len(todo) > 1:
                from .sweep._backends import BLAS_THREAD_VARIABLES, local_pool, preserved_environment

                with (preserved_environment(BLAS_THREAD_VARIABLES),
                      local_pool(min(workers, len(todo))) as pool):
                    futures = {pool.submit(compute, key): ident for ident, key in todo.items()}
                    for future in cf.as_completed(futures):
                        keep(futures[future], future.result())
            else:
                for ident, key in todo.items():
                    keep(ident, compute(key))
        finally:
            bar.close()
    return [values[_canonical(kind, key, code)] for key in keys]
