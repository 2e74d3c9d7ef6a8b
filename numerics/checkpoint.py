"""Checkpoint files of a training run (written by :func:`numerics.train.train`).

A checkpoint directory holds ``params.npz`` (weights), ``arrays.npz`` (loss
curves, per-layer and mode-wise errors), ``config.json`` and ``metrics.json``.
All files are staged completely (:func:`numerics.io.stage`) before any is moved
into place, ``metrics.json`` last with the SHA-256 of the other files, so a
checkpoint interrupted between two renames is detected on load instead of being
read as a mixture.

The intermediate checkpoints written during training (``"complete": false``)
also hold ``training_state.npz`` (:class:`TrainingState`: Adam's moments and
step, the state of the training-batch generator, the training losses so far),
which with the evaluation curve in ``arrays.npz`` is everything the training
loop needs to continue exactly where it was (``idepth train --resume``).
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .io import commit, discard, json_clean, sha256_file, stage
from .optim import AdamState

__all__ = [
    "CHECKPOINT_FORMAT",
    "CHECKPOINT_FILES",
    "what_a_checkpoint_is",
    "TRAINING_STATE_FILE",
    "TrainingState",
    "save_checkpoint",
    "read_checkpoint",
    "read_training_state",
    "checkpoint_status",
]

#: value of ``metrics.json["format"]``
CHECKPOINT_FORMAT = "idepth-checkpoint/1"
#: the file of an intermediate checkpoint that lets training continue (see :class:`TrainingState`)
TRAINING_STATE_FILE = "training_state.npz"
#: the files of every checkpoint, ``metrics.json`` (written last, with the others' SHA-256) at the end
CHECKPOINT_FILES = ("params.npz", "arrays.npz", "config.json", "metrics.json")


def what_a_checkpoint_is() -> str:
    """What a valid checkpoint is, in one clause (said by every error about a path that is not one).

    Examples
    --------
    >>> what_a_checkpoint_is()
    "a checkpoint is a directory written by 'idepth train --out DIR' holding params.npz, arrays.npz, config.json \
and metrics.json (format 'idepth-checkpoint/1')"
    """
    *others, last = CHECKPOINT_FILES
    return (f"a checkpoint is a directory written by 'idepth train --out DIR' holding {', '.join(others)} and {last} "
            f"(format {CHECKPOINT_FORMAT!r})")


def _not_a_checkpoint(path: Path, reason: str) -> ValueError:
    return ValueError(f"{str(path)!r} is not a valid checkpoint file ({reason}); {what_a_checkpoint_is()}")


def _read_json(path: Path) -> Any:
    """The JSON value of a checkpoint's file; a file that is empty or not JSON is refused, naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise _not_a_checkpoint(path, "not text") from None
    except ValueError as exc:
        raise _not_a_checkpoint(path, "empty" if not path.stat().st_size else f"not JSON: {exc}") from None


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a checkpoint's ``.npz`` file; one that numpy cannot read is refused, naming it."""
    import zipfile

    try:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    except (ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise _not_a_checkpoint(path, f"not a numpy .npz archive: {' '.join(str(exc).split())}") from None


@dataclass(frozen=True, eq=False)
class TrainingState:
    """What the training loop needs, besides the weights and the evaluation curve, to continue exactly.

    Attributes
    ----------
    steps : int
        Adam steps done.
    adam : numerics.optim.AdamState
        Moments and step count.
    rng_state : dict
        ``Generator.bit_generator.state`` of the training-batch generator, as
        it is before the next batch is drawn.
    train_loss : ndarray, shape (steps,)
        Training loss of every step done.
    elapsed, cpu_time : float
        Wall and CPU seconds spent so far (added up over resumptions).

    References
    ----------
    Training of paper eq. (12); Adam (Kingma & Ba 2015).

    Examples
    --------
    >>> state = TrainingState(1, AdamState({"w": np.ones(2)}, {"w": np.ones(2)}, 1),
    ...                       np.random.default_rng(0).bit_generator.state, np.array([0.5]), 0.1, 0.1)
    >>> TrainingState.from_arrays(state.to_arrays()).adam.m["w"].tolist()
    [1.0, 1.0]
    """

    steps: int
    adam: AdamState
    rng_state: Mapping[str, Any]
    train_loss: np.ndarray
    elapsed: float = 0.0
    cpu_time: float = 0.0

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Arrays for ``np.savez`` (moments as ``m/<name>``, ``v/<name>``; scalars as JSON text)."""
        meta = {"steps": int(self.steps), "adam_step": int(self.adam.step), "rng_state": self.rng_state,
                "elapsed": float(self.elapsed), "cpu_time": float(self.cpu_time)}
        arrays = {f"m/{k}": np.asarray(v) for k, v in self.adam.m.items()}
        arrays.update({f"v/{k}": np.asarray(v) for k, v in self.adam.v.items()})
        arrays["train_loss"] = np.asarray(self.train_loss, dtype=np.float64)
        arrays["meta"] = np.asarray(json.dumps(json_clean(meta), sort_keys=True))
        return arrays

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "TrainingState":
        """Inverse of :meth:`to_arrays`."""
        meta = json.loads(str(arrays["meta"]))
        m = {k[2:]: v for k, v in arrays.items() if k.startswith("m/")}
        v = {k[2:]: a for k, a in arrays.items() if k.startswith("v/")}
        return cls(steps=int(meta["steps"]), adam=AdamState(m=m, v=v, step=int(meta["adam_step"])),
                   rng_state=meta["rng_state"], train_loss=np.asarray(arrays["train_loss"]),
                   elapsed=float(meta["elapsed"]), cpu_time=float(meta["cpu_time"]))


def save_checkpoint(
    directory: str | os.PathLike,
    config: Any,
    params: Mapping[str, np.ndarray],
    metrics: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    training_state: TrainingState | None = None,
) -> Path:
    """Write ``params.npz``, ``arrays.npz``, ``config.json`` and ``metrics.json`` atomically.

    With ``training_state`` (intermediate checkpoints), also ``training_state.npz``;
    without it, a ``training_state.npz`` left by an earlier intermediate
    checkpoint is removed once the new checkpoint is in place.

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
    if training_state is not None:
        state_arrays = training_state.to_arrays()
        writers[TRAINING_STATE_FILE] = lambda fh: np.savez(fh, **state_arrays)
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
    if training_state is None:  # a stale state must not be mistaken for this checkpoint's
        try:
            os.unlink(directory / TRAINING_STATE_FILE)
        except FileNotFoundError:
            pass
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
        If the files do not belong together (an interrupted save), or one of
        them is empty, not JSON, not an ``.npz`` archive or (``metrics.json``)
        not of :data:`CHECKPOINT_FORMAT`: naming the file and saying what a
        checkpoint is (:func:`what_a_checkpoint_is`).

    Notes
    -----
    No example: it needs a checkpoint; see :meth:`numerics.train.TrainResult.save`.

    References
    ----------
    Training of paper eq. (12).
    """
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise NotADirectoryError(f"{str(directory)!r} is a file, not a checkpoint directory; {what_a_checkpoint_is()}")
    if not directory.is_dir():
        raise FileNotFoundError(f"checkpoint directory {str(directory)!r} does not exist")
    meta_path = directory / "metrics.json"
    if not meta_path.is_file():
        raise FileNotFoundError(f"{str(directory)!r} is not a checkpoint: metrics.json is missing; "
                                f"{what_a_checkpoint_is()}")
    meta = _read_json(meta_path)
    if not isinstance(meta, dict) or meta.get("format") != CHECKPOINT_FORMAT:
        raise _not_a_checkpoint(meta_path, f"not an {CHECKPOINT_FORMAT} file")
    if not isinstance(meta.get("files"), dict) or not isinstance(meta.get("metrics"), dict):
        raise _not_a_checkpoint(meta_path, "its 'files' or 'metrics' entry is missing")
    for name, digest in meta["files"].items():
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"checkpoint {str(directory)!r} is incomplete: {name} is missing")
        if sha256_file(path) != digest:
            raise ValueError(
                f"checkpoint {str(directory)!r} is inconsistent: {name} does not match metrics.json (interrupted save?)"
            )
    config = _read_json(directory / "config.json")
    params = _read_npz(directory / "params.npz")
    arrays = _read_npz(directory / "arrays.npz")
    metrics = {k: (math.nan if v is None else v) for k, v in meta["metrics"].items()}
    return config, params, metrics, arrays


def read_training_state(directory: str | os.PathLike) -> TrainingState | None:
    """The :class:`TrainingState` of an intermediate checkpoint (verified against ``metrics.json``), or None.

    None when the checkpoint has no training state (a finished run, or a
    checkpoint written before states were kept). Call :func:`read_checkpoint`
    first: it verifies every file, this one included.

    Notes
    -----
    No example: it needs a checkpoint; see :func:`numerics.train.train` (``resume=True``).

    References
    ----------
    Training of paper eq. (12).
    """
    directory = Path(directory)
    meta = json.loads((directory / "metrics.json").read_text(encoding="utf-8"))
    digest = meta.get("files", {}).get(TRAINING_STATE_FILE)
    if digest is None:
        return None
    path = directory / TRAINING_STATE_FILE
    if not path.is_file() or sha256_file(path) != digest:
        raise ValueError(f"checkpoint {str(directory)!r} is inconsistent: {TRAINING_STATE_FILE} does not match "
                         "metrics.json (interrupted save?)")
    with np.load(path) as data:
        return TrainingState.from_arrays({k: data[k] for k in data.files})


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
