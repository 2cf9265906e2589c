"""``octalgen emit TARGET CODE``: write generated code (C, Verilog) with a provenance header.

Each target lives in its own module ``octalgen.cli.emit_<target>`` listed in
:data:`EMIT_TARGETS`, providing ``register(subparsers)`` like a command module.
One rule for ``-o``: it names a directory for a target that writes several files
(``c``) and a file for a target that writes one (``cuda``, ``hdl``).
"""

from __future__ import annotations

import importlib

from . import CommandParser

#: Emit targets, each a module ``emit_<name>`` of this package.
EMIT_TARGETS: tuple[str, ...] = ("c", "cuda", "hdl")


def register(sub) -> None:
    parser = sub.add_parser(
        "emit",
        help="write generated code for a game (targets: " + ", ".join(EMIT_TARGETS) + ")",
        description="Write the code octalgen generates for a game: c (exact solver, speculative kernel and "
        "verifier, what --backend c compiles), cuda (the GPU kernels) or hdl (the FPGA pipeline as "
        "Verilog, or its simulation).  Every file starts with a header naming the octalgen version, "
        "the game, the rare table's digest and the options, so the output is reproducible.  "
        "-o names a directory for a target that writes several files (c: DIR/<game>/...) "
        "and a file for one that writes one (cuda, hdl).",
        epilog="examples:\n"
        "  octalgen emit c .6               # generated/0.6/octalgen_{kernel,exact}.{c,h}\n"
        "  octalgen emit hdl .6 --fold 20   # generated/0.6/octalgen_hdl_f20.v\n"
        "  octalgen emit cuda .6 -o officers.cu\n"
        "  octalgen emit c --help           # the options of one target",
    )
    targets = parser.add_subparsers(dest="target", metavar="TARGET", parser_class=CommandParser)
    targets.required = True
    for name in EMIT_TARGETS:
        importlib.import_module(f"{__package__}.emit_{name}").register(targets)
