"""The plain C headers shipped with the templates (``templates/c/include/octalgen/*.h``).

The fixed C that every game shares lives in them, not in the templates: a rendered unit includes
them with ``#include "octalgen/NAME.h"`` on a line of its own.  The build compiles the unit with
the headers it includes beside it (:func:`included_headers`, part of the cache key); ``octalgen
emit c`` writes the unit with them inlined (:func:`inline_headers`), one file that needs nothing
else.
"""

from __future__ import annotations

import re
from functools import cache

from .shipped import shipped_folder

#: A line that includes one of the shipped headers.
_INCLUDE = re.compile(r'^#include "(octalgen/[A-Za-z0-9_]+\.h)"[ \t]*$', re.MULTILINE)


@cache
def shipped_header(name: str) -> str:
    """The text of the shipped header ``name`` (``octalgen/NAME.h``, under ``templates/c/include/``)."""
    path = shipped_folder("octalgen.templates", "templates").joinpath("c").joinpath("include")
    for part in name.split("/"):  # one name a call: Python 3.10's Traversable.joinpath takes no more
        path = path.joinpath(part)
    return path.read_text()


def included_headers(source: str) -> dict[str, str]:
    """The shipped headers ``source`` includes, and those they include, by name, in order of first use."""
    found: dict[str, str] = {}

    def visit(text: str) -> None:
        for name in _INCLUDE.findall(text):
            if name not in found:
                found[name] = shipped_header(name)
                visit(found[name])

    visit(source)
    return found


def inline_headers(source: str) -> str:
    """``source`` with each shipped header's text in place of the first line that includes it (later
    ones are dropped, as its include guard would drop them): a unit that compiles on its own."""
    done: set[str] = set()

    def expand(match: re.Match) -> str:
        name = match.group(1)
        if name in done:
            return f"/* {name}: inlined above */"
        done.add(name)
        body = _INCLUDE.sub(expand, shipped_header(name)).rstrip("\n")
        return (
            f"/* ---- {name}, inlined from octalgen's templates/c/include/ ---- */\n{body}\n"
            f"/* ---- end of {name} ---- */"
        )

    return _INCLUDE.sub(expand, source)
