"""Pick-up-stones games (Fisher): classic, no-repeat and asymmetric rules, exactly and fast.

>>> from octalgen.stones import Classic, compute
>>> compute(Classic((1, 5, 8, 10)), 8, backend="python").digits().tolist()
[2, 1, 2, 1, 2, 1, 2, 1]

:mod:`~octalgen.stones.rules` defines the games, :mod:`~octalgen.stones.reference`
decides them in plain Python, :mod:`~octalgen.stones.ccode` generates, compiles
and runs C for them, :mod:`~octalgen.stones.eventual_period` proves eventual periods.
"""

from __future__ import annotations

from ..build import find_compiler
from ..errors import InputError, ToolMissingError
from .outcomes import Outcomes
from .rules import Asymmetric, Classic, NoRepeat, StonesGame, StonesRuleError, parse_moves

__all__ = [
    "BACKENDS",
    "Asymmetric",
    "Classic",
    "NoRepeat",
    "Outcomes",
    "StonesGame",
    "StonesRuleError",
    "compute",
    "default_backend",
    "parse_moves",
]

#: The ways to compute outcomes: the plain-Python reference and generated C.
BACKENDS = ("python", "c")


def default_backend() -> str:
    """``c`` when a C compiler is present, else ``python``."""
    try:
        find_compiler()
    except ToolMissingError:
        return "python"
    return "c"


def compute(game, count: int, backend: str | None = None, states: bool = False) -> Outcomes:
    """The outcomes of pile sizes 0 ... count-1.

    Parameters
    ----------
    game : Classic, NoRepeat or Asymmetric
    count : int
    backend : {"python", "c"}, optional
        Default: :func:`default_backend`.
    states : bool
        Also return the whole state of every pile size (for periods); the
        Python reference always does.
    """
    backend = backend or default_backend()
    if backend == "python":
        from .reference import reference_outcomes

        return reference_outcomes(game, count)
    if backend == "c":
        from .ccode import StonesKernel

        return StonesKernel(game).outcomes(count, states=states)
    raise InputError(f"unknown backend {backend!r} for pick-up stones; choose from {', '.join(BACKENDS)}")
