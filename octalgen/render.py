"""Render Jinja templates from ``templates/`` (installed as ``octalgen.templates``).

Templates only place values: every decision is made in Python and passed in.
Undefined names are errors, so a template cannot silently emit nothing.

The fixed C that every game shares is not rendered: it lives in plain headers that the rendered
units include (:mod:`octalgen.c_headers`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from .shipped import shipped_folder

if TYPE_CHECKING:
    import jinja2


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared Jinja environment (strict undefined, no autoescape, stable whitespace)."""
    import jinja2  # here: a worker process that loads a cached module never renders

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
    import jinja2

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
