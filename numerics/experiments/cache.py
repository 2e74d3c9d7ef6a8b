"""The one on-disk cache of the experiments layer: Monte-Carlo bounds, linear floors, frozen-head fits.

A value is a JSON file ``CACHE_DIR/<kind>-<digest>.json`` (digest: SHA-256 of the canonical JSON
of kind, key and package version), one per entry, written atomically (:func:`numerics.io.write_json`),
so concurrent writers lose nothing. The stored key is compared on read (a collision or a damaged
file is recomputed); ``recompute=True`` overwrites. :func:`cached_many` computes the missing values
of many keys, optionally in the sweep's local worker processes.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from numerics.io import json_clean, write_json

__all__ = ["cache_file", "cached", "cached_many", "read_cached"]


def _canonical(kind: str, key: dict) -> str:
    from theory import __version__

    return json.dumps({"kind": kind, "key": json_clean(key), "package_version": __version__}, sort_keys=True)


def cache_file(cache_dir: str | os.PathLike, kind: str, key: dict) -> Path:
    """The file that holds the value of ``(kind, key)`` under ``cache_dir``.

    Examples
    --------
    >>> cache_file("/tmp/c", "oracle-bound", {"d": 4}).name.startswith("oracle-bound-")
    True
    """
    digest = hashlib.sha256(_canonical(kind, key).encode("utf-8")).hexdigest()[:20]
    return Path(cache_dir) / f"{kind}-{digest}.json"


def read_cached(cache_dir: str | os.PathLike | None, kind: str, key: dict) -> Any:
    """The stored value of ``(kind, key)``, or ``None`` if there is none (or it is damaged).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     read_cached(tmp, "demo", {"x": 1}) is None
    True
    """
    if cache_dir is None:
        return None
    path = cache_file(cache_dir, kind, key)
    if not path.is_file():
        return None
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None  # a damaged entry is recomputed
    if not isinstance(stored, dict) or stored.get("key") != json_clean(key) or "value" not in stored:
        return None
    return stored["value"]


def _save(cache_dir: str | os.PathLike | None, kind: str, key: dict, value: Any) -> Any:
    """``value`` made JSON-able, and stored for ``(kind, key)`` when there is a cache."""
    from theory import __version__

    value = json_clean(value)
    if cache_dir is not None:
        path = cache_file(cache_dir, kind, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json(path, {"kind": kind, "key": key, "package_version": __version__, "value": value})
    return value


def cached(cache_dir: str | os.PathLike | None, kind: str, key: dict, compute: Callable[[], Any], *,
           recompute: bool = False) -> Any:
    """``compute()`` for ``(kind, key)``, read from ``cache_dir`` when it is there (``None``: no cache).

    The value must be JSON-able (non-finite floats are stored as ``null``).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     first = cached(tmp, "demo", {"x": 1}, lambda: {"value": 2.0})
    ...     again = cached(tmp, "demo", {"x": 1}, lambda: {"value": -1.0})
    ...     fresh = cached(tmp, "demo", {"x": 1}, lambda: {"value": -1.0}, recompute=True)
    >>> first == again == {"value": 2.0}, fresh
    (True, {'value': -1.0})
    """
    if not recompute:
        value = read_cached(cache_dir, kind, key)
        if value is not None:
            return value
    return _save(cache_dir, kind, key, compute())


def cached_many(cache_dir: str | os.PathLike | None, kind: str, keys: Sequence[dict], compute: Callable[[dict], Any],
                *, workers: int = 1, progress: bool | None = False, desc: str | None = None,
                recompute: bool = False) -> list[Any]:
    """``[compute(key) for key in keys]``, computing only what ``cache_dir`` lacks, in ``workers`` processes.

    ``compute`` must be a module-level function when ``workers > 1`` (it is sent to
    :func:`numerics.experiments.sweep.local_pool` workers). Each value is stored as it arrives.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     cached_many(tmp, "demo", [{"x": 1}, {"x": 2}, {"x": 1}], lambda key: {"y": 10 * key["x"]})
    [{'y': 10}, {'y': 20}, {'y': 10}]
    """
    from numerics.progress import progress_bar

    values: dict[str, Any] = {}
    todo: dict[str, dict] = {}
    for key in keys:
        ident = _canonical(kind, key)
        if ident in values or ident in todo:
            continue
        stored = None if recompute else read_cached(cache_dir, kind, key)
        if stored is not None:
            values[ident] = stored
        else:
            todo[ident] = key
    if todo:
        bar = progress_bar(len(todo), enabled=progress, desc=desc or kind, unit="value")
        try:
            def keep(ident: str, value: Any) -> None:
                values[ident] = _save(cache_dir, kind, todo[ident], value)
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
    return [values[_canonical(kind, key)] for key in keys]
