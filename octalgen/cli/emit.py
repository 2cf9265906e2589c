"""``octalgen emit TARGET CODE``: write generated code (C, Verilog) with a provenance header.

Each target lives in its own module ``octalgen.cli.emit_<target>`` listed in
:data:`EMIT_TARGETS`, providing ``register(subparsers)`` like a command module.
"""

from __future__ import annotations

import importlib

from . import OneLineParser

#: Emit targets, each a module ``emit_<name>`` of this package.
EMIT_TARGETS: tuple[str, ...] = ("c", "cuda", "hdl")


def register(sub) -> None:
    parser = sub.add_parser("emit", help="write generated code for a game (targets: " + ", ".join(EMIT_TARGETS) + ")")
    targets = parser.add_subparsers(dest="target", metavar="TARGET", parser_class=OneLineParser)
    targets.required = True
    for name in EMIT_TARGETS:
        importlib.import_module(f"{__package__}.emit_{name}").register(targets)
