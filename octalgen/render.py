"""Render Jinja templates from ``templates/`` (installed as ``octalgen.templates``).

Templates only place values: every decision is made in Python and passed in.
Undefined names are errors, so a template cannot silently emit nothing.
"""

from __future__ import annotations

from functools import lru_cache
import jinja2

from .shipped import shipped_folder


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The shared Jinja environment (strict undefined, no autoescape, stable whitespace)."""
    root = shipped_folder("octalgen.templates", "templates")
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render(template: str, **context) -> str:
    """Render ``template`` (a path under ``templates/``, e.g. ``c/kernel.c.j2``) with ``context``."""
    return environment().get_template(template).render(**context)
