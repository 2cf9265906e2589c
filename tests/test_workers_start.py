"""The verifying processes start the same whoever calls: a script without a ``__main__`` guard,
``python -c``, a here-document on stdin, IPython and a Jupyter kernel all compute
``values(".6", 3_000_000)`` with two workers that really ran tasks, each printing the standard
digest of those values, which the command line's values (computed without workers) agree with.
A worker that cannot start is one line saying why."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from octalgen.checksum import fnv1a64

COUNT = 3_000_000

#: The user's program: no ``if __name__ == "__main__":`` guard, the octalgen logger's debugging lines
#: on (the worker processes say how many tasks each ran as they close).
PROGRAM = f"""\
import logging
logging.basicConfig(level=logging.DEBUG, format="%(message)s", force=True)
import octalgen
from octalgen.checksum import fnv1a64
print("digest", fnv1a64(octalgen.values(".6", {COUNT}, workers=2)))
"""


@pytest.fixture(scope="module")
def cli_digest(tmp_path_factory) -> str:
    """The digest of the values ``octalgen values`` writes, computed in its own process without workers."""
    out = tmp_path_factory.mktemp("values") / "values.u16"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "octalgen",
            "-q",
            "values",
            ".6",
            "-n",
            str(COUNT),
            "--workers",
            "0",
            "--format",
            "u16",
            "-o",
            str(out),
        ],
        check=True,
        timeout=600,
    )
    values = np.fromfile(out, dtype="<u2")
    assert len(values) == COUNT
    return fnv1a64(values)


def _check(output: str, cli_digest: str) -> None:
    """Two worker processes or more each ran a task, and the digest printed is the command line's."""
    tasks = [int(n) for n in re.findall(r"pid \d+ ran (\d+) tasks", output)]
    assert len(tasks) >= 2 and all(n >= 1 for n in tasks), output
    assert re.findall(r"digest ([0-9a-f]{16})\b", output) == [cli_digest], output
    assert "Traceback" not in output, output


def _run(command: list[str], cwd: Path, **kwargs) -> str:
    done = subprocess.run(command, check=False, cwd=cwd, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_an_unguarded_script_computes_with_workers(tmp_path, cli_digest):
    script = tmp_path / "officers.py"
    script.write_text(PROGRAM)
    _check(_run([sys.executable, str(script)], tmp_path), cli_digest)


def test_python_c_computes_with_workers(tmp_path, cli_digest):
    _check(_run([sys.executable, "-c", PROGRAM], tmp_path), cli_digest)


def test_a_here_document_on_stdin_computes_with_workers(tmp_path, cli_digest):
    _check(_run([sys.executable, "-"], tmp_path, input=PROGRAM), cli_digest)


def test_an_ipython_session_computes_with_workers(tmp_path, cli_digest):
    pytest.importorskip("IPython")
    _check(
        _run(
            [
                sys.executable,
                "-m",
                "IPython",
                "--no-banner",
                "--colors=nocolor",
                "--HistoryManager.enabled=False",
                "--quick",
            ],
            tmp_path,
            input=PROGRAM,
        ),
        cli_digest,
    )


def test_a_jupyter_kernel_computes_with_workers(tmp_path, cli_digest):
    pytest.importorskip("ipykernel")
    manager = pytest.importorskip("jupyter_client.manager")
    kernel, client = manager.start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    said = []

    def hear(message):
        if message["msg_type"] == "stream":
            said.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            said.append("\n".join(message["content"]["traceback"]))

    try:
        reply = client.execute_interactive(PROGRAM, output_hook=hear, timeout=600)
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", "".join(said)
    _check("".join(said), cli_digest)


def test_a_worker_that_cannot_start_says_why_in_one_line(tmp_path):
    """A Python that cannot run the workers (here a stand-in that fails as a broken install would)."""
    broken = tmp_path / "python"
    broken.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
        "echo \"ModuleNotFoundError: No module named 'numpy'\" >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    program = f"import sys; sys.executable = {str(broken)!r}\n" + PROGRAM
    done = subprocess.run(
        [sys.executable, "-c", program], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(
        "octalgen.errors.ComputationError: a verifying process could not start: "
        "ModuleNotFoundError: No module named 'numpy' ("
    ), done.stderr
    assert last.endswith(f"({broken} -c ...)")
    # The command line says it in one line.
    script = tmp_path / "run.py"
    script.write_text(
        f"import sys; sys.executable = {str(broken)!r}\nfrom octalgen.cli import main\n"
        "sys.exit(main(['-q', 'run', '.6', '--until', '3e6', '--workers', '2']))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("octalgen: error: a verifying process could not start: ModuleNotFoundError")
