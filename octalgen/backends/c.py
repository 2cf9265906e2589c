"""The generated-C backends (see :mod:`octalgen.cpu`).

* ``c``: exact.  Exact prefix, speculative kernel, verification in parallel processes, and
  recovery when verification finds a new rare value: every value returned is proven.  The
  default exact backend wherever a C compiler is found.
* ``c-speculative``: the same kernel without verification: fast, and NOT proven.
"""

from __future__ import annotations

from ..build import find_compiler
from ..errors import ToolMissingError
from ..cpu.pipeline import exact_values, speculative_values
from . import Backend, register


def _compiler_missing() -> str | None:
    try:
        find_compiler()
    except ToolMissingError as exc:
        return str(exc)
    return None


def _from(chunks, start: int):
    """The values from heap ``start`` on, out of chunks that begin at heap 0."""
    position = 0
    for chunk in chunks:
        if position + len(chunk) > start:
            yield chunk[max(0, start - position):]
        position += len(chunk)


def _exact(game, start, count, table=None, threads=None, **options):
    yield from _from(exact_values(game, start + count, table=table, threads=threads, **options), start)


def _speculative(game, start, count, table=None, threads=None, **options):
    yield from _from(speculative_values(game, start + count, table=table, threads=threads, **options), start)


register(Backend(
    name="c",
    exact=True,
    speed_rank=10,
    summary="generated C: speculative kernel + exact verifier (exact, millions of values/s)",
    compute=_exact,
    unavailable=_compiler_missing,
))

register(Backend(
    name="c-speculative",
    exact=False,
    speed_rank=20,
    summary="generated C kernel without verification (fast, NOT proven)",
    compute=_speculative,
    unavailable=_compiler_missing,
))
