"""Signals to a run started as a separate process: Ctrl-C and SIGTERM stop it with one line and a
checkpoint to resume from, a SIGTERM to its whole process group is a clean stop, and a killed run
leaves none of its verifying processes behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from engine_helpers import _command, _position, c_values, octalgen_command, run_engine

from octalgen.checksum import fnv1a64
from octalgen.engine.checkpoint import read_checkpoint


def _descendants(pid: int) -> set[int]:
    """Every living process whose chain of parents leads to ``pid``."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_killed_run_leaves_no_process_behind(tmp_path):
    process = subprocess.Popen(
        _command(tmp_path, 3_000_000, "--workers", "2"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    while process.poll() is None and _position(tmp_path) < 100_000:
        time.sleep(0.05)
    children = _descendants(process.pid)
    assert len(children) >= 2  # the verifying processes
    process.kill()  # the run alone: its workers get no signal from us
    process.wait()
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in children if _alive(pid)]


@pytest.mark.parametrize("signal_number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_stop_with_one_line_and_the_run_resumes(tmp_path, signal_number, status):
    # A goal far out of reach: the signal comes while the run is at work.
    command = octalgen_command(
        "run",
        ".6",
        "--until",
        "1e9",
        "--checkpoint",
        tmp_path,
        "--workers",
        "1",
        "--chunk",
        1 << 16,
        "--checkpoint-every",
        "0.5",
    )
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while process.poll() is None and _position(tmp_path) < 50_000:
        time.sleep(0.05)
    time.sleep(1)
    process.send_signal(signal_number)
    out, err = process.communicate(timeout=30)  # a hang fails here; the time taken is measured elsewhere
    assert process.returncode == status, err
    last = err.strip().splitlines()[-1]
    proven = read_checkpoint(tmp_path)["position"]
    assert last.startswith("octalgen: stopped by ") and f"G(0) ... G({proven - 1}) proven" in last
    assert f"checkpoint in {tmp_path}" in last and "resume with: octalgen run .6 --until 1e9" in last
    assert "Traceback" not in err and out == ""
    resumed = run_engine(".6", proven + 10_000, tmp_path, workers=0)
    assert resumed.statistics.digest == fnv1a64(c_values(".6", proven + 10_000))


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_second_signal_as_the_command_ends_gives_its_status_not_a_death_by_signal(tmp_path, signal_number):
    # Ctrl-C to the process group during a compile: the compiler dies of it, the build raises
    # KeyboardInterrupt and the command says so, and the group's signal may reach this process only
    # then.  Here it comes as the command's last line is written.
    script = tmp_path / "second.py"
    script.write_text(
        "import signal, sys\n"
        "import octalgen.cli as cli\n"
        "from octalgen.__main__ import main\n"
        "said = cli.report\n"
        "def report(*lines):\n"
        "    said(*lines)\n"
        f"    signal.raise_signal({int(signal_number)})\n"
        "cli.report = report\n"
        f"sys.argv = ['octalgen', 'values', '.6', '-n', '10', '--table', {str(tmp_path / 'missing.yaml')!r}]\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run([sys.executable, script], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 128 + signal_number, done.stderr
    assert done.stderr.startswith("octalgen: error: ") and len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_sigterm_to_the_whole_process_group_is_a_clean_stop(tmp_path):
    # timeout(1), kill -- -PGID and batch systems signal the run's process group: its verifying
    # processes too.  They ignore it (the run kills them as it stops), so the run stops as for a
    # SIGTERM of its own, not with "a verifying process died".
    command = octalgen_command(
        "run",
        ".6",
        "--until",
        "1e9",
        "--checkpoint",
        tmp_path,
        "--workers",
        "2",
        "--chunk",
        1 << 16,
        "--checkpoint-every",
        "0.2",
    )
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )  # a process group of its own: the run and its workers
    while process.poll() is None and _position(tmp_path) < 50_000:  # past the exact prefix: workers at work
        time.sleep(0.05)
    workers = _descendants(process.pid)
    assert len(workers) >= 2
    for pid in workers:  # a worker alone: it lives on
        os.kill(pid, signal.SIGTERM)
    time.sleep(0.2)
    assert process.poll() is None and all(_alive(pid) for pid in workers)
    os.killpg(process.pid, signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 143, err
    last = err.strip().splitlines()[-1]
    proven = read_checkpoint(tmp_path)["position"]
    assert last.startswith("octalgen: stopped by ") and f"G(0) ... G({proven - 1}) proven" in last, err
    assert "Traceback" not in err and "died" not in err and out == ""
    resumed = run_engine(".6", proven + 10_000, tmp_path, workers=0)
    assert resumed.statistics.digest == fnv1a64(c_values(".6", proven + 10_000))
