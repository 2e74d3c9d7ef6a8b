"""How a run's results travel to the store: arrays as ``.npy`` bytes, a run's outcome as :class:`RunOutcome`."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any, Mapping


def encode_array(array: Any) -> bytes:
    """The bytes of a ``.npy`` file holding ``array``; object arrays are refused (no pickles).

    Examples
    --------
    >>> import numpy as np
    >>> decode_array(encode_array(np.arange(3.0))).tolist()
    [0.0, 1.0, 2.0]
    """
    import numpy as np

    buffer = io.BytesIO()
    try:
        np.save(buffer, np.asarray(array), allow_pickle=False)
    except ValueError as exc:
        raise TypeError(f"array results must be numeric arrays; got {type(array).__name__} ({exc})") from None
    return buffer.getvalue()


def decode_array(npy: bytes) -> Any:
    """The :class:`numpy.ndarray` stored by :func:`encode_array` (the bytes of a ``.npy`` file).

    Examples
    --------
    >>> decode_array(encode_array([[1, 2]])).shape
    (1, 2)
    """
    import numpy as np

    return np.load(io.BytesIO(npy), allow_pickle=False)


@dataclass(frozen=True)
class RunOutcome:
    """What one run produced, as handed from a worker to the store's writer.

    ``metrics`` are JSON scalars (``R_L``, ``A_L``, ``C_L`` of paper eqs. (12), (61)-(63),
    ``steps``, ``converged``, ...) and ``arrays`` ``.npy`` bytes (:func:`encode_array`), both
    empty when the runner raised (``ok`` False; ``error`` is ``"Type: message"``). Times are
    Unix times and the worker's monotonic seconds; ``host`` and ``pid`` name the worker.

    Examples
    --------
    >>> RunOutcome("abc", True, {"R_L": 1.0}, {}, None, None, 0.0, 1.0, 1.0, "host", 1).ok
    True
    """

    run_hash: str
    ok: bool
    metrics: Mapping[str, Any]
    arrays: Mapping[str, bytes]
    error: str | None
    traceback: str | None
    started_at: float
    finished_at: float
    wall_time: float
    host: str
    pid: int
