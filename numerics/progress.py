"""Progress of long jobs: a tqdm bar on a terminal, one-line records otherwise.

A job run with its output redirected (``idepth reproduce --scale quick > log 2>&1``,
a batch queue, CI) cannot show a bar; :class:`ProgressLog` writes instead one
line such as ``sweep: 12/145 runs (8 %), 2m10s elapsed, ETA 24m, failed=0`` at
the start, at least every ``interval`` seconds (a daemon thread makes sure of
it even while nothing finishes), and at the end. :func:`progress_bar` picks one
or the other: a bar when the stream is a terminal, records when it is not,
nothing when progress is switched off.

Items of unequal cost (training runs of a sweep: a deep run costs a hundred shallow
ones) take their estimated costs (``costs=``, one per item, e.g. the reproduction
plan's cost model, :func:`numerics.experiments.reproduce.plan.estimate_run_seconds`;
``update(1, cost=c)`` as each finishes): the ETA is then the elapsed time scaled by
the estimated cost still to do over the cost done since the start, and the
percentage is of the estimated work, so the last, long runs are not hidden behind a
count of runs.

Both offer the subset of tqdm's interface the package uses: ``update(n)``,
``set_postfix(**values)``, ``close()``, ``n`` and use as a context manager.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, TextIO

__all__ = ["RECORD_INTERVAL", "NO_VALUE", "ProgressLog", "progress_bar", "format_duration", "format_value"]

#: seconds between two progress records when the output is not a terminal (no silent stretch over 10 s)
RECORD_INTERVAL = 10.0


#: shown for a value that does not exist yet (the training loss at the evaluation before the first step)
NO_VALUE = "–"


def format_value(value: float | None, spec: str = ".4g") -> str:
    """``value`` in the format ``spec``, or :data:`NO_VALUE` while there is none (None or NaN), never ``nan``.

    References
    ----------
    The losses of paper eq. (12), as a progress bar shows them.

    Examples
    --------
    >>> format_value(0.123456), format_value(float("nan")), format_value(None)
    ('0.1235', '–', '–')
    """
    if value is None or value != value:  # NaN is the only value unequal to itself
        return NO_VALUE
    return format(value, spec)


def format_duration(seconds: float) -> str:
    """A short human duration: ``42s``, ``3m05s``, ``2h07m``.

    Examples
    --------
    >>> format_duration(42.4), format_duration(185), format_duration(7620)
    ('42s', '3m05s', '2h07m')
    """
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        minutes, rest = divmod(int(round(seconds)), 60)
        return f"{minutes}m{rest:02d}s"
    hours, rest = divmod(int(round(seconds)) // 60, 60)
    return f"{hours}h{rest:02d}m"


class ProgressLog:
    """One-line progress records (done/total, elapsed, ETA) at least every ``interval`` seconds.

    Parameters
    ----------
    total : int
        Number of items of the job.
    initial : int
        Items already done before this call (e.g. runs reused from a store);
        the ETA is extrapolated from the items done since the start only.
    desc, unit : str
        Shown as ``desc: n/total units``.
    interval : float
        Largest gap between two records (default :data:`RECORD_INTERVAL`).
    stream : file, optional
        Where records go (default: ``sys.stderr`` at the time of writing).
    clock : callable
        Monotonic time in seconds (a fake one in tests).
    heartbeat : bool
        Start a daemon thread that writes a record when ``interval`` has
        passed without one (so a record appears while an item takes long).
    total_cost : float, optional
        The estimated cost of all ``total`` items (any unit: seconds of the cost model).
        Given, the ETA and the percentage weigh the items by cost: :meth:`update` takes
        each finished item's ``cost``.
    initial_cost : float
        The cost of the ``initial`` items (with ``total_cost``).

    Examples
    --------
    >>> import io
    >>> now = [0.0]
    >>> out = io.StringIO()
    >>> log = ProgressLog(4, desc="sweep", unit="run", interval=30, stream=out, clock=lambda: now[0], heartbeat=False)
    >>> now[0] = 10.0; log.update(1)           # within the interval: no record
    >>> now[0] = 31.0; log.update(1)           # 31 s since the last record
    >>> now[0] = 40.0; log.update(2); log.close()
    >>> print(out.getvalue(), end="")
    sweep: 0/4 runs (0 %), 0s elapsed, ETA unknown
    sweep: 2/4 runs (50 %), 31s elapsed, ETA 31s
    sweep: 4/4 runs (100 %), 40s elapsed, finished

    Weighted by cost: a cheap run done in 10 s of a job whose other run costs nine times more

    >>> now[0] = 0.0; out = io.StringIO()
    >>> log = ProgressLog(2, desc="sweep", unit="run", interval=1, stream=out, clock=lambda: now[0],
    ...                   heartbeat=False, total_cost=10.0)
    >>> now[0] = 10.0; log.update(1, cost=1.0)
    >>> out.getvalue().splitlines()[-1]
    'sweep: 1/2 runs (10 % of the estimated work), 10s elapsed, ETA 1m30s'
    """

    def __init__(self, total: int, initial: int = 0, *, desc: str = "progress", unit: str = "item",
                 interval: float = RECORD_INTERVAL, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic, heartbeat: bool = True,
                 total_cost: float | None = None, initial_cost: float = 0.0):
        if not interval > 0:
            raise ValueError(f"interval must be a number of seconds > 0; got {interval!r}")
        if total_cost is not None and not (float(total_cost) >= 0 and 0 <= float(initial_cost) <= float(total_cost)):
            raise ValueError(f"total_cost must be >= initial_cost >= 0; got total_cost={total_cost!r}, "
                             f"initial_cost={initial_cost!r}")
        self.total, self.initial, self.n = int(total), int(initial), int(initial)
        self.total_cost = None if total_cost is None else float(total_cost)
        self.initial_cost = self.cost = float(initial_cost)
        self.desc, self.unit, self.interval = desc, unit, float(interval)
        self._stream, self._clock = stream, clock
        self._postfix: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._emit_lock = threading.Lock()  # the heartbeat thread and the caller never write the same record twice
        self._started = self._last = clock()
        self._closed = threading.Event()
        self._emit()
        self._thread = None
        if heartbeat:
            self._thread = threading.Thread(target=self._beat, name=f"idepth-progress-{desc}", daemon=True)
            self._thread.start()

    # -- tqdm's interface ------------------------------------------------------------------------

    def update(self, n: int = 1, cost: float | None = None) -> None:
        """Count ``n`` more items done, of estimated ``cost`` (weighted records; default: ``n`` mean
        items); write a record if ``interval`` has passed."""
        with self._lock:
            self.n += n
            if self.total_cost is not None:
                self.cost += _mean_cost(self.total_cost, self.total) * n if cost is None else float(cost)
        self.poll()

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        """Values appended to each record (``failed=2``)."""
        with self._lock:
            self._postfix.update(values)

    def close(self) -> None:
        """Write the final record and stop the heartbeat."""
        with self._emit_lock:
            if self._closed.is_set():
                return
            self._closed.set()
            self._emit(final=True)

    def __enter__(self) -> "ProgressLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- records ---------------------------------------------------------------------------------

    def poll(self) -> bool:
        """Write a record if ``interval`` seconds have passed since the last; True if one was written."""
        with self._emit_lock:
            if self._closed.is_set() or self._clock() - self._last < self.interval:
                return False
            self._emit()
            return True

    def record(self, final: bool = False) -> str:
        """The current record (without writing it)."""
        now = self._clock()
        elapsed = now - self._started
        with self._lock:
            n, cost, postfix = self.n, self.cost, dict(self._postfix)
        if self.total_cost is None:  # every item alike
            done, todo, since_start = n, self.total, n - self.initial
            pct = f" ({100 * n / self.total:.0f} %)" if self.total else ""
        else:
            done, todo, since_start = cost, self.total_cost, cost - self.initial_cost
            pct = f" ({100 * min(cost / todo, 1.0):.0f} % of the estimated work)" if todo > 0 else ""
        line = f"{self.desc}: {n}/{self.total} {self.unit}s{pct}, {format_duration(elapsed)} elapsed, "
        if final:
            line += "finished" if n >= self.total else "stopped"
        else:
            line += (f"ETA {format_duration(elapsed / since_start * max(todo - done, 0.0))}"
                     if since_start > 0 and elapsed > 0 else "ETA unknown")
        if postfix:
            line += ", " + ", ".join(f"{key}={value}" for key, value in postfix.items())
        return line

    def _emit(self, final: bool = False) -> None:
        line = self.record(final)
        self._last = self._clock()
        stream = self._stream if self._stream is not None else sys.stderr
        try:
            print(line, file=stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stream must not stop the job
            pass

    def _beat(self) -> None:
        while not self._closed.wait(min(self.interval, 5.0)):
            self.poll()


def _mean_cost(total_cost: float, total: int) -> float:
    return total_cost / total if total else 0.0


class _CostBar:
    """A tqdm bar over the estimated cost (its ETA weighs items by cost), counting items beside it."""

    def __init__(self, total: int, initial: int, total_cost: float, initial_cost: float, *, desc: str, unit: str,
                 stream: TextIO):
        from tqdm import tqdm

        self.total, self.n, self.unit, self._postfix = total, initial, unit, {}
        self.total_cost = total_cost
        self._bar = tqdm(total=total_cost, initial=initial_cost, desc=desc, file=stream, dynamic_ncols=True,
                         smoothing=0,  # the ETA from the average speed since the start, in cost per second
                         bar_format="{desc}: {percentage:3.0f}% of the estimated work|{bar}| {postfix} "
                                    "[{elapsed}<{remaining}]")
        self._show()

    def _show(self) -> None:
        parts = [f"{self.n}/{self.total} {self.unit}s"] + [f"{key}={value}" for key, value in self._postfix.items()]
        self._bar.set_postfix_str(", ".join(parts), refresh=False)

    def update(self, n: int = 1, cost: float | None = None) -> None:
        self.n += n
        self._show()
        self._bar.update(_mean_cost(self.total_cost, self.total) * n if cost is None else float(cost))

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        self._postfix.update(values)
        self._show()

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "_CostBar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Silent:
    """No output (progress switched off); same interface."""

    def __init__(self, total: int = 0, initial: int = 0):
        self.total, self.n = total, initial

    def update(self, n: int = 1, cost: float | None = None) -> None:
        self.n += n

    def set_postfix(self, refresh: bool = True, **values: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def progress_bar(total: int, initial: int = 0, *, enabled: bool | None = None, desc: str = "progress",
                 unit: str = "item", interval: float = RECORD_INTERVAL, stream: TextIO | None = None,
                 total_cost: float | None = None, initial_cost: float = 0.0):
    """A tqdm bar (``stream`` is a terminal, or ``enabled=True``), records (not a terminal) or nothing.

    Parameters
    ----------
    total, initial, desc, unit
        As for :class:`ProgressLog`.
    enabled : bool, optional
        ``False``: no output at all; ``True``: a tqdm bar even if ``stream`` is not a terminal;
        ``None`` (default): a bar on a terminal, one-line records every ``interval`` seconds otherwise.
    interval : float
        See :class:`ProgressLog`.
    stream : file, optional
        Default ``sys.stderr``.
    total_cost, initial_cost : float, optional
        Weigh the items by their estimated cost (see :class:`ProgressLog`); every object
        returned then takes ``update(n, cost=...)``.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with progress_bar(2, enabled=None, desc="bounds", unit="bound", stream=out) as bar:
    ...     bar.update(2)
    >>> out.getvalue().splitlines()[-1]
    'bounds: 2/2 bounds (100 %), 0s elapsed, finished'
    """
    if enabled is False:
        return _Silent(total, initial)
    stream = sys.stderr if stream is None else stream
    is_terminal = bool(getattr(stream, "isatty", lambda: False)())
    if enabled or is_terminal:
        if total_cost is not None:
            return _CostBar(total, initial, float(total_cost), float(initial_cost), desc=desc, unit=unit,
                            stream=stream)
        from tqdm import tqdm

        return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=stream, dynamic_ncols=True)
    return ProgressLog(total, initial, desc=desc, unit=unit, interval=interval, stream=stream,
                       total_cost=total_cost, initial_cost=initial_cost)
