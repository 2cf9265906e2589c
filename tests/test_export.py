"""``octalgen export``: kept values read back, checked, in every format, against the reference.

Also the other files of values and counts: ``values --format bfile`` and ``stats``' CSV.
"""

import io
import shutil

import numpy as np
import pytest

from octalgen.cli import main
from octalgen.engine.kept_values import KeptValues
from octalgen.plan import Encoding
from octalgen.reference import exact_values

# .356 keeps its values in one-byte codes (bit 0 of mask 0x1b dropped) from G(90) on: the run writes
# a u16 file (the exact values, rare ones among them) and u8 files, and stops once its period is proven.
GAME = ".356"


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """(directory, N, the reference's G(0) ... G(N-1)) of a run with --keep-values."""
    directory = tmp_path_factory.mktemp("kept")
    assert (
        main(
            [
                "-q",
                "run",
                GAME,
                "--until",
                "40000",
                "--checkpoint",
                str(directory),
                "--keep-values",
                "--workers",
                "0",
                "--chunk",
                "8192",
            ]
        )
        == 0
    )
    files = sorted(p.name for p in (directory / "values").iterdir())
    assert files[0] == "G000000000000000.u16" and len(files) >= 2 and files[-1].endswith(".u8")
    count = KeptValues(directory).stop
    assert count == 90 + sum(p.stat().st_size for p in (directory / "values").glob("*.u8"))
    return directory, count, np.asarray(exact_values(GAME, count))


def test_text_of_every_kept_value(cli, kept):
    directory, _count, reference = kept
    result = cli("export", directory)
    assert result.code == 0 and result.err == ""
    assert [int(v) for v in result.out.split()] == reference.tolist()


def test_a_range_as_u16(cli, kept, tmp_path):
    directory, _count, reference = kept
    out = tmp_path / "range.u16"
    result = cli("export", directory, "--start", 8000, "-n", 9000, "--format", "u16", "-o", out)
    assert result.code == 0 and result.out == ""
    assert np.array_equal(np.fromfile(out, dtype="<u2"), reference[8000:17000])
    assert not list(tmp_path.glob("*.partial"))


def test_npy_to_a_file_and_to_stdout(cli, kept, tmp_path, capsysbinary):
    directory, _count, reference = kept
    out = tmp_path / "values.npy"
    assert cli("export", directory, "--format", "npy", "-o", out).code == 0
    saved = np.load(out)
    assert saved.dtype == np.dtype("<u2") and np.array_equal(saved, reference)
    code = main(["export", str(directory), "--start", "85", "-n", "10", "--format", "npy"])
    streamed = np.load(io.BytesIO(capsysbinary.readouterr().out))
    assert code == 0 and np.array_equal(streamed, reference[85:95])  # across the u16 / u8 boundary


def one_line_error(result, code, message):
    assert result.code == code, result
    assert result.err.count("\n") == 1 and message in result.err, result.err


def test_a_corrupt_chunk_is_refused_and_nothing_is_written(cli, kept, tmp_path):
    directory, _count, _reference = kept
    copy = tmp_path / "run"
    shutil.copytree(directory, copy)
    chunk = sorted((copy / "values").glob("*.u8"))[-1]
    data = bytearray(chunk.read_bytes())
    data[100] ^= 1
    chunk.write_bytes(bytes(data))
    out = tmp_path / "values.u16"
    one_line_error(cli("export", copy, "--format", "u16", "-o", out), 2, "fail their checksum")
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
    # The first values lie in an intact file, before the corrupt one: stdout gets none of them either.
    printed = cli("export", copy, "-n", 10)
    one_line_error(printed, 2, "fail their checksum")
    assert printed.out == ""


def test_values_that_do_not_match_the_runs_digest_are_refused(cli, kept, tmp_path, monkeypatch):
    directory, _count, _reference = kept
    decode = Encoding.decode_array

    def wrong_decoding(self, codes, first=None):  # a decoding bug: one value off, every file still intact
        values = decode(self, codes, first)
        values[len(values) // 2] ^= 1
        return values

    monkeypatch.setattr(Encoding, "decode_array", wrong_decoding)
    out = tmp_path / "values.txt"
    one_line_error(cli("export", directory, "-o", out), 1, "but the run proved")
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
    printed = cli("export", directory, "--format", "bfile")
    one_line_error(printed, 1, "but the run proved")
    assert printed.out == ""


def bfile_pairs(text: str) -> list[tuple[int, int]]:
    """The ``n a(n)`` lines of an OEIS b-file, checked to be exactly two decimals each."""
    pairs = []
    for line in text.splitlines():
        n, value = line.split(" ")
        pairs.append((int(n), int(value)))
    return pairs


def test_export_as_a_bfile(cli, kept, tmp_path):
    directory, _count, reference = kept
    result = cli("export", directory, "--start", 85, "-n", 10, "--format", "bfile")  # across u16 / u8
    assert result.code == 0 and result.out.endswith("\n")
    assert bfile_pairs(result.out) == [(n, int(reference[n])) for n in range(85, 95)]
    out = tmp_path / "b.txt"
    assert cli("export", directory, "--format", "bfile", "-o", out).code == 0
    assert bfile_pairs(out.read_text()) == list(enumerate(reference.tolist()))


def test_values_as_a_bfile(cli, oeis_sequences, tmp_path):
    for entry in oeis_sequences[:3]:  # offset 0 or 1: n is the heap, as OEIS numbers the terms
        data, offset = entry["data"], entry["offset"]
        result = cli("values", entry["game"], "-n", len(data), "--start", offset, "--format", "bfile")
        assert result.code == 0 and bfile_pairs(result.out) == list(enumerate(data, start=offset)), entry["oeis"]
    out = tmp_path / "b356.txt"
    assert cli("values", GAME, "-n", 3000, "--start", 20000, "--format", "bfile", "-o", out).code == 0
    expected = exact_values(GAME, 23000)[20000:].tolist()
    assert bfile_pairs(out.read_text()) == list(enumerate(expected, start=20000))


def expected_csv(reference: np.ndarray) -> list[str]:
    """``value,count,first_heap`` rows of G(0) ... G(N-1), from the values themselves."""
    values, first, counts = np.unique(reference, return_index=True, return_counts=True)
    return ["value,count,first_heap"] + [f"{v},{c},{f}" for v, c, f in zip(values, counts, first)]


def test_stats_writes_the_counts_beside_the_plot(cli, kept, tmp_path):
    pytest.importorskip("matplotlib")
    directory, _count, reference = kept
    plot = tmp_path / "hist.png"
    result = cli("stats", directory, "--plot", plot)
    assert result.code == 0, result.err
    assert f"wrote the histogram to {plot} and its counts to {tmp_path / 'hist.csv'}" in result.err
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "hist.csv").read_text().splitlines() == expected_csv(reference)


def test_stats_csv_alone(cli, kept, tmp_path):
    directory, _count, reference = kept
    out = tmp_path / "counts.csv"
    result = cli("stats", directory, "--csv", out)
    assert result.code == 0 and f"wrote the counts to {out}" in result.err
    assert out.read_text().splitlines() == expected_csv(reference)
    one_line_error(cli("stats", directory, "--plot", tmp_path / "h.csv"), 2, "would be overwritten by the counts")
    assert not (tmp_path / "h.csv").exists()
    # Both paths are checked before either file is written.
    unwritable = tmp_path / "missing" / "counts.csv"
    one_line_error(cli("stats", directory, "--plot", tmp_path / "p.png", "--csv", unwritable), 2, "does not exist")
    assert not (tmp_path / "p.png").exists()


def test_bad_requests_are_one_line(cli, kept, tmp_path):
    directory, count, _reference = kept
    one_line_error(
        cli("export", directory, "--start", count - 5, "-n", 10),
        2,
        f"kept G(0) ... G({count - 1}); G({count - 5}) ... G({count + 4}) goes beyond it",
    )
    one_line_error(cli("export", directory, "-n", 0), 2, "-n 0 asks for no values")
    one_line_error(cli("export", tmp_path / "missing"), 2, "no such directory")
    one_line_error(cli("export", tmp_path), 2, "holds no run checkpoint")
    unkept = tmp_path / "unkept"
    assert cli("-q", "run", GAME, "--until", 2000, "--checkpoint", unkept, "--workers", 0).code == 0
    one_line_error(cli("export", unkept), 2, "did not keep its values")
