"""A real pseudo-terminal for tests: what a program writes to a screen of a given width."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import pyte


def run_in_terminal(columns: int, script: str, *arguments, timeout: float = 120) -> bytes:
    """Everything the Python ``script`` writes to a pseudo-terminal of ``columns`` x 24.

    The script is run with ``arguments`` as ``sys.argv[1:]``, its stdin, stdout and stderr on the
    terminal and ``COLUMNS``/``LINES`` unset, so that it measures the terminal itself.  It must
    exit with status 0.
    """
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    environment["TERM"] = "xterm-256color"
    child = subprocess.Popen(
        [sys.executable, "-c", script, *map(str, arguments)],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=environment,
        close_fds=True,
    )
    os.close(secondary)
    output = b""
    while True:
        try:
            data = os.read(main, 1 << 16)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        output += data
    os.close(main)
    assert child.wait(timeout=timeout) == 0, output.decode(errors="replace")
    return output


def screens(output: bytes, columns: int, rows: int = 24) -> list[list[str]]:
    """The non-blank rows of a terminal emulator's screen after each redraw (each starts with a CR).

    With ``columns`` wider than the program's terminal, a line the program wrote too wide for
    its terminal shows as a row longer than the terminal instead of wrapping.
    """
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    shown = []
    for piece in re.split(rb"(?=\r)", output):
        stream.feed(piece)
        shown.append([row.rstrip() for row in screen.display if row.strip()])
    return shown
