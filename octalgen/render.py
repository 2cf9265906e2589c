"""Render Jinja templates from ``templates/`` (installed as ``octalgen.templates``).

Templates only place values: every decision is made in Python and passed in.
Undefined names are errors, so a template cannot silently emit nothing.

The fixed C that every game shares lives in plain headers, ``templates/c/include/octalgen/*.h``:
a rendered unit includes them (``#include "octalgen/NAME.h"`` on a line of its own).  The
build compiles the unit with them beside it (:func:`included_headers`, part of its cache key);
``octalgen emit c`` writes the unit with them inlined (:func:`inline_headers`), one file that
needs nothing else.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import jinja2

from .shipped import shipped_folder


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared Jinja environment (strict undefined, no autoescape, stable whitespace)."""
    root = shipped_folder("octalgen.templates", "templates")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        bytecode_cache=_bytecode_cache(),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept under the build cache: every command renders (the source is the key
    of its compiled module), and compiling the templates anew each time cost a third of a second."""
    from .build import cache_dir

    directory = cache_dir() / "jinja"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(directory))


def render(template: str, **context) -> str:
    """Render ``template`` (a path under ``templates/``, e.g. ``c/kernel.c.j2``) with ``context``."""
    return environment().get_template(template).render(**context)


#: A line that includes one of the shipped headers.
_INCLUDE = re.compile(r'^#include "(octalgen/[A-Za-z0-9_]+\.h)"[ \t]*$', re.MULTILINE)


@cache
def shipped_header(name: str) -> str:
    """The text of the shipped header ``name`` (``octalgen/NAME.h``, under ``templates/c/include/``)."""
    return shipped_folder("octalgen.templates", "templates").joinpath("c", "include", *name.split("/")).read_text()


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
        return f"/* ---- {name}, inlined from octalgen's templates/c/include/ ---- */\n{body}\n/* ---- end of {name} ---- */"

    return _INCLUDE.sub(expand, source)
