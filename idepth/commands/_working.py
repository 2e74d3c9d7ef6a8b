"""A line on stderr every few seconds while a long call of the API runs silently (``idepth predict``'s Monte Carlo,
``idepth derive``'s derivations, ``idepth expressible``'s U_L and checks): no stretch without output is longer than
:data:`EVERY_S` seconds."""

from __future__ import annotations

import contextlib
import sys
import threading
import time

#: seconds between two lines
EVERY_S = 10.0
#: seconds before the first line: the command's imports and checks come before the block, so its first line comes
#: well within ten seconds of the command's start
FIRST_S = 5.0


@contextlib.contextmanager
def working(prefix: str, what: str, *, every: float = EVERY_S, first: float = FIRST_S, stream=None):
    """While the block runs, print ``"{prefix}: {what} (N s)…"`` on ``stream`` (stderr) ``first`` seconds after it
    started, then every ``every`` seconds.

    Nothing is printed by a block that ends sooner; the line ends with the seconds since the block started.

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> with working("idepth demo", "waiting", every=0.05, first=0.05, stream=out):
    ...     time.sleep(0.12)
    >>> out.getvalue().splitlines()[0]
    'idepth demo: waiting (0 s)…'
    """
    stream = sys.stderr if stream is None else stream
    done = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        wait = first
        while not done.wait(wait):
            wait = every
            try:
                print(f"{prefix}: {what} ({time.monotonic() - started:.0f} s)…", file=stream, flush=True)
            except (OSError, ValueError):  # a closed stream: stay quiet
                return

    thread = threading.Thread(target=beat, name="idepth-working", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
