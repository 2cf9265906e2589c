"""Checkpoints the run cannot continue are refused with one line and left untouched: written by
octalgen 0.1 or 0.2, of another game or other parameters, truncated, edited; a read-only directory
is one line, and a full disk stops the run without losing proven work.  (A damaged value file is
repaired: test_kept_store.)"""

from __future__ import annotations

import errno

import pytest
from engine_helpers import c_values, run_engine

from octalgen.checksum import fnv1a64
from octalgen.engine import checkpoint as checkpoint_module
from octalgen.engine.checkpoint import read_checkpoint, write_checkpoint


def test_a_checkpoint_of_octalgen_0_1_is_refused_with_one_line(cli, tmp_path):
    write_checkpoint(tmp_path, {"octalgen_checkpoint": 1, "parameters": {"game": ".6"}, "position": 5})
    before = (tmp_path / "checkpoint.json").read_bytes()
    result = cli("run", ".6", "--until", 100_000, "--checkpoint", tmp_path)
    assert result.code == 2 and result.err.count("\n") == 1 and "written by octalgen 0.1" in result.err
    assert (tmp_path / "checkpoint.json").read_bytes() == before


def test_a_checkpoint_of_octalgen_0_2_is_refused_for_its_digest(cli, tmp_path):
    """0.2's digests started from a non-standard offset basis: continuing one would print a wrong digest."""
    write_checkpoint(tmp_path, {"octalgen_checkpoint": 2, "parameters": {"game": ".6"}, "position": 5})
    before = (tmp_path / "checkpoint.json").read_bytes()
    for command in (("run", ".6", "--until", 100_000, "--checkpoint", tmp_path), ("stats", tmp_path)):
        result = cli(*command)
        assert result.code == 2 and result.err.count("\n") == 1, result.err
        assert "the standard FNV-1a-64" in result.err and "start a new checkpoint directory" in result.err
    assert (tmp_path / "checkpoint.json").read_bytes() == before


@pytest.fixture
def small_checkpoint(tmp_path):
    run_engine(".6", 100_000, tmp_path, workers=0)
    return tmp_path


def _refused(cli, directory, *args):
    before = (directory / "checkpoint.json").read_bytes()
    result = cli("run", *args, "--checkpoint", directory, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "left untouched" in result.err, result.err
    assert (directory / "checkpoint.json").read_bytes() == before
    return result


def test_a_checkpoint_of_another_game_is_refused(cli, small_checkpoint):
    assert (
        "belongs to another run: it is a run of .6, not .16;"
        in _refused(cli, small_checkpoint, ".16", "--until", 200_000).err
    )


def test_a_checkpoint_of_other_parameters_is_refused(cli, small_checkpoint):
    refused = _refused(cli, small_checkpoint, ".6", "--until", 200_000, "--digest-from", 5).err
    assert "it was started with --digest-from 0, this command gives --digest-from 5" in refused


def test_a_truncated_checkpoint_is_refused(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    path.write_bytes(path.read_bytes()[:5000])
    assert "truncated or corrupt" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


def test_an_edited_checkpoint_fails_its_checksum(cli, small_checkpoint):
    path = small_checkpoint / "checkpoint.json"
    text = path.read_text()
    path.write_text(text.replace('"position":100000', '"position":100001'))
    assert "fails its checksum" in _refused(cli, small_checkpoint, ".6", "--until", 200_000).err


def test_a_read_only_checkpoint_directory_is_one_line(cli, small_checkpoint, monkeypatch):
    real_open = open

    def read_only(path, mode="r", *args, **kwargs):
        if "w" in mode and str(small_checkpoint) in str(path):
            raise OSError(errno.EROFS, "Read-only file system")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module, "open", read_only, raising=False)
    before = (small_checkpoint / "checkpoint.json").read_bytes()
    result = cli("run", ".6", "--until", 200_000, "--checkpoint", small_checkpoint, "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1 and "Read-only file system" in result.err
    assert (small_checkpoint / "checkpoint.json").read_bytes() == before


def test_a_full_disk_stops_the_run_with_one_line_and_loses_no_proven_work(cli, tmp_path, monkeypatch):
    writes = []
    real = checkpoint_module.write_file_atomically

    def filling_up(path, data):
        writes.append(path)
        if len(writes) > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(checkpoint_module, "write_file_atomically", filling_up)
    result = cli(
        "run",
        ".6",
        "--until",
        600_000,
        "--checkpoint",
        tmp_path,
        "--workers",
        0,
        "--chunk",
        1 << 15,
        "--checkpoint-every",
        0,
    )
    last = result.err.strip().splitlines()[-1]
    assert result.code == 2 and last.startswith("octalgen: error: cannot write checkpoint")
    assert "the disk is full" in result.err
    saved = read_checkpoint(tmp_path)["position"]
    assert 0 < saved < 600_000
    monkeypatch.setattr(checkpoint_module, "write_file_atomically", real)
    resumed = run_engine(".6", 600_000, tmp_path, workers=0, chunk=1 << 15)
    assert resumed.session_values == 600_000 - saved
    assert resumed.statistics.digest == fnv1a64(c_values(".6", 600_000))


def test_a_large_array_goes_to_a_file_of_its_own_written_once_and_checked(tmp_path):
    import numpy as np

    from octalgen.engine.arrays import pack_array, unpack_array
    from octalgen.errors import CheckpointError

    window = np.random.default_rng(5).integers(0, 1 << 16, 1 << 21).astype(np.uint16)  # ~4 MiB packed
    packed = pack_array(window)
    body = {"consumers": {"tally": {"anchor_window": packed, "zeros": [0, 1]}}}
    write_checkpoint(tmp_path, body)
    write_checkpoint(tmp_path, body)  # the same array: the same file, not a second one
    files = list((tmp_path / "arrays").iterdir())
    assert len(files) == 1 and files[0].stat().st_size > (1 << 20)
    assert (tmp_path / "checkpoint.json").stat().st_size < 4096
    read = read_checkpoint(tmp_path)
    assert (unpack_array(read["consumers"]["tally"]["anchor_window"]) == window).all()
    files[0].write_bytes(files[0].read_bytes()[:-1] + b"x")
    with pytest.raises(CheckpointError, match="fails its checksum"):
        read_checkpoint(tmp_path)
    write_checkpoint(tmp_path, {"consumers": {"tally": {"anchor_window": None}}})  # no checkpoint names it now
    assert not any((tmp_path / "arrays").iterdir())


def test_a_long_index_is_sealed_in_segments_listed_by_their_digest(tmp_path, monkeypatch):
    # A run that keeps every value has a file per FILE_VALUES heaps; past 2 x SEGMENT_ENTRIES of them
    # the oldest go to sealed segments, so the checkpoint stays small at any heap.  Made small here:
    # files of 2^12 values, segments of 4 entries.  The kept values, a resumed run and its digest
    # are those of the C backend; an edited segment is one line, and the run is left untouched.
    import numpy as np

    from octalgen.engine import store as store_module
    from octalgen.engine.checkpoint import SEALED_LAYOUT
    from octalgen.engine.kept_values import read_kept_values

    monkeypatch.setattr(store_module, "FILE_VALUES", 1 << 12)
    monkeypatch.setattr(store_module, "SEGMENT_ENTRIES", 4)
    exact = c_values(".6", 150_000)
    run_engine(".6", 100_000, tmp_path, keep_all=True, workers=0, chunk=1 << 12)
    body = read_checkpoint(tmp_path)
    history = body["history"]
    assert body["octalgen_checkpoint"] == SEALED_LAYOUT
    assert len(history["sealed"]) >= 3 and 4 <= len(history["files"]) < 8
    assert all(segment["entries"] == 4 for segment in history["sealed"])
    assert np.array_equal(read_kept_values(tmp_path), exact[:100_000])
    summary = run_engine(".6", 150_000, tmp_path, keep_all=True, workers=0, chunk=1 << 12)
    assert summary.statistics.digest == fnv1a64(exact)
    assert np.array_equal(read_kept_values(tmp_path), exact)
    listed = {s["file"] for s in read_checkpoint(tmp_path)["history"]["sealed"]}
    assert {p.name for p in (tmp_path / "values").glob("index-*")} == listed  # none left behind
    segment = tmp_path / "values" / sorted(listed)[0]
    segment.write_bytes(segment.read_bytes().replace(b'"count":4096', b'"count":4097', 1))
    before = (tmp_path / "checkpoint.json").read_bytes()
    with pytest.raises(checkpoint_module.CheckpointError, match=r"index segment .* fails its checksum"):
        run_engine(".6", 200_000, tmp_path, keep_all=True, workers=0)
    assert (tmp_path / "checkpoint.json").read_bytes() == before


def test_a_sealed_segment_that_loses_a_file_is_written_anew(tmp_path, monkeypatch):
    # retain() dropping a sealed entry (a far term's values no longer needed) drops every segment;
    # the files they name are deleted once the next checkpoint is on disk, and the entries kept are
    # sealed again: the store read back from its listing gives the same values.
    import numpy as np

    from octalgen.engine import store as store_module
    from octalgen.engine.store import ValueStore

    monkeypatch.setattr(store_module, "FILE_VALUES", 100)
    monkeypatch.setattr(store_module, "SEGMENT_ENTRIES", 3)
    values = np.arange(2000, dtype=np.uint16) % 777
    store = ValueStore(tmp_path)
    for first in range(0, 2000, 100):
        store.append(first, values[first : first + 100])
    store.sync()
    assert len(store.sealed) == 5 and len(store.inline) == 5  # 20 files: 5 segments of 3, 5 inline
    old = [s["file"] for s in store.sealed]
    dropped = store.retain(lambda first, stop: first < 300 or first >= 1200)  # the middle goes
    assert store.sealed == [] and {e["file"] for e in dropped} >= set(old)
    store.sync()
    store.delete(dropped)
    names = {p.name for p in store.root.iterdir()}
    assert not (set(old) - {s["file"] for s in store.sealed}) & names
    assert len(store.sealed) == 2 and len(store.inline) == 5  # 11 files kept: 2 segments of 3, 5 inline
    again = ValueStore(tmp_path, store.inline, store.sealed)
    assert again.index == store.index
    assert np.array_equal(again.read(0, 300), values[:300]) and np.array_equal(again.read(1200, 2000), values[1200:])
