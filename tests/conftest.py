"""Shared fixtures: a build cache of the suite's own, known answers loaded from tests/data and an
in-process CLI runner."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from octalgen.cli import main

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session", autouse=True)
def isolated_build_cache(tmp_path_factory):
    """Point ``$OCTALGEN_CACHE_DIR`` at a fresh directory for the whole session.

    The suite must neither read nor write the user's cache: every compiled kernel, scanner and
    rendered template it uses is built by the suite itself, so a stale or broken artefact left by
    an earlier octalgen cannot make a test pass or fail.  Set in ``os.environ`` so that the
    subprocesses the tests start (``python -m octalgen ...``) inherit it; tests that need a cache
    of their own still ``monkeypatch.setenv`` it, and monkeypatch restores this one after them.
    """
    previous = os.environ.get("OCTALGEN_CACHE_DIR")
    directory = tmp_path_factory.mktemp("build-cache")
    os.environ["OCTALGEN_CACHE_DIR"] = str(directory)
    yield directory
    if previous is None:
        os.environ.pop("OCTALGEN_CACHE_DIR", None)
    else:
        os.environ["OCTALGEN_CACHE_DIR"] = previous


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


@pytest.fixture
def kernel_fault(monkeypatch):
    """Flip one bit of the speculative kernel's first output chunk, 5000 heaps in.

    A fault the rare table cannot explain (e.g. a bit flipped in memory): the verifier must
    catch it and the run correct the value.  Returns the list that receives the heap size.
    """
    from octalgen.cpu.kernel import SpeculativeKernel

    fill = SpeculativeKernel.fill
    planted = []

    def faulty_fill(self, buffer, first_heap, threads=1, patient=False):
        fill(self, buffer, first_heap, threads, patient)
        if not planted and len(buffer) > self.plan.window + 5000:
            buffer[self.plan.window + 5000] ^= 1
            planted.append(first_heap + 5000)

    monkeypatch.setattr(SpeculativeKernel, "fill", faulty_fill)
    return planted


@pytest.fixture(scope="session")
def oeis_sequences():
    """OEIS data lines of nim-sequences (tests/data/oeis.yaml)."""
    return yaml.safe_load((DATA / "oeis.yaml").read_text())
