"""octalgen: Sprague–Grundy values of octal games, from a pure-Python reference to generated C and hardware.

The Python interface (:mod:`octalgen.api`) is available from the package itself::

    import octalgen

    octalgen.values("officers", 20)  # exact G(0) ... G(19), a uint16 NumPy array
    octalgen.period(".137")  # least period and preperiod, proven
    octalgen.run(".6", 10**7, "runs/six")  # a resumable proven run: digest, counts, period search
    octalgen.rare_table(".6")  # the rare-value table
    octalgen.info("kayles")  # moves, rare mask, known period

Those names are loaded on first use, so ``import octalgen`` stays cheap (no NumPy, no compiler,
no Amaranth).  The errors they raise are in :mod:`octalgen.errors`, loaded with the package::

    try:
        octalgen.values(".6", n)
    except octalgen.errors.InputError as exc:  # bad input: one line says what is wrong
        print(exc)
"""

from typing import TYPE_CHECKING

from . import errors

if TYPE_CHECKING:  # what a type checker sees of the names loaded on first use
    from .api import GameInfo, PeriodCandidate, PeriodResult, info, iter_values, period, rare_table, run, values

__version__ = "0.3.0"

__all__ = [
    "GameInfo",
    "PeriodCandidate",
    "PeriodResult",
    "__version__",
    "errors",
    "info",
    "iter_values",
    "period",
    "rare_table",
    "run",
    "values",
]

#: Names of :mod:`octalgen.api` offered here, loaded when first asked for.
_API = tuple(name for name in __all__ if name not in ("__version__", "errors"))


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'octalgen' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
