"""The certified page's Monte-Carlo predictions, cached on disk (``docs/results/certified/predictions/``).

``theory.predict_loss`` (B_L) and the population losses of the study's heads take minutes per setting;
the page needs them at every regeneration. Each result is stored as ``<key>.json``, the key a hash of
its inputs and of the source of the theory that computes it (``theory/predict.py``,
``theory/softmax_bounds.py``, ``theory/expressible.py``) and of the plan's head allocation: a changed
input or formula gives a new key, so a stale entry is never read (it is recomputed and written,
atomically, beside the old one).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from pathlib import Path

from numerics.io import write_json

__all__ = ["SOURCES", "cache_key", "cached"]

#: the theory modules whose source is part of every key
SOURCES = ("predict.py", "softmax_bounds.py", "expressible.py")


def _source_digest() -> str:
    """A hash of the source the cached values are computed by."""
    import theory

    from .run import oracle_allocation

    root = Path(theory.__file__).parent
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((root / name).read_bytes())
    digest.update(inspect.getsource(oracle_allocation).encode())
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
    ``'computed'`` entries, for the progress lines. The file is written atomically.

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
