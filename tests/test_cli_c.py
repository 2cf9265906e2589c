"""``octalgen emit c``, ``octalgen bench`` and ``values --backend c`` on the command line."""

import logging
import subprocess
from pathlib import Path

import numpy as np
import pytest

from octalgen.cli.emit_c import units
from octalgen.game import parse_game
from octalgen.rare import RareTable, shipped_table

OFFICERS_20 = [0, 0, 1, 2, 0, 1, 2, 3, 1, 2, 3, 4, 0, 3, 4, 2, 1, 3, 2, 1]
GENERATED = Path(__file__).parent.parent / "generated"


def test_generated_officers_is_current():
    # generated/ holds what `octalgen emit c .6` writes now; regenerate it when this fails.
    for unit in units(parse_game(".6")):
        for suffix, text in ((".c", unit.standalone), (".h", unit.header)):
            path = GENERATED / "0.6" / (unit.name + suffix)
            assert path.read_text() == text, f"{path} is stale: run `octalgen emit c .6`"


def test_emit_writes_and_prints_paths(cli, tmp_path):
    result = cli("emit", "c", ".6", "-o", tmp_path)
    assert result.code == 0
    written = [Path(line) for line in result.out.split()]
    assert [p.name for p in written] == [
        "octalgen_exact.c",
        "octalgen_exact.h",
        "octalgen_kernel.c",
        "octalgen_kernel.h",
    ]
    assert all(p.parent == tmp_path / "0.6" and p.is_file() for p in written)
    kernel = written[2].read_text()
    assert f"rare table: {shipped_table('.6').digest}" in kernel and "timestamp" not in kernel
    assert "storage: u8" in kernel and "terms: 1584, window 20628, first heap 41256" in kernel


def test_emitted_c_compiles_with_the_flags_its_header_names(cli, tmp_path):
    """Each emitted file says how to compile it on its own (C11 or GNU C11); it does, without warnings."""
    from octalgen.build import find_compiler

    cli("emit", "c", ".16", "-o", tmp_path, "--threads", 2)
    for path in sorted((tmp_path / "0.16").glob("*.c")):
        line = next(line for line in path.read_text().splitlines() if line.startswith(" * compile: cc "))
        flags = line.split(" cc ", 1)[1].split()
        assert flags[-2:] == ["-c", path.name] and "-std=c11" in flags
        for std in ("-std=c11", "-std=gnu11"):
            command = [
                *find_compiler(),
                *[std if f == "-std=c11" else f for f in flags[:-2]],
                "-Wall",
                "-Wextra",
                "-Werror",
                "-c",
                str(path),
                "-o",
                str(tmp_path / "out.o"),
            ]
            done = subprocess.run(command, check=False, capture_output=True, text=True)
            assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr}"


def test_emit_is_reproducible(cli, tmp_path):
    cli("emit", "c", ".16", "-o", tmp_path / "a", "--threads", 4)
    cli("emit", "c", ".16", "-o", tmp_path / "b", "--threads", 4)
    for path in (tmp_path / "a" / "0.16").iterdir():
        assert path.read_bytes() == (tmp_path / "b" / "0.16" / path.name).read_bytes()
    assert "threads: 1 to 4" in (tmp_path / "a" / "0.16" / "octalgen_kernel.c").read_text()


def test_emit_with_a_table_file(cli, tmp_path, caplog):
    table = shipped_table(".16")
    damaged = RareTable(table.game, table.mask, tuple(e for e in table.entries if e[0] != 1244), table.exact_to)
    damaged.save(tmp_path / "t.yaml")
    result = cli("emit", "c", ".16", "-o", tmp_path, "--table", tmp_path / "t.yaml")
    assert result.code == 0
    # The table is a hint: it is reconciled with the exact values before the kernel's first heap.
    kernel = (tmp_path / "0.16" / "octalgen_kernel.c").read_text()
    assert f"rare table: {table.digest}" in kernel
    assert f"rare table lacks G(1244) = {dict(table.entries)[1244]}" in caplog.text


def test_emit_for_a_game_without_sparse_space(cli, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="octalgen"):
        result = cli("emit", "c", ".07", "-o", tmp_path)
    assert result.code == 0
    assert sorted(p.name for p in (tmp_path / "0.07").iterdir()) == ["octalgen_exact.c", "octalgen_exact.h"]
    assert "no speculative kernel" in caplog.text


def test_values_backend_c(cli, caplog):
    result = cli("values", ".6", "-n", 20, "--backend", "c")
    assert result.code == 0 and [int(x) for x in result.out.split()] == OFFICERS_20
    assert "NOT proven" not in caplog.text


def test_values_backend_c_speculative_says_so(cli, tmp_path, caplog):
    out = tmp_path / "v.u16"
    result = cli(
        "values", ".6", "-n", 50_000, "--backend", "c-speculative", "--format", "u16", "--threads", 1, "-o", out
    )
    assert result.code == 0 and "NOT proven" in caplog.text
    values = np.fromfile(out, "<u2")
    assert len(values) == 50_000 and values[:20].tolist() == OFFICERS_20


def test_values_without_compiler_is_one_line(cli, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    result = cli("values", ".6", "-n", 5, "--backend", "c")
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1 and "set CC" in result.err and "Traceback" not in result.err


def test_bench_reports_every_figure(cli):
    """Every row, the verifier's options scanned per heap and time per option, all within 80 columns."""
    result = cli("bench", ".16", "-n", 100_000, "--threads", 2)
    assert result.code == 0, result.err
    for label in (
        "speculative kernel, 1 thread",
        "speculative kernel, 2 threads",
        "naive C",
        "verifier, 1 process",
        "options/heap",
        "ns an option scanned",
        "verifier, plain C proof scan",
        "exact --backend c, 2 threads",
        "Python reference",
        "all agree",
        "load average",
    ):
        assert label in result.out
    assert result.out.count("M values/s") == 7
    assert max(map(len, result.out.splitlines())) <= 80, result.out  # a report that fits a terminal


@pytest.mark.parametrize("args", [("bench", ".07", "-n", 1000), ("emit", "c", ".6", "--threads", 0)])
def test_bench_and_emit_refuse_bad_requests(cli, args):
    result = cli(*args)
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1
