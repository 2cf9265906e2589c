"""A damaged store of kept values is checked and repaired when its run resumes: every stored file
against the checkpoint's index (size, sha256); one deleted or with a byte flipped is written again
from values proven anew, byte for byte what was there, and ``octalgen export`` then reads it whole.
Values proven anew that do not hash to the index are refused with one line."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from engine_helpers import c_values, run_engine, run_octalgen

from octalgen.checksum import fnv1a64
from octalgen.engine.checkpoint import read_checkpoint, write_checkpoint
from octalgen.engine.store import ValueStore
from octalgen.errors import CheckpointError

UNTIL = 2_000_000


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A finished ``run --keep-values`` of .6 to UNTIL, with many stored files; its values."""
    directory = tmp_path_factory.mktemp("kept") / "run"
    run_octalgen(
        "-q",
        "run",
        ".6",
        "--until",
        UNTIL,
        "--checkpoint",
        directory,
        "--keep-values",
        "--workers",
        2,
        "--chunk",
        1 << 16,
        "--checkpoint-every",
        0.2,
        timeout=600,
    )
    return directory, c_values(".6", UNTIL)


def test_a_damaged_kept_store_is_repaired_when_the_run_resumes(kept, tmp_path):
    original, reference = kept
    directory = tmp_path / "run"
    shutil.copytree(original, directory)
    files = sorted((directory / "values").glob("G*"))
    codes = [path for path in files if path.suffix == ".u8"]
    assert len(codes) >= 3 and files[0].suffix == ".u16"
    before = {path.name: path.read_bytes() for path in files}
    deleted, flipped = codes[len(codes) // 2], codes[-1]
    deleted.unlink()
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x10
    flipped.write_bytes(bytes(data))
    prefix = bytearray(files[0].read_bytes())  # the exact prefix's 16-bit values, which the run reads back first
    prefix[1001] ^= 1
    files[0].write_bytes(bytes(prefix))

    resumed = run_octalgen(
        "-q", "run", ".6", "--until", UNTIL, "--checkpoint", directory, "--keep-values", "--json", timeout=600
    )
    warning = [line for line in resumed.stderr.splitlines() if line.strip()]
    assert len(warning) == 1 and files[0].name in warning[0] and "2 more are damaged" in warning[0], resumed.stderr
    assert "computing G(0) ... " in warning[0]
    assert json.loads(resumed.stdout)["fnv1a64"] == fnv1a64(reference)
    assert {path.name: path.read_bytes() for path in sorted((directory / "values").glob("G*"))} == before

    out = tmp_path / "values.u16"
    run_octalgen("export", directory, "--format", "u16", "-o", out, timeout=600)
    exported = np.fromfile(out, dtype="<u2")
    assert fnv1a64(exported) == fnv1a64(reference) and np.array_equal(exported, reference)


def test_a_damaged_file_of_a_run_that_keeps_few_values_is_repaired_too(cli, tmp_path):
    run_engine(".6", 100_000, tmp_path, workers=0)
    files = sorted((tmp_path / "values").iterdir())
    files[0].write_bytes(files[0].read_bytes()[:-1] + b"\x07")
    result = cli("run", ".6", "--until", 200_000, "--checkpoint", tmp_path, "--workers", 0, "-q")
    assert result.code == 0 and result.err.count("\n") == 1 and "fails its checksum" in result.err, result.err
    assert f"fnv1a64 {fnv1a64(c_values('.6', 200_000))}" in result.out


def test_an_index_entry_without_a_checksum_is_refused_in_one_line(cli, tmp_path):
    """Every entry has carried its sha256 since the first kept store: one without is not a store this
    version can check, and is refused rather than trusted."""
    run_engine(".6", 100_000, tmp_path, workers=0, keep_all=True)
    body = read_checkpoint(tmp_path)
    del body["history"]["files"][-1]["sha256"]
    write_checkpoint(tmp_path, body)
    result = cli("run", ".6", "--until", 200_000, "--checkpoint", tmp_path, "--keep-values", "--workers", 0)
    assert result.code == 2 and result.err.count("\n") == 1, result.err
    assert "is malformed (KeyError: 'sha256')" in result.err and "left untouched" in result.err


def test_values_proven_anew_that_do_not_hash_to_the_index_are_refused(kept, tmp_path):
    original, reference = kept
    body = read_checkpoint(original)
    store = ValueStore(tmp_path, body["history"]["files"], body["history"].get("sealed", ()))
    entry = store.index[-1]
    assert entry["kind"] == "u8" and entry["mask"] == 0x1EE
    for bit in (1, 2):  # the rare value in its place (the code drops bit 1), another common value
        wrong = reference[entry["first"] : entry["first"] + entry["count"]].copy()
        wrong[7] ^= 1 << bit
        with pytest.raises(CheckpointError, match="do not match the checksum the checkpoint records") as refused:
            store.repair(entry, wrong)
        assert "\n" not in str(refused.value) and entry["file"] in str(refused.value)
        assert not (tmp_path / "values" / entry["file"]).exists()
    store.repair(entry, reference[entry["first"] : entry["first"] + entry["count"]])
    assert (tmp_path / "values" / entry["file"]).read_bytes() == (original / "values" / entry["file"]).read_bytes()
