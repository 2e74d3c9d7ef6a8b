"""Claims about every command's outputs: a path that cannot be written -- a directory where a file is
wanted, a missing parent, a suffix matplotlib cannot write, a read-only file system -- is one line on
stderr naming the path, exit status 2, and nothing written; it is found before any work is done.

The read-only location is a genuinely read-only bind mount (``mount -o bind,ro``, possible as root).
Where mounting is not permitted, the same tests run with ``EROFS`` injected at the operating-system
write calls (``os.open``, ``open``, ``os.mkdir``) for paths below that location; ``READ_ONLY_MODE``
says which one ran.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import idepth.cli as cli
import numerics.io as nio
from numerics.train import TrainResult

TINY = ["--model", "nonlinear", "--task", "difficult", "--k", "2", "--a", "0.5", "--b", "0.5", "--d", "3",
        "--N", "4", "--P", "8", "--depth", "2", "--seed", "0", "--steps", "6", "--batch-size", "8",
        "--eval-size", "16", "--eval-every", "3", "--warmup", "1"]
GRID = 'model = "nonlinear"\ntask = "difficult"\nd = 4\nN = 4\nP = 8\nbatch_size = 8\nmax_steps = 6\n' \
       'eval_every = 3\neval_size = 16\nwarmup_steps = 0\ndepth = [1, 2]\n'


def _one_line_exit_2(capsys, code, *fragments) -> str:
    out, err = capsys.readouterr()
    assert code == 2, (code, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _tree(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A finished checkpoint, a grid file and a finished sweep (all writable, outside the read-only place)."""
    root = tmp_path_factory.mktemp("inputs")
    assert cli.main(["train", *TINY, "--out", str(root / "ckpt"), "--quiet"]) == 0
    (root / "grid.toml").write_text(GRID)
    assert cli.main(["sweep", "run", str(root / "grid.toml"), "--out", str(root / "sweep"), "--workers", "1",
                     "--no-progress"]) == 0
    return root


# ----------------------------------------------------------------------------- a read-only place

READ_ONLY_MODE = None


def _try_mount_read_only(source: Path, target: Path) -> bool:
    try:
        result = subprocess.run(["mount", "-o", "bind,ro", str(source), str(target)], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    if result.returncode != 0:
        return False
    try:
        (target / ".probe").write_bytes(b"")
    except OSError as exc:
        return exc.errno == errno.EROFS
    (target / ".probe").unlink()  # mounted but writable: not what we need
    subprocess.run(["umount", str(target)], capture_output=True, timeout=30)
    return False


def _inject_read_only(monkeypatch, root: Path) -> None:
    """EROFS for every write below ``root`` at the operating-system calls (fallback where mounting is refused)."""
    root = str(root)

    def below(path) -> bool:
        try:
            return os.path.abspath(os.fspath(path)).startswith(root)
        except TypeError:
            return False

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))

    real_os_open, real_open, real_io_open, real_mkdir = os.open, builtins.open, io.open, os.mkdir
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def os_open(path, flags, *args, **kwargs):
        if flags & write_flags and below(path):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def make_open(real):
        def opener(file, mode="r", *args, **kwargs):
            if isinstance(file, (str, os.PathLike)) and any(c in mode for c in "wax+") and below(file):
                refuse(file)
            return real(file, mode, *args, **kwargs)
        return opener

    def mkdir(path, *args, **kwargs):
        if below(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", make_open(real_open))
    monkeypatch.setattr(io, "open", make_open(real_io_open))
    monkeypatch.setattr(os, "mkdir", mkdir)


@pytest.fixture(params=["mount", "inject"])
def read_only(request, tmp_path, monkeypatch, inputs):
    """A read-only directory holding a copy of ``inputs`` (checkpoint, grid, sweep).

    ``mount``: a read-only bind mount (where permitted; otherwise the injection below);
    ``inject``: EROFS injected at the write calls (runs everywhere).
    """
    global READ_ONLY_MODE
    source, target = tmp_path / "source", tmp_path / "ro"
    subprocess.run(["cp", "-a", str(inputs), str(source)], check=True)
    target.mkdir()
    if request.param == "mount" and _try_mount_read_only(source, target):
        READ_ONLY_MODE = "mount -o bind,ro"
        try:
            yield target
        finally:
            subprocess.run(["umount", str(target)], capture_output=True, timeout=60)
    else:
        READ_ONLY_MODE = "EROFS injected"
        target.rmdir()
        source.rename(target)
        _inject_read_only(monkeypatch, target)
        yield target


def _read_only_commands(ro: Path, inputs: Path) -> dict:
    """Every command that writes, with its output inside ``ro`` (inputs readable there or elsewhere)."""
    return {
        "predict --plot": (["predict", "--depth", "1,2", "--plot", str(ro / "p.png")], ro / "p.png"),
        "diagnose --plot": (["diagnose", str(ro / "ckpt"), "--contexts", "16", "--plot", str(ro / "m.png")],
                            ro / "m.png"),
        "train --out": (["train", *TINY, "--out", str(ro / "run"), "--quiet"], ro / "run"),
        "train --resume": (["train", *TINY, "--out", str(ro / "ckpt"), "--quiet", "--resume"], ro / "ckpt"),
        "sweep run --out (new)": (["sweep", "run", str(ro / "grid.toml"), "--out", str(ro / "sweep2"), "--workers",
                                   "1", "--no-progress"], ro / "sweep2"),
        "sweep run --out (existing)": (["sweep", "run", str(ro / "grid.toml"), "--out", str(ro / "sweep"),
                                        "--workers", "1", "--no-progress"], ro / "sweep"),
        "sweep export --csv": (["sweep", "export", str(inputs / "sweep"), "--csv", str(ro / "runs.csv")],
                               ro / "runs.csv"),
        "study regime --out": (["study", "regime", "--out", str(ro / "study"), "--workers", "1"], ro / "study"),
        "study consistency --out": (["study", "consistency", "--out", str(ro / "c"), "--d", "4", "--P", "16",
                                     "--contexts", "32"], ro / "c"),
        "study defaults --out": (["study", "defaults", "--scale", "smoke", "--out", str(ro / "d.json")],
                                 ro / "d.json"),
        "study defaults --store": (["study", "defaults", "--scale", "smoke", "--out", str(inputs / "unused.json"),
                                    "--store", str(ro / "store")], ro / "store"),
        "reproduce --out": (["reproduce", "--scale", "smoke", "--out", str(ro / "rep"), "--no-progress"], ro / "rep"),
        "derive --out": (["derive", "--out", str(ro / "pages")], ro / "pages"),
        "docs build --out": (["docs", "build", "--out", str(ro / "site")], ro / "site"),
    }


COMMANDS = list(_read_only_commands(Path("/ro"), Path("/in")))


@pytest.mark.parametrize("name", COMMANDS)
def test_a_read_only_output_is_one_line_naming_the_path_with_exit_2_and_nothing_written(
        name, read_only, inputs, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    argv, target = _read_only_commands(read_only, inputs)[name]
    before = _tree(read_only)
    cwd_before = sorted(os.listdir(tmp_path))
    line = _one_line_exit_2(capsys, cli.main(argv), str(target))
    assert "not writable (Read-only file system)" in line, (READ_ONLY_MODE, line)
    assert _tree(read_only) == before
    assert sorted(os.listdir(tmp_path)) == cwd_before, "nothing may be left in the working directory"
    assert not (inputs / "unused.json").exists()


def test_reading_a_store_on_a_read_only_file_system_works(read_only, capsys):
    assert cli.main(["sweep", "status", str(read_only / "sweep")]) == 0
    assert "2 done" in capsys.readouterr().out


def test_an_os_error_while_writing_is_one_line_naming_the_file(tmp_path, capsys, monkeypatch):
    # a full disk half-way through: the atomic writer leaves nothing behind, the CLI names the path
    def full(name):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(name))

    monkeypatch.setattr(nio, "_fsync_file", full)
    code = cli.main(["predict", "--depth", "1,2", "--plot", str(tmp_path / "p.png")])
    line = _one_line_exit_2(capsys, code, str(tmp_path / ".p.png."), "No space left on device")
    assert line.startswith("idepth predict: error:")
    assert list(tmp_path.iterdir()) == [], "no partial or temporary file"


# ----------------------------------------------------------------------------- plot paths


@pytest.mark.parametrize("command", ["predict", "diagnose"])
@pytest.mark.parametrize("case", ["directory", "missing parent", "parent is a file", "unknown suffix", "no suffix"])
def test_a_plot_path_that_cannot_be_written_is_refused_before_any_work(command, case, inputs, tmp_path, capsys):
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "plots").mkdir()
    target = {"directory": tmp_path / "plots", "missing parent": tmp_path / "nowhere" / "p.png",
              "parent is a file": tmp_path / "a-file" / "p.png", "unknown suffix": tmp_path / "p.xyz",
              "no suffix": tmp_path / "plot"}[case]
    before = _tree(tmp_path)
    argv = (["predict", "--depth", "1,2"] if command == "predict"
            else ["diagnose", str(inputs / "ckpt"), "--contexts", "16"])
    line = _one_line_exit_2(capsys, cli.main([*argv, "--plot", str(target)]), "--plot", str(target))
    assert _tree(tmp_path) == before, f"something was written: {line}"
    assert not list(tmp_path.parent.glob("plots.png")), "matplotlib's suffix must not be appended"


def test_check_output_file_probes_the_directory_for_real(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: True)  # what root sees everywhere
    ro = tmp_path / "ro"
    ro.mkdir()
    _inject_read_only(monkeypatch, ro)
    with pytest.raises(ValueError, match="is not writable"):
        nio.check_output_file(ro / "a.png", "--plot")
    with pytest.raises(ValueError, match="is not writable"):
        nio.check_output_dir(ro / "new" / "deeper", "--out")
    assert nio.check_output_file(tmp_path / "a.png", "--plot") == tmp_path / "a.png"
    assert list(tmp_path.iterdir()) == [ro] and list(ro.iterdir()) == []  # the probes left nothing


# ----------------------------------------------------------------------------- study defaults


def test_study_defaults_checks_out_before_training_and_leaves_no_store_in_the_working_directory(
        tmp_path, capsys, monkeypatch):
    import numerics.experiments.study as study

    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    trained = []
    real = study.make_softmax_defaults
    monkeypatch.setattr(study, "make_softmax_defaults", lambda *a, **k: trained.append(1) or real(*a, **k))
    code = cli.main(["study", "defaults", "--scale", "smoke", "--out", str(tmp_path / "adir"), "--workers", "1"])
    _one_line_exit_2(capsys, code, "--out", "is a directory")
    assert trained == [] and sorted(os.listdir(tmp_path)) == ["adir"]

    argv = ["study", "defaults", "--scale", "smoke", "--regimes", "converged", "--default-regime", "converged",
            "--workers", "1", "--no-progress"]
    assert cli.main([*argv, "--out", "defaults.json"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["adir", "defaults.json"], "no store unless asked"
    data = json.loads((tmp_path / "defaults.json").read_text())
    assert data["entries"] and np.isfinite(data["entries"][0]["L0"])
    assert cli.main([*argv, "--out", "again.json", "--store", "kept"]) == 0
    assert (tmp_path / "kept" / "results.sqlite").is_file()


# ----------------------------------------------------------------------------- diagnose of incomplete runs


def test_diagnose_refuses_an_incomplete_checkpoint_unless_allowed_and_then_says_so(tmp_path, capsys, monkeypatch):
    import numerics.train as train_module

    real, calls = train_module.adam_update, []

    def interrupt_at_step_5(*args, **kwargs):
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(train_module, "adam_update", interrupt_at_step_5)
    assert cli.main(["train", *TINY, "--out", str(tmp_path / "run"), "--quiet"]) == 130
    capsys.readouterr()
    assert TrainResult.load(tmp_path / "run").metrics["complete"] is False
    code = cli.main(["diagnose", str(tmp_path / "run"), "--contexts", "16"])
    _one_line_exit_2(capsys, code, "incomplete", "step 3 of 6", "--resume", "--allow-incomplete")
    assert cli.main(["diagnose", str(tmp_path / "run"), "--contexts", "16", "--allow-incomplete"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("INCOMPLETE CHECKPOINT (--allow-incomplete): training stopped at step 3 of 6")
    assert "R_L (loss, eq. 61)" in out


def test_ctrl_c_between_the_renames_of_a_checkpoint_is_held_until_all_files_are_in_place(tmp_path, monkeypatch):
    import signal

    staged = []
    for name, data in (("a.bin", b"new a"), ("b.bin", b"new b"), ("metrics.json", b"new m")):
        (tmp_path / name).write_bytes(b"old")
        staged.append((nio.stage(tmp_path / name, lambda fh, d=data: fh.write(d))[0], tmp_path / name))
    real_replace, calls = os.replace, []

    def replace_then_ctrl_c(src, dst):
        real_replace(src, dst)
        calls.append(dst)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the first of three renames

    monkeypatch.setattr(nio.os, "replace", replace_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        nio.commit(staged)
    assert len(calls) == 3, "the interrupt arrived before the checkpoint was complete"
    assert [(tmp_path / n).read_bytes() for n in ("a.bin", "b.bin", "metrics.json")] == [b"new a", b"new b", b"new m"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin", "metrics.json"]


# ----------------------------------------------------------------------------- file modes follow the umask
@pytest.fixture
def umask():
    """Set the process umask for one test and restore it afterwards."""
    saved = os.umask(0o022)
    os.umask(saved)
    yield lambda mask: os.umask(mask)
    os.umask(saved)


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_atomically_written_files_get_the_mode_the_umask_allows(tmp_path, umask, mask, expected):
    umask(mask)
    nio.write_text(tmp_path / "a.txt", "x")
    nio.write_json(tmp_path / "b.json", {"x": 1})
    with nio.atomic_path(tmp_path / "c.bin") as tmp:
        tmp.write_bytes(b"x")
    nio.atomic_write(tmp_path / "d.bin", lambda fh: fh.write(b"x"))
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()}
    assert modes == dict.fromkeys(("a.txt", "b.json", "c.bin", "d.bin"), oct(expected))


def test_an_existing_file_replaced_atomically_takes_the_umask_mode(tmp_path, umask):
    umask(0o022)
    target = tmp_path / "out.txt"
    target.write_text("old")
    target.chmod(0o600)
    nio.write_text(target, "new")
    assert target.read_text() == "new" and target.stat().st_mode & 0o777 == 0o644


# ----------------------------------------------------------------------------- pages written together


@pytest.mark.parametrize("failure", [KeyboardInterrupt, OSError])
def test_a_page_whose_last_file_fails_replaces_none_of_its_files_and_leaves_nothing_behind(tmp_path, failure):
    nio.write_together(tmp_path, {"page.md": "old page", "data.json": "{}"})

    def fails(path):
        path.write_bytes(b"half a figure")
        raise failure

    with pytest.raises(failure):
        nio.write_together(tmp_path, {"page.md": "new page", "data.json": '{"new": 1}', "new/dir/figure.png": fails})
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data.json", "page.md"], "a temporary or a new directory"
    assert (tmp_path / "page.md").read_text() == "old page" and (tmp_path / "data.json").read_text() == "{}"


def test_a_writer_with_nothing_to_write_keeps_the_old_file(tmp_path):
    nio.write_together(tmp_path, {"figure.png": b"old"})
    written = nio.write_together(tmp_path, {"page.md": "page", "figure.png": lambda path: None})
    assert written == [tmp_path / "page.md"] and (tmp_path / "figure.png").read_bytes() == b"old"
