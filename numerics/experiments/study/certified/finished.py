"""The finished candidates of a cell still training, kept on disk so an interrupted cell does not retrain them.

A cell's candidates train in lockstep (:func:`numerics.lockstep.train_lockstep`); the short caps finish long
before the doubled and long ones. Each candidate that finishes is written at once to
``<store>/candidates/<cell hash>/<index>.npz`` (atomically: the file is complete or absent), holding what
:func:`~numerics.experiments.study.run.run_cell` keeps of it: its weights and its selection-set loss
curve, or the step at which it diverged. When the cell runs again after an interrupt, those candidates are
read back and only the others train. That is exact: a candidate trained in lockstep is bitwise the
candidate trained alone (:func:`~numerics.lockstep.train_lockstep`), so the cell's result does not depend
on where it was interrupted. The directory of a cell goes once the store holds the cell
(:func:`forget_finished`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from numerics.io import atomic_path
from numerics.train import TrainingDiverged

__all__ = ["FinishedCandidate", "CANDIDATES_DIR", "candidates_dir", "save_finished", "load_finished", "forget_finished"]

#: the directory of a store that holds the finished candidates of its unfinished cells
CANDIDATES_DIR = "candidates"
_PARAM = "param_"
_CURVE = "loss_curve"
_DIVERGED = "diverged_at"


@dataclass(frozen=True, eq=False)
class FinishedCandidate:
    """A trained candidate read back from disk: what :func:`~numerics.experiments.study.run.run_cell`
    uses of a :class:`~numerics.train.TrainResult` (``params`` and ``arrays["loss_curve"]``).

    Examples
    --------
    >>> FinishedCandidate({"W": np.zeros(2)}, {"loss_curve": np.ones(3)}).arrays["loss_curve"].shape
    (3,)
    """

    params: dict
    arrays: dict = field(default_factory=dict)


def candidates_dir(store_dir, cell_hash: str) -> Path:
    """Where the finished candidates of the cell ``cell_hash`` of the store ``store_dir`` are kept.

    Examples
    --------
    >>> candidates_dir("store", "ab12").as_posix()
    'store/candidates/ab12'
    """
    return Path(store_dir) / CANDIDATES_DIR / cell_hash


def save_finished(directory, index: int, result) -> Path:
    """Write candidate ``index``'s ``result`` (a TrainResult or the TrainingDiverged that stopped it).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = save_finished(tmp, 3, FinishedCandidate({"W": np.eye(2)}, {"loss_curve": np.ones(4)}))
    ...     load_finished(tmp)[3].params["W"].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if isinstance(result, TrainingDiverged):
        arrays = {_DIVERGED: np.asarray([result.step, -1 if result.last_good_step is None else result.last_good_step])}
    else:
        arrays = {f"{_PARAM}{name}": np.asarray(value) for name, value in result.params.items()}
        arrays[_CURVE] = np.asarray(result.arrays["loss_curve"], dtype=np.float64)
    path = directory / f"{int(index)}.npz"
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def load_finished(directory) -> dict:
    """``{index: FinishedCandidate or TrainingDiverged}`` of the candidates saved in ``directory`` ({} if none).

    Examples
    --------
    >>> load_finished("/nonexistent")
    {}
    """
    directory = Path(directory)
    out: dict = {}
    if not directory.is_dir():
        return out
    for path in sorted(directory.glob("*.npz")):
        if not path.stem.isdigit():
            continue
        with np.load(path) as data:
            if _DIVERGED in data.files:
                step, last_good = (int(v) for v in data[_DIVERGED])
                out[int(path.stem)] = TrainingDiverged(step, None if last_good < 0 else last_good, None)
            else:
                params = {name[len(_PARAM):]: data[name] for name in data.files if name.startswith(_PARAM)}
                out[int(path.stem)] = FinishedCandidate(params, {_CURVE: data[_CURVE]})
    return out


def forget_finished(store_dir, cell_hashes) -> None:
    """Remove the finished candidates of the cells ``cell_hashes`` (the store holds them now).

    Examples
    --------
    >>> forget_finished("/nonexistent", ["ab12"])
    """
    for cell_hash in cell_hashes:
        shutil.rmtree(candidates_dir(store_dir, cell_hash), ignore_errors=True)
