"""The ``octalgen`` command line.

Each sub-command lives in its own module of this package, listed in
:data:`COMMANDS`; a module provides ``register(subparsers)``, which adds its
parser and sets ``run`` (a function of the parsed arguments returning an exit
status).  Library code raises :class:`~octalgen.errors.OctalgenError`; this
module prints its message as one line on stderr and exits with its code.  A bug
(:class:`~octalgen.errors.InternalError`, or any other exception) is printed with its
traceback and a request to report it, exit status
:data:`~octalgen.errors.INTERNAL_ERROR_EXIT`.

Every sub-command's parser is a :class:`CommandParser`: it accepts ``-q`` and ``-v`` after the
sub-command too, and lays out its help with :class:`HelpFormatter` (prose fitted to the terminal,
examples as written).  A mistyped option is named, with the option meant, before any other usage
error.  Results and error lines written to a terminal fit its width (:func:`fit_to_terminal`);
written to a file or a pipe, an error stays one line.  Output is quiet by default: warnings and
errors, and the progress display of long computations; ``-v`` adds what octalgen is doing
(builds, plans, cache); ``-vv`` adds debugging detail: every log line stamped with the seconds
since the start, the ``debug`` lines (each phase of a computation, each file written, the
backend chosen), and the traceback of an error; ``-q`` drops the progress display.  Commands
make their display with :func:`progress_for`.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import re
import shlex
import shutil
import sys
import textwrap
import time
import traceback

from .. import __version__
from ..errors import INTERNAL_ERROR_EXIT, Interrupted, OctalgenError, stop_signal, stopped_by

#: Sub-command modules, in the order ``--help`` lists them.
COMMANDS = (
    "info",
    "values",
    "rare",
    "emit",
    "bench",
    "stones",
    "run",
    "period",
    "stats",
    "export",
    "survey",
    "synth",
    "fpga",
)

_QUIET_HELP = "no progress display: only warnings, errors and the results"
_VERBOSE_HELP = (
    "also say what octalgen is doing (builds, plans, cache); -vv also debugging detail: "
    "timestamps, each phase and file written, an error's traceback"
)


#: Help pages are as wide as the terminal, but no wider than this: longer lines are hard to read.
HELP_WIDTH = 80


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2.

    An option it does not know is reported first, with the known option it most resembles
    (``--untill``: did you mean ``--until``?), rather than the error it causes (a required
    option missing, an argument left over).
    """

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)  # for error(), which argparse gives no arguments
        namespace, extras = super().parse_known_args(args, namespace)
        unknown = self._unknown_option(extras)
        if unknown is not None:
            self.error(self._unknown_message(unknown))
        return namespace, extras

    def error(self, message):
        # A parser with sub-commands cannot judge their options: only a leaf parser looks.
        unknown = None if self._subparsers is not None else self._unknown_option(getattr(self, "_given", ()))
        message = self._unknown_message(unknown) if unknown is not None else _suggest_choice(message)
        self.exit(2, error_text(f"{self.prog}: error: {message} (see {self.prog} --help)"))

    def _unknown_option(self, tokens) -> str | None:
        """The first of ``tokens`` that looks like an option and is none of this parser's (nor a prefix of one)."""
        for token in tokens:
            if token == "--":
                break
            if not token.startswith("-") or token == "-" or self._negative_number_matcher.match(token):
                continue
            name = token.split("=", 1)[0]
            if name.startswith("--"):
                known = any(option.startswith(name) for option in self._option_string_actions)
            else:  # -n5, -vv: a short option with its value or repeated
                known = name[:2] in self._option_string_actions
            if not known:
                return name
        return None

    def _unknown_message(self, name: str) -> str:
        options = [option for option in self._option_string_actions if option.startswith("--")]
        meant = difflib.get_close_matches(
            name if name.startswith("--") else "-" + name, options, n=1, cutoff=_CLOSE_ENOUGH
        )
        return f"unrecognized option {name}" + (f": did you mean {meant[0]}?" if meant else "")


#: How alike (difflib's ratio) a mistyped name and a known one must be for the known one to be suggested.
_CLOSE_ENOUGH = 0.75

#: argparse's message for a value outside ``choices``.
_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)$")


def _suggest_choice(message: str) -> str:
    """argparse's "invalid choice" message with the choice most like the one given, when one is."""
    match = _INVALID_CHOICE.search(message)
    if match is None:
        return message
    meant = difflib.get_close_matches(
        match["given"], re.findall(r"'([^']*)'", match["choices"]), n=1, cutoff=_CLOSE_ENOUGH
    )
    if not meant:
        return message
    given_ends = match.end("given") + 1  # after its closing quote
    return f"{message[:given_ends]}: did you mean {meant[0]}?{message[given_ends:]}"


class HelpFormatter(argparse.HelpFormatter):
    """The layout of every help page: as wide as the terminal, at most :data:`HELP_WIDTH` columns.

    Unindented lines are prose: consecutive ones are one paragraph, re-flowed to the width (so
    the text may break its lines anywhere; a blank line ends a paragraph).  Indented lines are
    examples and are kept as written; one too wide for the terminal has its explanation (after
    two spaces or a ``#``) moved onto the next line, and a command still too wide is continued
    with a backslash, as a shell reads it.
    """

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        if width is None:
            width = min(shutil.get_terminal_size().columns, HELP_WIDTH) - 2  # argparse's own margin of 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text, width, indent):
        lines: list[str] = []
        paragraph: list[str] = []

        def end_paragraph():
            if paragraph:
                lines.extend(
                    textwrap.wrap(
                        " ".join(paragraph),
                        width,
                        initial_indent=indent,
                        subsequent_indent=indent,
                        break_on_hyphens=False,
                    )
                )
                paragraph.clear()

        for line in text.splitlines():
            if line.strip() and not line.startswith(" "):
                paragraph.append(line.strip() + (" " if line.rstrip().endswith(".") else ""))
                continue
            end_paragraph()
            lines.extend(_example_lines(indent + line.rstrip(), width + len(indent)) if line.strip() else [""])
        end_paragraph()
        return "\n".join(lines)


#: An example line: its indent, the command, and an explanation after two spaces or a ``#``.
_EXAMPLE = re.compile(r"^(?P<indent> *)(?P<command>\S.*?)(?: {2,}| +(?=# ))(?P<comment>\S.*)$")


def _example_lines(line: str, width: int) -> list[str]:
    """An indented example line as lines of at most ``width`` columns (see :class:`HelpFormatter`)."""
    if len(line) <= width:
        return [line]
    match = _EXAMPLE.match(line)
    indent, command = (
        (match["indent"], match["command"]) if match else (line[: len(line) - len(line.lstrip())], line.strip())
    )
    more = indent + "    "
    pieces = textwrap.wrap(command, width - len(indent) - 2, break_long_words=False, break_on_hyphens=False)
    lines = [indent + pieces[0]] + [more + piece for piece in pieces[1:]]
    lines = [piece + " \\" for piece in lines[:-1]] + lines[-1:]
    if match:
        lines += textwrap.wrap(match["comment"], width, initial_indent=more, subsequent_indent=more + "  ")
    return lines


class CommandParser(OneLineParser):
    """The parser of a sub-command: ``-q``/``-v`` accepted after it too, help laid out by :class:`HelpFormatter`."""

    def __init__(self, **kwargs):
        kwargs["formatter_class"] = HelpFormatter  # one layout for every page (a module's own choice is overruled)
        super().__init__(**kwargs)
        # Own destinations (merged in main): a sub-parser's default would overwrite the main parser's value.
        self.add_argument(
            "-q", "--quiet", dest="sub_quiet", action="store_true", default=argparse.SUPPRESS, help=_QUIET_HELP
        )
        self.add_argument(
            "-v", "--verbose", dest="sub_verbose", action="count", default=argparse.SUPPRESS, help=_VERBOSE_HELP
        )


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every sub-command's, or only ``command``'s (one of :data:`COMMANDS`),
    which is all that a command line naming it parses, without importing the other modules."""
    parser = OneLineParser(
        prog="octalgen",
        formatter_class=HelpFormatter,
        description="Sprague-Grundy values of octal games: exact reference, generated C, hardware.",
        epilog="Every command has its own --help.  -q and -v may also follow the command.  Exit status: 0 "
        "done, 1 a computation failed, 2 bad input, 70 an internal error (a bug in octalgen: its "
        "traceback is printed; please report it), 130 and 143 stopped by Ctrl-C and SIGTERM.",
    )
    parser.add_argument("--version", action="version", version=f"octalgen {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help=_QUIET_HELP)
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_VERBOSE_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    sub.required = True
    for name in COMMANDS if command is None else (command,):
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def named_command(argv: list[str]) -> str | None:
    """The sub-command a command line names: its first word that is no option (the main parser's
    options take no value), where that is one of :data:`COMMANDS`.  None where it names none, or asks
    for the main help first: the whole parser lists them, or says what is wrong."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted.

    While a live progress line is shown, rich replaces ``sys.stderr`` so that what is written
    appears above the line instead of through it.
    """

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value):
        pass


class _FittingFormatter(logging.Formatter):
    """``octalgen: message``, wrapped to the terminal's width when stderr is one.

    With ``stamped`` (``-vv``) each record also says when it was made, in seconds since the
    command started, so that a slow step shows where it is.
    """

    stamped = False

    def format(self, record):
        text = super().format(record)
        if self.stamped:
            seconds = (record.created - _STARTED) if record.created >= _STARTED else 0.0
            text = text.replace("octalgen: ", f"octalgen: [{seconds:8.3f} s] ", 1)
        return "\n".join(fit_to_terminal(text.splitlines(), sys.stderr))


#: When the command line started (time.time(), as logging stamps its records).
_STARTED = time.time()

_HANDLER = _CurrentStderr()
_FORMATTER = _FittingFormatter("octalgen: %(message)s")
_HANDLER.setFormatter(_FORMATTER)


def set_verbosity(verbose: int) -> None:
    """Show the ``octalgen`` logger's warnings (0), also its info lines (1), or also debug lines, stamped (2)."""
    level = logging.WARNING if verbose <= 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logger = logging.getLogger("octalgen")
    if _HANDLER not in logger.handlers:
        logger.addHandler(_HANDLER)
    _HANDLER.setLevel(level)
    _FORMATTER.stamped = verbose >= 2
    if logger.level == logging.NOTSET or logger.level > level:  # never hide what a caller asked to see
        logger.setLevel(level)


def progress_for(args, goal: int | None, label: str = "", writes_stdout: bool = False, items: str | None = None):
    """The progress display of a command: a live line on a terminal, plain lines in a log.

    None of it with ``-q``, nor when the command writes its results to the same terminal
    (``writes_stdout`` and stdout is a terminal: the values would run through the line).
    """
    from ..progress import Progress, is_terminal

    shown = not args.quiet and not (writes_stdout and is_terminal(sys.stdout))
    return Progress(goal, label=label, enabled=shown, items=items)


def terminal_width(stream) -> int:
    """The columns of the terminal ``stream`` writes to (``COLUMNS`` overrides, as for argparse)."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return shutil.get_terminal_size().columns


def fit_to_terminal(lines, stream=None, indent: str = "    ") -> list[str]:
    """``lines`` wrapped to the terminal's width when ``stream`` (default stdout) is a terminal.

    A long line goes on in lines starting with ``indent``.  Written to a file or a pipe, the lines
    are left whole: one figure per line, for programs that read them.
    """
    from ..progress import is_terminal

    stream = sys.stdout if stream is None else stream
    if not is_terminal(stream):
        return list(lines)
    width = terminal_width(stream)
    fitted = []
    for line in lines:
        fitted.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [""])
    return fitted


def error_text(line: str, command: str | None = None) -> str:
    """An error ``line`` as written to stderr: one line, wrapped to the terminal's width when stderr is one.

    ``command`` (one to run next, such as a resume) ends the line; on a terminal it goes whole on a
    line of its own, so that it can be copied as one.
    """
    from ..progress import is_terminal

    if command is not None and not is_terminal(sys.stderr):
        return f"{line} {command}\n"
    return "\n".join(fit_to_terminal([line], sys.stderr)) + "\n" + (f"{command}\n" if command else "")


def report(line: str, command: str | None = None) -> None:
    """Write ``line`` (an error, or what a stopped command kept) to stderr by :func:`error_text`."""
    sys.stderr.write(error_text(line, command))
    sys.stderr.flush()


def main(argv=None) -> int:
    """Run the command line; returns the exit status.

    Ctrl-C and SIGTERM end it with one line at any moment, exit status 130 and 143 (see
    :func:`~octalgen.engine.signals.command_signals`): a run notices them at its next safe point
    (:class:`~octalgen.errors.Interrupted`); anywhere else (starting, compiling, printing) they
    raise KeyboardInterrupt (:class:`~octalgen.errors.Terminated`), said by :func:`stopped`.
    """
    from ..engine.signals import command_signals

    command = ["octalgen", *(sys.argv[1:] if argv is None else argv)]
    args = None
    with command_signals() as started:
        try:
            parser = build_parser(named_command(command[1:]))
            args = parser.parse_args(argv)
            args.quiet = args.quiet or getattr(args, "sub_quiet", False)
            args.verbose += getattr(args, "sub_verbose", 0)
            if args.quiet and args.verbose:
                parser.error("-q and -v contradict each other: give one")
            set_verbosity(args.verbose)
            logging.getLogger("octalgen").debug(
                "octalgen %s, Python %s, %s: %s",
                __version__,
                sys.version.split()[0],
                sys.executable,
                shlex.join(command),
            )
            started()
            return args.run(args) or 0
        except Interrupted as exc:
            return said_interrupted(exc, command)
        except OctalgenError as exc:
            if args is not None and args.verbose >= 2:  # debugging detail: where the error was raised
                traceback.print_exc()
            report(f"octalgen: error: {exc}")
            return exc.exit_code
        except KeyboardInterrupt as stop:
            return stopped(stop, getattr(args, "checkpoint", None), command)
        except BrokenPipeError:
            # The reader (e.g. `head`) went away: not an error of ours.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0
        except Exception:  # noqa: BLE001 - a bug (InternalError or any other): its traceback, and a request
            traceback.print_exc()
            print(
                f"octalgen: internal error: this is a bug in octalgen {__version__}; please report it with the "
                "command and the traceback above",
                file=sys.stderr,
            )
            return INTERNAL_ERROR_EXIT


def stopped(stop: KeyboardInterrupt, checkpoint, command: list[str]) -> int:
    """Say that Ctrl-C or SIGTERM stopped a command outside a run's safe points; returns the exit status.

    Where the command's checkpoint directory (``checkpoint``) holds a checkpoint, the line says how
    far it is and ends with the command that resumes it, as for a run stopped at a safe point.
    """
    from ..engine.checkpoint import read_checkpoint

    number = stop_signal(stop)
    try:
        body = read_checkpoint(checkpoint) if checkpoint is not None else None
    except (OctalgenError, OSError):
        body = None
    if body is not None and isinstance(body.get("position"), int):
        return said_interrupted(Interrupted(number, body["position"], checkpoint), command)
    report(f"octalgen: {stopped_by(number)}")
    return 128 + number


def said_interrupted(exc: Interrupted, command: list[str]) -> int:
    """Say what a stopped run proved, with the command that resumes it where a checkpoint was kept;
    returns the exit status."""
    if exc.checkpoint is not None:
        report(f"octalgen: {exc}; resume with:", shlex.join(command))
    else:
        report(f"octalgen: {exc}")
    return exc.exit_code
