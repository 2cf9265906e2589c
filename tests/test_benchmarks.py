"""The benchmark scripts that compare this checkout with an earlier commit: each version must run its own code."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout (the baseline's history)"
)
def test_values_against_a_commit_runs_each_version_from_its_own_files():
    # Run from the checkout, as its docstring says: there `python -m octalgen` would import the
    # checkout's package for both versions, and an editable install would give both its templates.
    cpu = min(os.sched_getaffinity(0))
    command = ["benchmarks/values_vs_baseline.py", ".167", "-n", "2e4", "--baseline", "HEAD", "--rounds", "1"]
    done = subprocess.run(
        [sys.executable, *command, "--cpu", str(cpu)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    where = {line.split(":")[0]: line for line in lines if ", templates " in line}
    assert set(where) == {"HEAD", "this tree"}
    package, templates = where["HEAD"].split(": ", 1)[1].split(", templates ")
    assert not Path(package).is_relative_to(ROOT) and not Path(templates).is_relative_to(ROOT)
    assert Path(templates) == Path(package).parent / "templates"
    package, templates = where["this tree"].split(": ", 1)[1].split(", templates ")
    assert Path(package) == ROOT / "octalgen" / "__init__.py" and Path(templates).is_relative_to(ROOT)
    runs = [line.split() for line in lines if "CPU-s" in line and "median" not in line and "seconds" not in line]
    assert [run[1] for run in runs] == ["HEAD", "this"] and len({run[-1] for run in runs}) == 1
    assert any("median CPU-s: HEAD" in line for line in lines)
