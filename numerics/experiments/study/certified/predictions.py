"""The certified page's Monte-Carlo predictions, cached on disk (``docs/results/certified/predictions/``).

``theory.predict_loss`` (B_L) and the population losses of the study's heads take minutes per setting;
the page needs them at every regeneration. Each result is stored as ``<key>.json``, the key a hash of
its inputs and of the code of the theory that computes it (``theory/predict.py``,
``theory/softmax_bounds.py``, ``theory/expressible.py``) and of the plan's head allocation
(:func:`code_digest`: docstrings and comments left out, so editing them recomputes nothing): a changed
input or formula gives a new key, so a stale entry is never read (it is recomputed and written,
atomically, beside the old one; the page, written with its predictions, removes the entries it did not use).
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import textwrap
from pathlib import Path

from numerics.io import write_json

__all__ = ["SOURCES", "cache_key", "cached", "code_digest"]

#: the theory modules whose source is part of every key
SOURCES = ("predict.py", "softmax_bounds.py", "expressible.py")


def _source_digest() -> str:
    """A hash of the source the cached values are computed by."""
    import theory

    from .run import oracle_allocation

    root = Path(theory.__file__).parent
    return code_digest(*[(root / name).read_text(encoding="utf-8") for name in SOURCES],
                       inspect.getsource(oracle_allocation))


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


def cache_key(kind: str, inputs: dict) -> str:
    """The file stem of a cached value: its kind and a hash of ``inputs`` and of :data:`SOURCES`.

    Examples
    --------
    >>> a = cache_key("heads", {"setting": [0.0, 0.0, 2, 16, 32, 64], "depths": [1, 2]})
    >>> a.startswith("heads-"), a == cache_key("heads", {"depths": [1, 2], "setting": [0.0, 0.0, 2, 16, 32, 64]})
    (True, True)
    >>> a == cache_key("heads", {"setting": [0.0, 0.0, 2, 16, 32, 64], "depths": [1, 2, 4]})
    False
    """
    payload = json.dumps({"kind": kind, "inputs": inputs, "source": _source_digest()}, sort_keys=True,
                         separators=(",", ":"))
    return f"{kind}-{hashlib.sha256(payload.encode()).hexdigest()[:24]}"


def cached(cache_dir, kind: str, inputs: dict, compute, *, counts: dict | None = None) -> dict:
    """``compute()`` (a JSON-able dict), read from ``cache_dir/<key>.json`` when there, else computed and written.

    ``cache_dir`` None: always computed, nothing written. ``counts`` (optional) counts ``'cached'`` and
    ``'computed'`` entries, for the progress lines, and collects the file names it read or wrote in
    ``'used'`` (what the page keeps). The file is written atomically.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = cached(tmp, "x", {"n": 1}, lambda: {"value": 2.0})
    ...     again = cached(tmp, "x", {"n": 1}, lambda: {"value": 3.0})  # read back, not recomputed
    >>> first, again
    ({'value': 2.0}, {'value': 2.0})
    """
    if cache_dir is None:
        return compute()
    path = Path(cache_dir) / f"{cache_key(kind, inputs)}.json"
    if counts is not None:
        counts.setdefault("used", set()).add(path.name)
    if path.is_file():
        try:
            value = json.loads(path.read_text())["value"]
            if counts is not None:
                counts["cached"] = counts.get("cached", 0) + 1
            return value
        except (OSError, ValueError, KeyError):
            pass  # an unreadable entry is recomputed and replaced
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"kind": kind, "inputs": inputs, "value": value})
    if counts is not None:
        counts["computed"] = counts.get("computed", 0) + 1
    return value
