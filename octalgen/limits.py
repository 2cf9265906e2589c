"""The limits every count, heap position, thread count and duration is held to, and their checks.

The command line (:mod:`octalgen.cli.arguments`) and the Python interface (:mod:`octalgen.api`)
both check their numbers here, so that ``octalgen values .6 -n N`` and ``octalgen.values(".6", N)``
accept and refuse the same things with the same words.  Text from the command line is parsed
first (``1e6``, ``10**6``); a number from Python is taken as it is: an int, or a float that is
whole (``1e6``).  ``True`` and ``False`` are not numbers here, though Python counts them as ints.
"""

from __future__ import annotations

import math
import numbers

from .errors import InputError

__all__ = ["MAX_HEAP", "MAX_WORKERS", "CHUNK_RANGE", "largest", "whole", "seconds"]

#: The largest count or heap position accepted: far beyond any run so far (Grossman's reached
#: 1.4 x 10^14 values of .6), and small enough that every such number is exact in a float.
MAX_HEAP = 10**15

#: The largest thread or process count accepted.
MAX_WORKERS = 1024

#: Heaps per kernel chunk and verification task: at least a few pages of codes, at most what a
#: verifying process is sent at once.
CHUNK_RANGE = (1 << 10, 1 << 26)


def largest(high: int) -> str:
    """``high`` as the messages write it: 1e15 for powers of ten of a million or more, else in full."""
    digits = str(high)
    if high >= 10**6 and digits == "1" + "0" * (len(digits) - 1):
        return f"1e{len(digits) - 1}"
    return digits


def whole(name: str, number, low: int, high: int) -> int:
    """``number`` as an int in [low, high], or one :class:`~octalgen.errors.InputError` saying why not.

    Parameters
    ----------
    name : str
        What the number is, as the caller knows it (``n``, ``start``, ``--until``): the message
        starts with it.
    number : int or float
        An integer (a NumPy one too), or a float holding a whole number.  Not a bool.
    low, high : int
        The least and the largest value accepted.

    Raises
    ------
    InputError
        For a bool, anything that is not a number, a fraction, infinity or NaN, or a number
        outside [low, high].
    """
    if isinstance(number, bool) or type(number).__name__ == "bool_":  # NumPy's bool is no Integral either
        raise InputError(f"{name} must be a whole number, not {number!r}")
    if isinstance(number, numbers.Integral):
        value = int(number)
    elif isinstance(number, numbers.Real) and math.isfinite(number) and float(number).is_integer():
        value = int(number)
    else:
        raise InputError(f"{name} must be a whole number, not {number!r}")
    if value < low:
        raise InputError(f"{name} must be at least {low}, not {value}")
    if value > high:
        raise InputError(f"{name} must be at most {largest(high)}, not {value}")
    return value


def seconds(name: str, number) -> float:
    """``number`` as a finite, non-negative number of seconds, or one :class:`~octalgen.errors.InputError`."""
    if isinstance(number, bool) or not isinstance(number, numbers.Real) or not 0 <= number < math.inf:
        raise InputError(f"{name} must be a number of seconds (0 or more, finite), not {number!r}")
    return float(number)
