"""Commands that build no hardware start without Amaranth (it is imported only to build a circuit).

Each command runs in a fresh interpreter in which ``import amaranth`` fails, as where it is not
installed: any import of it on the way, however indirect, makes the command fail.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

#: Runs octalgen's main() with Amaranth unimportable; exits with its status.
WITHOUT_AMARANTH = """\
import sys
sys.modules["amaranth"] = None  # `import amaranth` raises ImportError from here on
from octalgen.cli import main
sys.exit(main(sys.argv[1:]))
"""


def python_c(code: str, *args: str, cwd) -> subprocess.CompletedProcess:
    """``python -c CODE ARGS`` in a fresh interpreter, its output captured."""
    return subprocess.run(
        [sys.executable, "-c", code, *args], check=False, capture_output=True, text=True, timeout=120, cwd=cwd
    )


def without_amaranth(*args: str, cwd) -> subprocess.CompletedProcess:
    return python_c(WITHOUT_AMARANTH, *args, cwd=cwd)


def test_values_start_without_amaranth(tmp_path, oeis_sequences):
    """`octalgen values` prints the values of .6 (OEIS A046695) with Amaranth unimportable."""
    officers = next(entry for entry in oeis_sequences if entry["game"] == ".6")
    assert officers["offset"] == 0
    result = without_amaranth("values", ".6", "-n", "20", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [int(line) for line in result.stdout.split()] == officers["data"][:20]


@pytest.mark.parametrize("args", [("--help",), ("synth", "--help"), ("info", ".6"), ("run", ".6", "--until", "2000")])
def test_commands_start_without_amaranth(tmp_path, args):
    """Help (synth's lists its boards from a plain table), `info` and a short `run`."""
    result = without_amaranth(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    if args[0] == "synth":
        assert "ulx3s-85f" in result.stdout


#: Runs octalgen's main(), then prints the sub-commands whose modules were imported.
COMMAND_MODULES_AFTER = """\
import sys
from octalgen.cli import COMMANDS, main
status = main(sys.argv[1:])
print(" ".join(name for name in COMMANDS if f"octalgen.cli.{name}" in sys.modules))
sys.exit(status)
"""


@pytest.mark.parametrize("args", [("values", ".6", "-n", "3"), ("-q", "info", ".6")])
def test_a_command_imports_no_other_commands_module(tmp_path, args):
    """A command line is parsed by its own command's parser: the other commands' modules, and what
    they import to describe their options (the boards' tables, the benchmarks), are never loaded."""
    done = python_c(COMMAND_MODULES_AFTER, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == next(a for a in args if not a.startswith("-"))


def test_building_hardware_needs_amaranth(tmp_path):
    """The check above can fail: a command that builds a circuit does import Amaranth."""
    result = without_amaranth("emit", "hdl", ".356", "-o", str(tmp_path), cwd=tmp_path)
    assert result.returncode != 0
    assert "amaranth" in result.stderr.lower()


#: Prints the digest of G(0) ... G(59,999) of .6 from octalgen's API, and whether Jinja was imported.
VALUES_AND_JINJA = """\
import sys
import octalgen
from octalgen.checksum import fnv1a64
print(fnv1a64(octalgen.values(".6", 60_000)), "jinja2" in sys.modules)
"""


def test_code_rendered_once_is_read_back_without_jinja(tmp_path, monkeypatch):
    """Every command renders its generated code (the source is the key of its module); the text is
    kept, so that a later command neither imports Jinja nor renders, and computes the same values."""
    from engine_helpers import c_values

    from octalgen.checksum import fnv1a64

    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path / "cache"))
    first, again = (python_c(VALUES_AND_JINJA, cwd=tmp_path) for _ in range(2))
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    digest = str(fnv1a64(c_values(".6", 60_000)))
    assert first.stdout.split() == [digest, "True"] and again.stdout.split() == [digest, "False"]


def test_the_default_backend_is_found_without_the_gpus_modules(tmp_path):
    """The fastest exact backend that can run is the default: the CPU's is asked first, and the GPU's
    slower one (its runtime, plans and kernels, to find whether it could run) is never imported."""
    code = "import sys\nfrom octalgen.backends import get_backend as b\nprint(b().name, 'octalgen.cuda' in sys.modules)"
    done = python_c(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["c", "False"]
