"""Render Jinja templates from ``templates/`` (installed as ``octalgen.templates``).

Templates only place values: every decision is made in Python and passed in.
Undefined names are errors, so a template cannot silently emit nothing.

The fixed C that every game shares is not rendered: it lives in plain headers that the rendered
units include (:mod:`octalgen.c_headers`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import tempfile
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
    """Render ``template`` (a path under ``templates/``, e.g. ``c/kernel.c.j2``) with ``context``.

    The text is kept under the build cache, keyed by every template's text and by the context, so
    that a command whose code was rendered before neither imports Jinja nor renders it again (every
    command renders: the source is the key of its compiled module).
    """
    key = _render_key(template, context)
    kept = _rendered_dir() / f"{key}.txt" if key is not None else None
    if kept is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return kept.read_text(encoding="utf-8")
    text = environment().get_template(template).render(**context)
    if kept is not None:
        _keep(kept, text)
    return text


def _render_key(template: str, context: dict) -> str | None:
    """sha256 of the templates, the name and the context, which a pickle writes whole (where one
    JSON text would not tell a tuple from a list); None for a context that does not pickle."""
    try:
        material = pickle.dumps((template, context), protocol=5)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    return hashlib.sha256(_templates_digest().encode() + material).hexdigest()


@lru_cache(maxsize=1)
def _templates_digest() -> str:
    """sha256 of every template (``*.j2`` under ``templates/``: a template may include or import any other)."""
    digest = hashlib.sha256()
    pending = [("", shipped_folder("octalgen.templates", "templates"))]
    files = []
    while pending:
        where, folder = pending.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                pending.append((f"{where}{entry.name}/", entry))
            elif entry.name.endswith(".j2"):
                files.append((f"{where}{entry.name}", entry))
    for name, entry in sorted(files, key=lambda f: f[0]):
        digest.update(name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()


def _rendered_dir():
    from .build import cache_dir

    return cache_dir() / "rendered"


def _keep(path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (readers never see half of it)."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, staged = tempfile.mkstemp(prefix=".staging-", dir=path.parent)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(staged, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staged)
