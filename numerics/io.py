"""Writing files so that a failure or an interrupt never leaves a half-written one.

One helper for every writer of the package (checkpoints, the results store's
creation and CSV export, figures, tables, reports, caches, CLI plots):

* :func:`atomic_path` -- a context manager that yields a temporary sibling of
  the target; on success it is fsynced and renamed over the target
  (:func:`os.replace`, atomic on POSIX), on any exception (``KeyboardInterrupt``
  included) it is removed and the target is left as it was;
* :func:`atomic_write` (bytes through a callback), :func:`write_text`,
  :func:`write_json` and :func:`save_figure` built on it (a PNG records the size of its smallest
  text, :func:`figure_text_size`, so that the documentation can show it readably);
* :func:`stage` / :func:`commit` for several files that must appear together
  (a checkpoint: all staged first, then renamed in order);
* :func:`json_clean` -- the one JSON normaliser (numpy scalars to Python,
  non-finite floats to ``null``, tuples to lists, keys to strings);
* :func:`check_output_file`, :func:`check_output_dir` -- validate an output path
  before any work is done (writability probed for real, not with :func:`os.access`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

__all__ = [
    "atomic_path",
    "fresh_directory",
    "new_file_mode",
    "atomic_write",
    "write_text",
    "write_json",
    "save_figure",
    "savefig",
    "smallest_text_points",
    "figure_text_size",
    "FigureTextSize",
    "TEXT_SIZE_KEY",
    "stage",
    "commit",
    "write_together",
    "json_text",
    "probe_writable",
    "sha256_file",
    "json_clean",
    "significant",
    "check_output_file",
    "check_output_dir",
    "make_output_dir",
    "FIGURE_FORMATS",
]

#: file suffixes :func:`save_figure` writes (matplotlib's Agg, PDF, SVG and PS back ends)
FIGURE_FORMATS = ("png", "pdf", "svg", "ps", "eps", "jpg", "jpeg")
#: the PNG text key under which :func:`savefig` records the figure's smallest font size, in points
TEXT_SIZE_KEY = "idepth:smallest-text-pt"


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 hex digest of a file's bytes.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = pathlib.Path(tmp) / "x"; _ = p.write_bytes(b"")
    ...     sha256_file(p)[:12]
    'e3b0c44298fc'
    """
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _unlink_quietly(name: str | os.PathLike) -> None:
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def _fsync_file(name: str | os.PathLike) -> None:
    with open(name, "rb") as fh:
        os.fsync(fh.fileno())


def _umask() -> int:
    """The process umask, read without changing it where the system says it (Linux), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # the only portable read; restored at once
    os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: ``0o666`` less the process umask.

    ``tempfile.mkstemp`` creates its file with mode ``0o600`` whatever the umask; the atomic
    writers give their temporary this mode before it is renamed, so an output file is as
    readable as any other file the user creates.

    Examples
    --------
    >>> old = os.umask(0o027)
    >>> oct(new_file_mode())
    '0o640'
    >>> _ = os.umask(old)
    """
    return 0o666 & ~_umask()


def _mkstemp_sibling(path: Path, suffix: str = ".tmp") -> tuple[int, str]:
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        os.fchmod(fd, new_file_mode())
    except BaseException:
        os.close(fd)
        _unlink_quietly(tmp_name)
        raise
    return fd, tmp_name


def _temporary_sibling(path: Path) -> str:
    fd, tmp_name = _mkstemp_sibling(path)
    os.close(fd)
    return tmp_name


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; rename it over ``path`` on success, remove it on failure.

    Whatever the body writes to the yielded path (by name: a SQLite database,
    ``savefig``, a CSV writer) appears at ``path`` complete and fsynced, or not at
    all. Stale temporaries of earlier interrupted writes are not touched (their
    names are unique).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = pathlib.Path(tmp) / "out.txt"
    ...     with atomic_path(target) as tmp_path:
    ...         _ = tmp_path.write_text("done")
    ...     target.read_text(), len(list(pathlib.Path(tmp).iterdir()))
    ('done', 1)
    """
    path = Path(path)
    tmp_name = _temporary_sibling(path)
    try:
        yield Path(tmp_name)
        _fsync_file(tmp_name)
        os.replace(tmp_name, path)
    except BaseException:
        _unlink_quietly(tmp_name)
        raise
    _fsync_dir(path.parent)


def stage(path: str | os.PathLike, write: Callable[[Any], None]) -> tuple[str, str]:
    """Write a complete, fsynced temporary sibling of ``path`` with ``write(fh)``; return (name, sha256).

    Removes the temporary file on any failure. Pair with :func:`commit`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = pathlib.Path(tmp) / "a.bin"
    ...     name, digest = stage(target, lambda fh: fh.write(b"x"))
    ...     commit([(name, target)])
    ...     target.read_bytes()
    b'x'
    """
    path = Path(path)
    fd, tmp_name = _mkstemp_sibling(path)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        return tmp_name, sha256_file(tmp_name)
    except BaseException:
        _unlink_quietly(tmp_name)
        raise


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold a SIGINT (Ctrl-C) arriving in the body until the body is done, then deliver it.

    Only in the main thread (where Python handles signals); elsewhere a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    except (ValueError, OSError):  # pragma: no cover - no signal handling here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
        if received:
            os.kill(os.getpid(), signal.SIGINT)  # now handled as usual (KeyboardInterrupt)


def commit(staged: list[tuple[str, Path]]) -> None:
    """``os.replace`` each staged file onto its target, in order; on failure remove the rest.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     a, b = pathlib.Path(tmp) / "a", pathlib.Path(tmp) / "b"
    ...     staged = [(stage(a, lambda fh: fh.write(b"1"))[0], a), (stage(b, lambda fh: fh.write(b"2"))[0], b)]
    ...     commit(staged)
    ...     a.read_bytes() + b.read_bytes()
    b'12'
    """
    try:
        with _sigint_deferred():  # Ctrl-C between two renames would leave a mixture of old and new files
            for tmp_name, target in staged:
                os.replace(tmp_name, target)
    except BaseException:
        for tmp_name, _ in staged:
            _unlink_quietly(tmp_name)
        raise
    finally:
        if staged:
            _fsync_dir(Path(staged[0][1]).parent)


def discard(staged: list[tuple[str, Path]]) -> None:
    """Remove staged temporaries that will not be committed."""
    for tmp_name, _ in staged:
        _unlink_quietly(tmp_name)


def write_together(out_dir: str | os.PathLike, files: Mapping[str, str | bytes | Callable[[Path], Any]]) -> list[Path]:
    """Write ``files`` (a path relative to ``out_dir`` → its content) so that they replace the old ones together.

    A content is text (written as UTF-8), bytes, or a function that writes the file given a path (a figure's
    ``savefig``, a drawing function): it gets a temporary sibling of the target with the target's suffix, so a
    writer that reads the format from the suffix writes the right one. Every file is written complete and
    fsynced before any target is replaced; a failure or Ctrl-C before that leaves every old file as it was and
    no temporary behind, and the replacing itself holds Ctrl-C until it is done (:func:`commit`). A function that
    writes nothing (an empty file) writes no file, and the old one stays. Returns the targets written, in the
    order of ``files``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     written = write_together(tmp, {"page.md": "# page", "data/x.bin": b"1",
    ...                                    "y.txt": lambda path: path.write_text("by name"), "z.png": lambda path: None})
    ...     [p.relative_to(tmp).as_posix() for p in written], (pathlib.Path(tmp) / "y.txt").read_text()
    (['page.md', 'data/x.bin', 'y.txt'], 'by name')
    >>> def fails(path):
    ...     raise RuntimeError("the figure failed")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = write_together(tmp, {"page.md": "old"})
    ...     try:
    ...         write_together(tmp, {"page.md": "new", "figures/figure.png": fails})
    ...     except RuntimeError:
    ...         pass
    ...     (pathlib.Path(tmp) / "page.md").read_text(), sorted(p.name for p in pathlib.Path(tmp).iterdir())
    ('old', ['page.md'])
    """
    created = [d for d in (Path(out_dir), *Path(out_dir).parents) if not d.exists()]
    out = make_output_dir(out_dir)
    staged: list[tuple[str, Path]] = []
    try:
        for name, content in files.items():
            target = out / name
            created += [d for d in (target.parent, *target.parent.parents) if not d.exists()]
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, str):
                content = content.encode("utf-8")
            if isinstance(content, bytes):
                staged.append((stage(target, lambda fh, data=content: fh.write(data))[0], target))
                continue
            fd, tmp_name = _mkstemp_sibling(target, suffix=f".tmp{target.suffix}")
            os.close(fd)
            staged.append((tmp_name, target))
            content(Path(tmp_name))
            if os.path.getsize(tmp_name) == 0:  # the function had nothing to write: no file (the old one stays)
                _unlink_quietly(staged.pop()[0])
                continue
            _fsync_file(tmp_name)
    except BaseException:
        discard(staged)
        for directory in sorted(set(created), key=lambda d: len(d.parts), reverse=True):  # the ones made here
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise
    commit(staged)
    return [target for _, target in staged]


def atomic_write(path: str | os.PathLike, write: Callable[[Any], None]) -> str:
    """Write ``path`` atomically: ``write(fh)`` into a temporary file in the same directory, fsync, ``os.replace``.

    On any exception (including KeyboardInterrupt) the temporary file is
    removed and ``path`` is left as it was. Returns the SHA-256 of what was written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     _ = atomic_write(pathlib.Path(tmp) / "x.txt", lambda fh: fh.write(b"hi"))
    ...     (pathlib.Path(tmp) / "x.txt").read_bytes()
    b'hi'
    """
    path = Path(path)
    tmp_name, digest = stage(path, write)
    commit([(tmp_name, path)])
    return digest


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically; return the path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     write_text(pathlib.Path(tmp) / "r.md", "# title").read_text()
    '# title'
    """
    data = text.encode("utf-8")
    atomic_write(path, lambda fh: fh.write(data))
    return Path(path)


def json_clean(value: Any) -> Any:
    """``value`` made JSON-able: numpy scalars and arrays to Python, non-finite floats to ``None``.

    Tuples and arrays become lists, mapping keys strings; other values are
    returned unchanged (``json.dumps`` then rejects what it cannot write).

    Examples
    --------
    >>> import numpy as np
    >>> json_clean({"a": np.float32(0.5), "b": (1, float("nan")), 3: np.arange(2), "ok": np.bool_(True)})
    {'a': 0.5, 'b': [1, None], '3': [0, 1], 'ok': True}
    """
    if isinstance(value, Mapping):
        return {str(k): json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_clean(v) for v in value]
    if type(value).__module__ == "numpy":  # numpy scalars and arrays, without importing numpy here
        if getattr(value, "ndim", 0):
            return [json_clean(v) for v in value.tolist()]
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def significant(value: Any, digits: int = 8) -> Any:
    """``value`` with every float rounded to ``digits`` significant digits (containers rebuilt, the rest kept).

    A results record holds its numbers to the digits that mean something on every machine: the last digits of a
    fit differ between LAPACK kernels, which would make a regenerated record differ from the shipped one.

    Examples
    --------
    >>> significant({"chi2": [18.256764362874662, 18.256764362874737], "n": 3, "nan": float("nan")})
    {'chi2': [18.256764, 18.256764], 'n': 3, 'nan': nan}
    """
    if isinstance(value, Mapping):
        return {k: significant(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(significant(v, digits) for v in value)
    if isinstance(value, float) and not isinstance(value, bool) and math.isfinite(value):
        return float(f"{value:.{digits}g}")
    return value


def write_json(path: str | os.PathLike, data: Any, *, indent: int | None = 1, sort_keys: bool = True) -> Path:
    """Write ``json_clean(data)`` to ``path`` atomically (NaN as ``null``); return the path.

    Examples
    --------
    >>> import tempfile, pathlib, json
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     json.loads(write_json(pathlib.Path(tmp) / "x.json", {"x": float("inf")}).read_text())
    {'x': None}
    """
    return write_text(path, json_text(data, indent=indent, sort_keys=sort_keys))


def json_text(data: Any, *, indent: int | None = 1, sort_keys: bool = True) -> str:
    """``json_clean(data)`` as JSON text (NaN as ``null``), as :func:`write_json` writes it.

    Examples
    --------
    >>> json_text({"b": float("nan"), "a": 1}, indent=None)
    '{"a": 1, "b": null}'
    """
    return json.dumps(json_clean(data), indent=indent, sort_keys=sort_keys, allow_nan=False)


def probe_writable(directory: str | os.PathLike) -> str | None:
    """None if a file can be created in ``directory`` (created and removed for real), else why not.

    :func:`os.access` is not enough: for root it says every directory is writable
    (permission bits do not bind root); only a real write answers for every case.

    Parameters
    ----------
    directory : str or path-like
        An existing directory.

    Returns
    -------
    str or None
        ``None`` when writable, else the reason (the error's ``strerror``, e.g. ``'Read-only file system'``).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     probe_writable(tmp) is None
    True
    >>> probe_writable("/nonexistent/directory")
    'No such file or directory'
    """
    try:
        fd, name = tempfile.mkstemp(prefix=".idepth-write-probe-", dir=directory)
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    os.close(fd)
    _unlink_quietly(name)
    return None


def check_output_file(path: str | os.PathLike, name: str = "path", *, suffixes: tuple[str, ...] | None = None) -> Path:
    """``path`` as a :class:`~pathlib.Path` if a file can be written there; ``ValueError`` naming it otherwise.

    Refused: an existing directory, a missing or non-directory parent, a parent
    in which no file can be created (probed by creating and removing a temporary
    file: read-only mounts and permissions alike, also for root), and (with
    ``suffixes``) a suffix not in that list. Call it before any work, so nothing
    is computed for an output that cannot be written.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     check_output_file(pathlib.Path(tmp) / "a.png", "--plot", suffixes=FIGURE_FORMATS).name
    'a.png'
    >>> check_output_file("/", "--plot")
    Traceback (most recent call last):
    ...
    ValueError: --plot '/' is a directory; give a file name
    """
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} {str(path)!r} is a directory; give a file name")
    if suffixes is not None:
        suffix = path.suffix.lower().lstrip(".")
        if suffix not in suffixes:
            raise ValueError(
                f"{name} {str(path)!r} must end in one of {', '.join('.' + s for s in suffixes)}; got {path.suffix or 'no suffix'!r}"
            )
    parent = path.parent
    if not parent.is_dir():
        what = "is a file" if parent.exists() else "does not exist"
        raise ValueError(f"{name} {str(path)!r}: the directory {str(parent)!r} {what}")
    why = probe_writable(parent)
    if why is not None:
        raise ValueError(f"{name} {str(path)!r}: the directory {str(parent)!r} is not writable ({why})")
    return path


def check_output_dir(path: str | os.PathLike, name: str = "directory") -> Path:
    """``path`` as a :class:`~pathlib.Path` if it is, or can be created as, a writable directory; ``ValueError`` otherwise.

    Nothing is created: an existing directory is probed for real (a temporary
    file created and removed), a missing one through its nearest existing
    ancestor, which must be a writable directory.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     out = check_output_dir(pathlib.Path(tmp) / "new" / "deeper", "--out")
    ...     out.name, out.exists()
    ('deeper', False)
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name} {str(path)!r} is an existing file, not a directory")
    existing = path
    while not existing.exists():
        if existing.parent == existing:  # pragma: no cover - the root always exists
            break
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{name} {str(path)!r}: {str(existing)!r} is a file, not a directory")
    why = probe_writable(existing)
    if why is not None:
        where = "" if existing == path else f": {str(existing)!r}"
        raise ValueError(f"{name} {str(path)!r}{where} is not writable ({why})")
    return path


def make_output_dir(out_dir: str | os.PathLike, name: str = "output directory") -> Path:
    """:func:`check_output_dir`, then create the directory (with its parents); return it.

    Raises
    ------
    ValueError
        As :func:`check_output_dir` (a file in the way, nothing writable): nothing is created.
    TypeError
        ``out_dir`` is not a path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     make_output_dir(pathlib.Path(tmp) / "new").is_dir()
    True
    >>> with tempfile.NamedTemporaryFile() as fh:
    ...     make_output_dir(fh.name)
    Traceback (most recent call last):
    ...
    ValueError: output directory ... is an existing file, not a directory
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"{name} must be a path; got {out_dir!r} ({type(out_dir).__name__})")
    out = check_output_dir(out_dir, name)
    out.mkdir(parents=True, exist_ok=True)
    return out


def smallest_text_points(fig: Any) -> float | None:
    """The smallest font size, in points, of the text ``fig`` draws (None: it draws no text).

    Every visible, non-empty text counts: titles, axis and tick labels, legends, annotations. The figure is laid
    out first (without rendering), so tick labels exist. A text shown at ``s`` points in a PNG of ``dpi`` dots
    per inch is ``s * dpi / 72`` pixels tall at the image's natural size.

    Examples
    --------
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.set_title("title", fontsize=12); _ = ax.legend(handles=ax.plot([0, 1], label="a"), fontsize=7)
    >>> smallest_text_points(fig)
    7.0
    >>> plt.close(fig)
    """
    from matplotlib.text import Text

    fig.draw_without_rendering()
    sizes, stack = [], [fig]
    while stack:  # the artists drawn: an invisible one hides everything it holds (a hidden legend's texts)
        artist = stack.pop()
        if not artist.get_visible():
            continue
        if isinstance(artist, Text) and artist.get_text().strip():
            sizes.append(float(artist.get_fontsize()))
        stack.extend(artist.get_children())
    return min(sizes) if sizes else None


def savefig(fig: Any, path: str | os.PathLike, *, dpi: int = 130, fmt: str | None = None) -> None:
    """Draw ``fig`` into ``path`` in the format its suffix names; a PNG records its smallest text size.

    ``fmt``: the format when the suffix does not name it (a temporary file). Not atomic by itself:
    :func:`save_figure` and :func:`write_together`'s writers call it on a temporary file. The
    record (:data:`TEXT_SIZE_KEY`, read back by :func:`figure_text_size`) lets the documentation show the
    figure at a width where that text is legible.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(2, 1)); _ = ax.set_xlabel("L", fontsize=8)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     savefig(fig, pathlib.Path(tmp) / "f.png", dpi=100)
    ...     figure_text_size(pathlib.Path(tmp) / "f.png")
    FigureTextSize(points=8.0, dpi=100.0, width=200)
    >>> plt.close(fig)
    """
    fmt = fmt or Path(path).suffix.lower().lstrip(".")
    options: dict = {}
    if fmt == "png":
        points = smallest_text_points(fig)
        if points is not None:
            options["metadata"] = {TEXT_SIZE_KEY: f"{points:g}"}
    fig.savefig(path, format=fmt, dpi=dpi, **options)


class FigureTextSize(tuple):
    """``(points, dpi, width)``: a PNG's smallest text in points (None: not recorded), its dots per inch and its
    width in pixels; the text is ``points * dpi / 72`` pixels tall at the natural size (:func:`figure_text_size`).

    Examples
    --------
    >>> size = FigureTextSize(7.0, 130.0, 2145)  # 7 pt at 130 dpi: 12.6 px tall at the natural 2145 px
    >>> round(size.pixels(size.width), 1), round(size.pixels(800), 1)
    (12.6, 4.7)
    """

    __slots__ = ()

    def __new__(cls, points: float | None, dpi: float, width: int):
        return super().__new__(cls, (points, dpi, width))

    points = property(lambda self: self[0])
    dpi = property(lambda self: self[1])
    width = property(lambda self: self[2])

    def pixels(self, displayed_width: float) -> float | None:
        """Height in screen pixels of the smallest text when the image is shown ``displayed_width`` pixels wide.

        Examples
        --------
        >>> FigureTextSize(7.0, 144.0, 1000).pixels(500)
        7.0
        """
        if self.points is None:
            return None
        return self.points * self.dpi / 72.0 * displayed_width / self.width

    def __repr__(self) -> str:
        return f"FigureTextSize(points={self.points!r}, dpi={self.dpi!r}, width={self.width!r})"


def figure_text_size(path: str | os.PathLike) -> FigureTextSize:
    """The smallest text size recorded in a PNG by :func:`savefig`, with the PNG's dpi and width.

    Reads the file's chunks (no imaging library): ``IHDR`` (width), ``pHYs`` (dots per metre; 72 dpi when
    absent) and the ``tEXt`` chunk :data:`TEXT_SIZE_KEY` (``points`` None when absent: a figure saved before
    the record existed, or by another program).

    Raises
    ------
    ValueError
        ``path`` is not a PNG file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig = plt.figure(figsize=(2, 1))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     fig.savefig(pathlib.Path(tmp) / "plain.png", dpi=144)
    ...     figure_text_size(pathlib.Path(tmp) / "plain.png")
    FigureTextSize(points=None, dpi=144.0, width=288)
    >>> plt.close(fig)
    """
    import struct

    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    width = struct.unpack(">I", data[16:20])[0]
    points, dpi, offset = None, 72.0, 8
    while offset + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        body = data[offset + 8:offset + 8 + length]
        if kind == b"pHYs" and len(body) == 9 and body[8] == 1:  # unit 1: per metre
            dpi = round(struct.unpack(">I", body[:4])[0] * 0.0254, 4)
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key.decode("latin-1") == TEXT_SIZE_KEY:
                points = float(value.decode("latin-1"))
        elif kind in (b"IDAT", b"IEND"):  # matplotlib writes its text chunks before the image data
            break
        offset += 12 + length
    return FigureTextSize(points, dpi, width)


def save_figure(fig: Any, path: str | os.PathLike, *, dpi: int = 130, close: bool = True) -> Path:
    """Write a matplotlib figure to ``path`` atomically, in the format its suffix names (:func:`savefig`).

    The suffix must be one of :data:`FIGURE_FORMATS` (``ValueError`` otherwise,
    before anything is written), so matplotlib never appends one of its own.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import matplotlib; matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     save_figure(plt.figure(), pathlib.Path(tmp) / "f.png").suffix
    '.png'
    """
    path = check_output_file(path, "figure path", suffixes=FIGURE_FORMATS)
    try:
        with atomic_path(path) as tmp:
            savefig(fig, tmp, dpi=dpi, fmt=path.suffix.lower().lstrip("."))
    finally:
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)
    return path


def fresh_directory(prefix: str, parent=".") -> Path:
    """A directory name ``prefix-<UTC time>`` under ``parent`` that does not exist yet (not created).

    A run with no output directory given writes there, so no earlier output is ever overwritten by accident.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = fresh_directory("study", tmp)
    ...     path.name.startswith("study-"), path.exists()
    (True, False)
    """
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    path, n = Path(parent) / f"{prefix}-{stamp}", 1
    while path.exists():
        n += 1
        path = Path(parent) / f"{prefix}-{stamp}-{n}"
    return path
