"""Checkpoint files of a training run (written by :func:`numerics.train.train`).

A checkpoint directory holds ``params.npz`` (weights), ``arrays.npz`` (loss
curves, per-layer and mode-wise errors), ``config.json`` and ``metrics.json``.
All files are staged completely (:func:`numerics.io.stage`) before any is moved
into place, ``metrics.json`` last with the SHA-256 of the other three, so a
checkpoint interrupted between two renames is detected on load instead of being
read as a mixture.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .io import commit, discard, json_clean, sha256_file, stage

__all__ = ["CHECKPOINT_FORMAT", "save_checkpoint", "read_checkpoint", "checkpoint_status"]

#: value of ``metrics.json["format"]``
CHECKPOINT_FORMAT = "idepth-checkpoint/1"


def save_checkpoint(
    directory: str | os.PathLike,
    config: Any,
    params: Mapping[str, np.ndarray],
    metrics: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
) -> Path:
    """Write ``params.npz``, ``arrays.npz``, ``config.json`` and ``metrics.json`` atomically.

    All four files are first staged completely (temporary files in the same
    directory, fsynced); only then are they moved into place with
    :func:`os.replace`, ``metrics.json`` last. A failure or Ctrl-C while
    staging leaves the previous checkpoint untouched and no temporary file
    behind. ``metrics.json`` holds the SHA-256 of the other three files, so
    the one remaining window (between two renames) yields a checkpoint that
    :func:`read_checkpoint` refuses rather than a silent mixture. Non-finite metrics are stored as JSON
    ``null`` (read back as NaN).

    Notes
    -----
    No example: it needs a trained model or a checkpoint; see :meth:`numerics.train.TrainResult.save`.

    References
    ----------
    Training of paper eq. (12).
    """
    from theory import __version__

    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"checkpoint path {str(directory)!r} is a file, not a directory")
    directory.mkdir(parents=True, exist_ok=True)
    config_text = json.dumps(config.to_dict(), sort_keys=True, indent=2, allow_nan=False).encode("utf-8")
    writers = {
        "params.npz": lambda fh: np.savez(fh, **dict(params)),
        "arrays.npz": lambda fh: np.savez(fh, **dict(arrays)),
        "config.json": lambda fh: fh.write(config_text),
    }
    staged: list[tuple[str, Path]] = []
    try:
        # stage every file completely before touching the previous checkpoint
        digests = {}
        for name, write in writers.items():
            tmp_name, digests[name] = stage(directory / name, write)
            staged.append((tmp_name, directory / name))
        meta = {
            "format": CHECKPOINT_FORMAT,
            "package_version": __version__,
            "content_hash": config.content_hash(),
            "files": digests,
            "metrics": {k: json_clean(v) for k, v in metrics.items()},
        }
        meta_text = json.dumps(meta, indent=2, allow_nan=False).encode("utf-8")
        tmp_name, _ = stage(directory / "metrics.json", lambda fh: fh.write(meta_text))
        staged.append((tmp_name, directory / "metrics.json"))
    except BaseException:
        discard(staged)
        raise
    commit(staged)  # metrics.json (with the others' hashes) replaced last
    return directory


def read_checkpoint(directory: str | os.PathLike) -> tuple[dict, dict, dict, dict]:
    """Read a checkpoint written by :func:`save_checkpoint`, checking it is complete and consistent.

    Returns ``(config_dict, params, metrics, arrays)``; non-finite metrics stored
    as ``null`` come back as NaN.

    Raises
    ------
    FileNotFoundError
        If the directory or one of its files is missing.
    ValueError
        If the files do not belong together (an interrupted save) or
        ``metrics.json`` is not a checkpoint file.

    Notes
    -----
    No example: it needs a checkpoint; see :meth:`numerics.train.TrainResult.save`.

    References
    ----------
    Training of paper eq. (12).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(directory)!r} does not exist")
    meta_path = directory / "metrics.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"{str(directory)!r} is not a checkpoint: metrics.json is missing")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{str(meta_path)!r} is not an {CHECKPOINT_FORMAT} file")
    for name, digest in meta["files"].items():
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint {str(directory)!r} is incomplete: {name} is missing")
        if sha256_file(path) != digest:
            raise ValueError(
                f"checkpoint {str(directory)!r} is inconsistent: {name} does not match metrics.json (interrupted save?)"
            )
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    with np.load(directory / "params.npz") as data:
        params = {k: data[k] for k in data.files}
    with np.load(directory / "arrays.npz") as data:
        arrays = {k: data[k] for k in data.files}
    metrics = {k: (math.nan if v is None else v) for k, v in meta["metrics"].items()}
    return config, params, metrics, arrays


def checkpoint_status(directory: str | os.PathLike) -> dict[str, Any] | None:
    """The ``metrics`` of ``DIR/metrics.json`` without verifying the other files, or ``None`` if there is none.

    Enough to tell a finished run (``complete`` true) from one interrupted
    during training.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     checkpoint_status(tmp) is None
    True
    """
    path = Path(directory) / "metrics.json"
    if not path.is_file():
        return None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        return None
    return dict(meta.get("metrics", {}))
