"""The progress display: one live line that fits a real terminal, plain lines in a log, sane figures."""

import io
import re

import pytest
from terminal import run_in_terminal, screens

import octalgen.progress as progress_module
from octalgen.progress import Progress, compact, duration

# Drives Progress as a long run does: a silent phase first, then values proven in steps.
SCRIPT = r"""
import sys, time
import octalgen.progress
from octalgen.progress import Progress

goal, first, step = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
octalgen.progress.ETA_SETTLE = 1.0  # the running phase below lasts 1.5 s: time enough for an ETA here
progress = Progress(goal, label=".6")
progress.phase("building kernel")
time.sleep(0.8)
progress.phase("running")
for i in range(30):
    progress.update(first + i * step, first + (i + 5) * step, force=i == 29)
    time.sleep(0.05)
time.sleep(0.3)
progress.close()
print("DONE")
"""


@pytest.mark.parametrize("columns, goal", [(80, 10**8), (80, 10**99), (40, 10**8)])
def test_the_live_line_fits_the_terminal_and_leaves_nothing_behind(columns, goal):
    shown = screens(run_in_terminal(columns, SCRIPT, goal, 50_000_000, 2_000_000), columns)
    lines = [rows[0] for rows in shown if rows]
    # One row at every moment: a line wider than the terminal would wrap onto a second row,
    # and a refresh that did not replace the previous line would leave it standing above.
    assert all(len(rows) <= 1 for rows in shown), [rows for rows in shown if len(rows) > 1][:3]
    assert shown[-1] == ["DONE"]
    # The phase shows before any value is proven.
    first_proven = next(i for i, line in enumerate(lines) if "running" in line)
    assert any("building kernel" in line for line in lines[:first_proven])
    assert not any(re.search(r"\d{8}", line) for line in lines), "numbers are compact"
    if columns == 80:
        assert any("proven 108 M" in line for line in lines)
        if goal == 10**8:
            assert any(re.search(r"ETA \d+:\d\d", line) for line in lines)
        else:
            assert any("ETA > 10 years" in line for line in lines)


@pytest.fixture
def clock(monkeypatch):
    """A clock the test moves by hand: ``clock.now``."""

    class Clock:
        now = 1000.0

        def __call__(self):
            return self.now

    fake = Clock()
    monkeypatch.setattr(progress_module, "_clock", fake)
    return fake


def plain(goal, **kwargs):
    stream = io.StringIO()
    return Progress(goal, label=".6", stream=stream, interactive=False, **kwargs), stream


def test_plain_lines_come_every_so_often(clock):
    progress, stream = plain(10**6, every=10)
    progress.phase("running")
    for second in range(1, 26):
        clock.now += 1
        progress.update(second * 10_000, second * 10_000 + 5_000)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # at 10 s and 20 s
    assert lines[1] == (
        "octalgen: .6 running  elapsed 0:20  20.0%  proven to G(200,000)  "
        "produced to G(205,000)  10.0 k values/s  ETA 1:20"
    )
    progress.update(250_000, force=True)
    assert stream.getvalue().splitlines()[-1].startswith("octalgen: .6 running  elapsed 0:25  25.0%")


def test_the_rate_counts_only_this_sessions_values(clock):
    progress, stream = plain(10**9, every=0)
    progress.update(500_000_000)  # resumed: half the run was proven before
    assert "values/s" not in stream.getvalue() and "ETA" not in stream.getvalue()
    for second in range(1, 11):
        clock.now += 1
        progress.update(500_000_000 + second * 100_000)
    assert stream.getvalue().splitlines()[-1].endswith("100 k values/s  ETA 1:23:10")


def test_a_goal_out_of_reach_gets_no_date(clock):
    progress, stream = plain(10**99, every=0)
    progress.update(0)
    for second in range(1, 6):
        clock.now += 1
        progress.update(second * 1_000_000)
    last = stream.getvalue().splitlines()[-1]
    assert last.endswith("1.00 M values/s  ETA > 10 years") and "0.0%" in last


def test_no_eta_from_the_exact_prefix_nor_before_the_kernels_rate_settles(clock):
    """The run of the report: 41.3 k values proven at 1 k/s by the exact prefix, then the
    kernel at 1 M/s.  The prefix's rate would give an ETA of 2:45:59; none is shown until the
    kernel's own rate has been measured for ETA_SETTLE seconds, and then it is the kernel's."""
    progress, stream = plain(10**7, every=0)
    progress.phase("exact prefix", eta=False)
    for second in range(1, 42):
        clock.now += 1
        progress.update(second * 1_000)
    prefix_lines = stream.getvalue().splitlines()
    assert "1.00 k values/s" in prefix_lines[-1]  # the prefix's rate is shown, as what it is ...
    assert not any("ETA" in line for line in prefix_lines)  # ... but predicts nothing
    progress.phase("building kernel")
    clock.now += 2
    progress.phase("running")
    began = clock.now
    for tenth in range(1, 81):  # 8 s of kernel at 1 M values/s, an update every 0.1 s
        clock.now = began + tenth / 10
        progress.update(41_000 + tenth * 100_000)
        has_eta = "ETA" in stream.getvalue().splitlines()[-1]
        assert has_eta == (tenth / 10 >= progress_module.ETA_SETTLE), (tenth, stream.getvalue().splitlines()[-1])
    # From the kernel's rate alone: 10^7 - 8,041,000 values at 1.00 M values/s, about 2 s.
    assert stream.getvalue().splitlines()[-1].endswith("1.00 M values/s  ETA 0:01")


def test_a_rate_from_too_few_steps_gives_no_eta(clock):
    progress, stream = plain(10**6, every=0)
    progress.phase("running")
    progress.update(0)
    clock.now += 10
    progress.update(100_000)  # one step over 10 s: a rate, but not yet an ETA
    assert stream.getvalue().splitlines()[-1].endswith("10.0 k values/s")
    clock.now += 1
    progress.update(110_000)
    assert "ETA" not in stream.getvalue()
    clock.now += 1
    progress.update(120_000)  # the third step
    assert stream.getvalue().splitlines()[-1].endswith("10.0 k values/s  ETA 1:28")


def test_disabled_reports_nothing(clock):
    progress, stream = plain(100, every=0, enabled=False)
    with progress:
        progress.phase("running")
        progress.update(50, force=True)
    assert stream.getvalue() == ""


def test_numbers_and_durations_are_compact():
    assert [compact(n) for n in (0, 999, 1234, 21_000_000, 999_999, 3.2e12, 10**99)] == [
        "0",
        "999",
        "1.23 k",
        "21.0 M",
        "1.00 M",
        "3.20 T",
        "1.00e+99",
    ]
    assert [duration(s) for s in (59, 61, 3600 + 62, 3 * 86400 + 4 * 3600 + 5)] == [
        "0:59",
        "1:01",
        "1:01:02",
        "3 d 4 h",
    ]
