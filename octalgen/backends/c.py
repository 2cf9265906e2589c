"""The generated-C backends, through the engine (:mod:`octalgen.engine`).

* ``c``: exact.  Exact prefix, speculative kernel, verification, and recovery when
  verification finds a new rare value: every value returned is proven.  The default exact
  backend wherever a C compiler is found.
* ``c-speculative``: the same kernel without verification: fast, and NOT proven.

Both run the engine with the generated C's kernel plug-in (:class:`~octalgen.cpu.plugin.CKernels`).
"""

from __future__ import annotations

from ..build import find_compiler
from ..errors import ToolMissingError
from . import Backend, register


def _compiler_missing() -> str | None:
    try:
        find_compiler()
    except ToolMissingError as exc:
        return str(exc)
    return None


def _plugin():
    from ..cpu.plugin import CKernels

    return CKernels()


def _computer(verify: bool):
    def compute(game, start, count, table=None, threads=None, **options):
        from ..engine.values import stream_values

        yield from stream_values(
            game, start, count, table, threads=threads, kernels=_plugin(), verify=verify, **options
        )

    return compute


register(
    Backend(
        name="c",
        exact=True,
        speed_rank=10,
        summary="generated C: speculative kernel + exact verifier (exact, millions of values/s)",
        compute=_computer(verify=True),
        unavailable=_compiler_missing,
        plugin=_plugin,
    )
)

register(
    Backend(
        name="c-speculative",
        exact=False,
        speed_rank=20,
        summary="generated C kernel without verification (fast, NOT proven)",
        compute=_computer(verify=False),
        unavailable=_compiler_missing,
        plugin=_plugin,
    )
)
