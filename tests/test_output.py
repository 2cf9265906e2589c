"""Output files (``-o``, ``--out``): atomic for files, in place for devices and FIFOs, links kept, one-line errors.

Everything here goes through :mod:`octalgen.output`; the command-line tests run ``octalgen``
in-process.  The only real device written is ``/dev/full`` (it accepts no byte; the error it
gives is the full disk's), and only after a FIFO of this test's own has shown that devices
and pipes are written in place.  ``/dev/null`` is never a target.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

import pytest

from octalgen import output
from octalgen.errors import OutputError
from octalgen.output import output_file, write_output
from octalgen.rare import shipped_table

DEV_FULL = Path("/dev/full")


@pytest.fixture(scope="module")
def officers_yaml() -> bytes:
    """What ``octalgen rare .6`` writes: the shipped table of Officers as YAML."""
    return shipped_table(".6").to_yaml().encode()


def names(directory: Path) -> list[str]:
    """Every entry of ``directory``, hidden ones included (a temporary file left behind would show)."""
    return sorted(p.name for p in directory.iterdir())


def one_error_line(result, *pieces: str, code: int = 1) -> None:
    """One line on stderr holding ``pieces``; exit status ``code`` (2: a path that names no place to write)."""
    assert result.code == code, result.err
    assert result.err.count("\n") == 1 and result.err.startswith("octalgen: error: cannot write "), result.err
    assert "Traceback" not in result.err and "internal error" not in result.err
    for piece in pieces:
        assert piece in result.err


class FifoReader:
    """A thread that reads a FIFO to its end (opening it blocks until a writer comes)."""

    def __init__(self, path: Path):
        self.data = b""
        self.thread = threading.Thread(target=self._read, args=(path,), daemon=True)
        self.thread.start()

    def _read(self, path):
        with open(path, "rb") as fifo:
            self.data = fifo.read()

    def result(self) -> bytes:
        self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the FIFO's reader got no writer or no end of file"
        return self.data


# -- devices and FIFOs: written in place ---------------------------------------------------------


def test_a_fifo_is_written_in_place_and_its_reader_gets_every_byte(cli, tmp_path, officers_yaml):
    fifo = tmp_path / "table.fifo"
    os.mkfifo(fifo)
    reader = FifoReader(fifo)
    result = cli("rare", ".6", "-o", fifo)
    assert result.code == 0, result.err
    assert reader.result() == officers_yaml
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert names(tmp_path) == ["table.fifo"]


@pytest.mark.skipif(
    not DEV_FULL.exists() or not stat.S_ISCHR(os.stat(DEV_FULL).st_mode), reason="no /dev/full character device here"
)
def test_dev_full_stays_a_device_and_the_full_disk_is_one_line(cli, tmp_path):
    # Guard: a FIFO of our own must be written in place first, so a broken writer never gets to
    # replace the machine's /dev/full by a file.
    fifo = tmp_path / "guard.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_output(fifo, b"guard")
        assert os.read(reader, 16) == b"guard"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "a FIFO was replaced: /dev/full is not tried"

    device = os.stat(DEV_FULL)
    for command in (("values", ".6", "-n", 10, "--backend", "reference"), ("rare", ".6")):
        result = cli(*command, "-o", DEV_FULL)
        one_error_line(result, "cannot write /dev/full: no space left on device")
        after = os.stat(DEV_FULL)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == device.st_rdev and after.st_ino == device.st_ino
    assert not [name for name in os.listdir("/dev") if name.startswith(".full.")]


# -- symbolic links: followed, kept ---------------------------------------------------------------


def test_a_symlink_is_kept_and_its_target_gets_the_content(cli, tmp_path, officers_yaml):
    target = tmp_path / "target.yaml"
    target.write_bytes(b"old content\n")
    link = tmp_path / "link.yaml"
    link.symlink_to("target.yaml")
    result = cli("rare", ".6", "-o", link)
    assert result.code == 0, result.err
    assert link.is_symlink() and os.readlink(link) == "target.yaml"
    assert target.read_bytes() == officers_yaml and not target.is_symlink()
    assert names(tmp_path) == ["link.yaml", "target.yaml"]


def test_a_dangling_symlink_gets_its_target_created(cli, tmp_path, officers_yaml):
    link = tmp_path / "link.yaml"
    link.symlink_to("made.yaml")
    result = cli("rare", ".6", "-o", link)
    assert result.code == 0, result.err
    assert link.is_symlink() and os.readlink(link) == "made.yaml"
    assert (tmp_path / "made.yaml").read_bytes() == officers_yaml
    assert names(tmp_path) == ["link.yaml", "made.yaml"]


# -- regular files: replaced atomically ----------------------------------------------------------


def test_a_regular_file_is_replaced_by_a_new_file_with_its_mode(cli, tmp_path, officers_yaml):
    path = tmp_path / "table.yaml"
    path.write_bytes(b"old content\n")
    path.chmod(0o640)
    before = os.stat(path)
    result = cli("rare", ".6", "-o", path)
    assert result.code == 0, result.err
    after = os.stat(path)
    assert path.read_bytes() == officers_yaml
    assert after.st_ino != before.st_ino, "written in place, not renamed into place"
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert names(tmp_path) == ["table.yaml"]


def test_a_reader_sees_the_old_file_until_the_new_one_is_complete(tmp_path):
    path = tmp_path / "values.txt"
    path.write_bytes(b"old\n")
    with output_file(path) as out:
        out.write(b"new, first half\n")
        assert path.read_bytes() == b"old\n"
        out.write(b"new, second half\n")
    assert path.read_bytes() == b"new, first half\nnew, second half\n"
    assert names(tmp_path) == ["values.txt"]


def test_a_failure_in_the_block_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "values.txt"
    path.write_bytes(b"old\n")
    with pytest.raises(KeyboardInterrupt), output_file(path) as out:
        out.write(b"half of it")
        raise KeyboardInterrupt
    assert path.read_bytes() == b"old\n" and names(tmp_path) == ["values.txt"]


def test_a_full_disk_on_a_regular_file_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    def full_disk(descriptor):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(output.os, "fsync", full_disk)
    path = tmp_path / "values.txt"
    path.write_bytes(b"old\n")
    with pytest.raises(OutputError, match=r"^cannot write .*values\.txt: no space left on device$"):
        write_output(path, b"new\n" * 1000)
    assert path.read_bytes() == b"old\n" and names(tmp_path) == ["values.txt"]


# -- paths that cannot be written: one line, nothing left, before any work ----------------------------


def test_a_missing_directory_is_one_line_and_nothing_is_made(cli, tmp_path):
    path = tmp_path / "missing" / "x.yaml"
    one_error_line(cli("rare", ".6", "-o", path), f"cannot write {path}: the directory", "does not exist", code=2)
    assert names(tmp_path) == []


def test_a_directory_as_target_is_refused(cli, tmp_path):
    (tmp_path / "keep").write_text("kept\n")
    one_error_line(cli("rare", ".6", "-o", tmp_path), "it is a directory", code=2)
    assert names(tmp_path) == ["keep"] and (tmp_path / "keep").read_text() == "kept\n"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
@pytest.mark.parametrize(
    "command",
    [
        ("rare", ".6", "-o", "/proc/octalgen-test.yaml"),
        ("emit", "cuda", ".6", "-o", "/proc/octalgen-test.cu"),
        ("emit", "c", ".6", "-o", "/proc/octalgen-test"),
        ("emit", "hdl", ".6", "-o", "/proc/octalgen-test"),
    ],
)
def test_proc_is_one_line(cli, command):
    one_error_line(cli(*command), "/proc/octalgen-test")
    assert not Path("/proc/octalgen-test.yaml").exists() and not Path("/proc/octalgen-test").exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
def test_survey_checks_its_files_before_computing_any_game(cli, monkeypatch):
    def computed(*args, **kwargs):
        raise AssertionError("a game was computed before the output was checked")

    monkeypatch.setattr("octalgen.cli.survey.run_survey", computed)
    one_error_line(cli("survey", "--digits", 1, "--out", "/proc/octalgen-survey"), "/proc/octalgen-survey")


def test_a_rare_table_is_not_computed_for_a_path_that_cannot_be_written(cli, tmp_path, monkeypatch):
    def computed(*args, **kwargs):
        raise AssertionError("the table was made before the output was checked")

    monkeypatch.setattr("octalgen.cli.rare.rare_table", computed)
    path = tmp_path / "missing" / "x.yaml"
    one_error_line(cli("rare", ".16", "--upto", 100_000, "-o", path), "does not exist", code=2)
