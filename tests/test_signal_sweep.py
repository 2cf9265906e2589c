"""Ctrl-C and SIGTERM at every moment of a command, sent as a terminal sends them: to the whole
process group (the run, its verifying processes, the C compiler).

Each stop must end with exit status 130 (143), one line on stderr (ending with the command that
resumes, where something was kept), no traceback from any process, no ``failed/`` entry or
staging directory in the build cache, no temporary file or directory left and no process of the
group alive; and the same command must then go on to the right digest.

A moment is recognised from outside, as it happens: the modules the run has loaded
(``/proc/PID/maps``), a compile's staging directory in the cache, a verifying process's command
line, the checkpoint's position, its temporary file being written, the survey's record of
finished games.  The fast suite stops ``run .6 --until 2e6`` (and a survey) at most moments with
Ctrl-C; ``-m slow`` adds the others, and sweeps both signals at every moment to 10^7, checked against
the published digest, printing the table.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from engine_helpers import c_values, octalgen_command

from octalgen.checksum import fnv1a64
from octalgen.engine.checkpoint import read_checkpoint

#: The published digest of G(0) ... G(10^7 - 1) of .6 (shared/README.md), and the fast suite's goal.
DIGEST_1E7 = "05136d7de3d603b8"
FAST_UNTIL = 2_000_000

#: Seconds a moment is waited for before the test fails (a loaded machine starts slowly).
PATIENCE = 120


@dataclass
class Watched:
    """A command started in a process group of its own, and what a trigger may look at."""

    process: subprocess.Popen
    checkpoint: Path
    cache: Path
    survey: Path

    def maps(self) -> str:
        try:
            return Path(f"/proc/{self.process.pid}/maps").read_text()
        except OSError:
            return ""

    def position(self) -> int:
        try:
            body = read_checkpoint(self.checkpoint)
        except Exception:  # noqa: BLE001 - a checkpoint being replaced is read again
            return -1
        return body["position"] if body else -1


def _loaded(name: str, *not_yet: str) -> Callable[[Watched], bool]:
    """The run has loaded the compiled module ``name`` and none of ``not_yet``."""

    def trigger(watched: Watched) -> bool:
        maps = watched.maps()
        return name in maps and not any(other in maps for other in not_yet)

    return trigger


def _compiling(what: str = "") -> Callable[[Watched], bool]:
    """A compile (of an artefact named ``what...``) is under way: its staging directory is in the cache."""

    def trigger(watched: Watched) -> bool:
        try:
            return any(entry.startswith(".staging-" + what) for entry in os.listdir(watched.cache))
        except OSError:
            return False

    return trigger


def _worker_starting(watched: Watched) -> bool:
    """A verifying process has just been started."""
    return any(b"octalgen.engine.worker_process" in _cmdline(pid) for pid in _group(watched.process.pid))


def _proven(at_least: int) -> Callable[[Watched], bool]:
    return lambda watched: watched.position() >= at_least


def _writing_checkpoint(watched: Watched) -> bool:
    """The pipeline runs and the checkpoint's temporary file is being written."""
    return (watched.checkpoint / "checkpoint.json.tmp").exists() and watched.position() >= 100_000


def _games_done(count: int) -> Callable[[Watched], bool]:
    def trigger(watched: Watched) -> bool:
        try:
            return len(watched.survey.with_name(watched.survey.name + ".done.jsonl").read_text().splitlines()) > count
        except OSError:
            return False

    return trigger


@dataclass(frozen=True)
class Moment:
    name: str
    command: str  # "run" or "survey"
    trigger: Callable[[Watched], bool]
    cold: bool = False  # an empty build cache: the command compiles


MOMENTS = [
    Moment("imports", "run", _loaded("_multiarray_umath", "octalgen_scan_")),  # NumPy being imported
    Moment("plan", "run", _loaded("octalgen_scan_", "octalgen_exact_")),
    Moment("first compile, cold cache", "run", _compiling(), cold=True),
    Moment("exact steps", "run", _loaded("octalgen_exact_", "octalgen_kernel_")),
    Moment("kernel compile, cold cache", "run", _compiling("octalgen_kernel_"), cold=True),
    Moment("worker start", "run", _worker_starting),
    Moment("pipeline", "run", _proven(300_000)),
    Moment("checkpoint write", "run", _writing_checkpoint),
    Moment("survey between games", "survey", _games_done(2)),
    Moment("survey compile, cold cache", "survey", _compiling(), cold=True),
]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _group(pgid: int) -> list[int]:
    """The living processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                members.append(int(entry))
    return members


def _shared_memory_files(pid: int) -> list[str]:
    try:
        return [name for name in os.listdir("/dev/shm") if name.startswith("octalgen-") and f"-{pid}-" in name]
    except OSError:
        return []


def _commands(moment: Moment, until: int, checkpoint: Path, survey: Path) -> tuple[list[str], list[str]]:
    """The command stopped at ``moment``, and the one that resumes it (the same, reporting its figures)."""
    if moment.command == "survey":
        command = octalgen_command(
            "-q", "survey", "--digits", "1", "--whole", "0", "--max", "3000", "--workers", "2", "--out", str(survey)
        )
        return command, command
    command = octalgen_command(
        "-q",
        "run",
        ".6",
        "--until",
        str(until),
        "--checkpoint",
        str(checkpoint),
        "--workers",
        "2",
        "--checkpoint-every",
        "0.05",
    )
    return command, [*command, "--json"]


@dataclass
class Stop:
    """What a stop at a moment did, and what the resume found."""

    moment: str
    signal_name: str
    status: int
    lines: list[str]
    kept: str  # what was there to resume from: the checkpoint's position, the survey's games done
    resumed: str  # the digest the resumed run printed (survey: its table, compared to an uninterrupted one)


def stop_and_resume(
    moment: Moment,
    signal_number: int,
    until: int,
    tmp_path: Path,
    warm_cache: Path,
    survey_reference: Callable[[], list] | None = None,
) -> Stop:
    """Start the moment's command in a process group of its own, send ``signal_number`` to the group at
    the moment, check that it ended cleanly, and resume it."""
    checkpoint, survey = tmp_path / "ck", tmp_path / "survey" / "s"
    cache = tmp_path / "cold-cache" if moment.cold else warm_cache
    private_tmp = tmp_path / "tmp"  # where the command's temporary files go: none may be left
    private_tmp.mkdir()
    survey.parent.mkdir()
    environment = {**os.environ, "OCTALGEN_CACHE_DIR": str(cache), "TMPDIR": str(private_tmp)}
    command, resume = _commands(moment, until, checkpoint, survey)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment, start_new_session=True
    )  # a process group of its own, as a terminal's job
    watched = Watched(process, checkpoint, cache, survey)
    deadline = time.monotonic() + PATIENCE
    while not moment.trigger(watched):
        assert process.poll() is None, f"{moment.name}: the command ended before the moment"
        assert time.monotonic() < deadline, f"{moment.name}: the moment did not come"
        time.sleep(0.001)
    os.killpg(process.pid, signal_number)
    err = process.communicate(timeout=PATIENCE)[1]
    lines = [line for line in err.splitlines() if line.strip()]
    name = signal.Signals(signal_number).name
    where = f"{moment.name}, {name}: {err!r}"
    assert process.returncode == 128 + signal_number, where
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, where
    assert len(lines) == 1 and lines[0].startswith("octalgen: stopped by "), where
    kept = _kept(moment, checkpoint, survey)
    assert ("resume with:" in lines[0]) == bool(kept), where
    # Nothing left behind: processes, the cache's failed builds and staging directories, temporary files.
    gone = time.monotonic() + 10
    while _group(process.pid) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not _group(process.pid), f"{where}: processes left {_group(process.pid)}"
    if cache.exists():
        assert not (cache / "failed").exists(), where
        assert not [e for e in os.listdir(cache) if e.startswith(".staging-")], where
    assert not os.listdir(private_tmp), f"{where}: left {os.listdir(private_tmp)}"
    assert not _shared_memory_files(process.pid), where
    # The same command goes on to the end.
    environment["OCTALGEN_CACHE_DIR"] = str(warm_cache)
    finished = subprocess.run(
        resume, check=False, capture_output=True, text=True, env=environment, timeout=20 * PATIENCE
    )
    assert finished.returncode == 0, finished.stderr
    if moment.command == "run":
        resumed = json.loads(finished.stdout)["fnv1a64"]
    else:
        table = json.loads(survey.with_suffix(".json").read_text())["games"]
        resumed = "same table" if _comparable(table) == survey_reference() else "another table"
    return Stop(moment.name, name, process.returncode, lines, kept, resumed)


def _kept(moment: Moment, checkpoint: Path, survey: Path) -> str:
    """What a stopped command kept to resume from ("" for nothing)."""
    if moment.command == "run":
        body = read_checkpoint(checkpoint)
        return f"G(0) ... G({body['position'] - 1})" if body else ""
    record = survey.with_name(survey.name + ".done.jsonl")
    return f"{len(record.read_text().splitlines()) - 1} games" if record.exists() else ""


def _comparable(games: list) -> list:
    return [{key: value for key, value in game.items() if key != "seconds"} for game in games]


@pytest.fixture(scope="module")
def survey_table(tmp_path_factory):
    """The survey's table from an uninterrupted run, computed once (when first asked for)."""
    table = []

    def reference() -> list:
        if not table:
            out = tmp_path_factory.mktemp("survey-reference") / "s"
            subprocess.run(
                _commands(MOMENTS[-1], 0, out, out)[0], check=True, capture_output=True, timeout=20 * PATIENCE
            )
            table.append(_comparable(json.loads(out.with_suffix(".json").read_text())["games"]))
        return table[0]

    return reference


@pytest.fixture(scope="module")
def fast_digest():
    return fnv1a64(c_values(".6", FAST_UNTIL))


#: Moments the fast suite leaves to the slow sweep: the run's handlers are the same as in the pipeline.
SLOW_ONLY = ("plan", "exact steps", "checkpoint write")


@pytest.mark.parametrize(
    "moment",
    [pytest.param(m, marks=pytest.mark.slow) if m.name in SLOW_ONLY else m for m in MOMENTS],
    ids=[m.name for m in MOMENTS],
)
def test_ctrl_c_to_the_process_group_at_any_moment_ends_cleanly_and_resumes(
    moment, tmp_path, isolated_build_cache, fast_digest, survey_table
):
    stop = stop_and_resume(moment, signal.SIGINT, FAST_UNTIL, tmp_path, isolated_build_cache, survey_table)
    assert stop.resumed == (fast_digest if moment.command == "run" else "same table")


@pytest.mark.slow
def test_the_signal_sweep_to_ten_million(tmp_path, isolated_build_cache, survey_table, capsys):
    """Both signals at every moment, each resumed to 10^7 and checked against the published digest;
    prints the table (``pytest -m slow -s``)."""
    rows = []
    for number in (signal.SIGINT, signal.SIGTERM):
        for index, moment in enumerate(MOMENTS):
            place = tmp_path / f"{number}-{index}"
            place.mkdir()
            stop = stop_and_resume(moment, number, 10_000_000, place, isolated_build_cache, survey_table)
            assert stop.resumed == (DIGEST_1E7 if moment.command == "run" else "same table")
            rows.append(stop)
    with capsys.disabled():
        print("\n| moment | signal | exit status | lines on stderr | kept (resume line) | resumed to |")
        print("| --- | --- | --- | --- | --- | --- |")
        for stop in rows:
            print(
                f"| {stop.moment} | {stop.signal_name} | {stop.status} | {len(stop.lines)} | "
                f"{stop.kept + ' (yes)' if stop.kept else 'nothing (no)'} | {stop.resumed} |"
            )
