"""Shared fixtures: known answers loaded from tests/data and an in-process CLI runner."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from octalgen.cli import main

DATA = Path(__file__).parent / "data"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsysbinary):
    """Run ``octalgen ARGS`` in-process; returns exit code, stdout and stderr as text."""

    def run(*args) -> CliResult:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors and --help
            code = exc.code
        captured = capsysbinary.readouterr()
        return CliResult(code, captured.out.decode(), captured.err.decode())

    return run


@pytest.fixture(scope="session")
def oeis_sequences():
    """OEIS data lines of nim-sequences (tests/data/oeis.yaml)."""
    return yaml.safe_load((DATA / "oeis.yaml").read_text())
