"""``python -m octalgen`` and the ``octalgen`` command: :func:`main`."""

import os
import signal
import sys


def main() -> int:
    """The command line (:func:`octalgen.cli.main`), stopped by Ctrl-C or SIGTERM with one line from
    its first moment: also while the command line's own module is imported, and with its exit
    status (130, 143), not killed by the signal, when a second one comes as it ends."""
    # octalgen never multiplies matrices: one BLAS thread, not numpy's default of one a core that
    # each spin a while after the import, costing CPU time the run could use.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from .engine.signals import raise_terminated

        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, raise_terminated)
        from .cli import main as command_line
    except KeyboardInterrupt as stop:  # before the command line could say it
        from .errors import stop_signal, stopped_by

        number = stop_signal(stop)
        sys.stderr.write(f"octalgen: {stopped_by(number)}\n")
        return 128 + number
    try:
        return command_line()
    except KeyboardInterrupt as stop:
        # A second signal as the command ends, after it said why it stopped: the group's Ctrl-C can
        # reach this process after the compiler it also stopped had already ended the command.
        from .errors import stop_signal

        return 128 + stop_signal(stop)


if __name__ == "__main__":
    sys.exit(main())
