"""Read the machine code (SASS) of the compiled kernels: is the terms loop as tight as meant?

A round's time goes into its terms loop (1,584 terms a position for ``.6``), so what one term
costs in instructions is what a kernel change must not lose.  :func:`disassemble` runs
``cuobjdump -sass`` (or ``nvdisasm``) on the cubin of :func:`~.kernels.compile_kernels`;
:func:`term_loops` finds the loops whose body marks terms (global byte loads, shared byte
stores) and counts their instructions by opcode, per term.  No GPU needed, only the
disassembler (the CUDA toolkit's, or the ``nvidia-cuda-cuobjdump`` wheel's: set
``$CUOBJDUMP``).

``python -m octalgen.cuda.sass [GAME] [KERNEL] [FILE]`` prints each terms loop of KERNEL
(default ``octal_round``) and writes its whole SASS into FILE where given.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..build import command_from_environment
from ..errors import BuildError, ToolMissingError
from .kernels import find_nvcc

__all__ = ["Instruction", "TermLoop", "disassemble", "find_disassembler", "parse", "term_loops"]

_LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_.]+)([^;]*);")
_LABEL = re.compile(r"^(\.L_x_\d+):", re.MULTILINE)  # nvdisasm names branch targets


def find_disassembler() -> list[str]:
    """``$CUOBJDUMP`` if set, else ``cuobjdump`` on PATH or beside nvcc, else ``nvdisasm`` likewise.

    Raises
    ------
    ToolMissingError
    """
    chosen = command_from_environment("CUOBJDUMP", "SASS disassembler")
    if chosen:
        return chosen
    folders = []
    try:
        nvcc = shutil.which(find_nvcc()[0])
        if nvcc:
            folders.append(Path(os.path.realpath(nvcc)).parent)
    except ToolMissingError:
        pass
    folders.append(Path("/usr/local/cuda/bin"))
    for tool in ("cuobjdump", "nvdisasm"):
        found = shutil.which(tool) or next((str(f / tool) for f in folders if (f / tool).is_file()), None)
        if found:
            return [found]
    raise ToolMissingError(
        "no SASS disassembler (cuobjdump or nvdisasm from the CUDA toolkit, or the "
        "nvidia-cuda-cuobjdump wheel); set CUOBJDUMP=/path/to/cuobjdump"
    )


def disassemble(cubin: Path, function: str | None = None) -> str:
    """The SASS of ``cubin`` (of one ``function`` where given), as the disassembler prints it.

    Raises
    ------
    ToolMissingError, BuildError
    """
    tool = find_disassembler()
    if Path(tool[0]).name.startswith("nvdisasm"):
        command = [*tool, "-c", str(cubin)]  # -c: code only; every function
    else:
        command = [*tool, "-sass", *(["-fun", function] if function else []), str(cubin)]
    done = subprocess.run(command, check=False, capture_output=True, text=True)
    if done.returncode:
        raise BuildError(f"{' '.join(command)} failed: {done.stderr.strip()[:500]}")
    if function and Path(tool[0]).name.startswith("nvdisasm"):
        return _function_of(done.stdout, function)
    return done.stdout


def _function_of(listing: str, function: str) -> str:
    """nvdisasm's listing cut to one function's section."""
    start = listing.find(f".section\t.text.{function},")
    if start < 0:
        raise BuildError(f"{function} not in the disassembly")
    end = listing.find("\n//----", start)
    return listing[start : end if end > 0 else len(listing)]


@dataclass(frozen=True)
class Instruction:
    address: int
    opcode: str  # with its modifiers, e.g. LDG.E.U8.STRONG.SM
    operands: str

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


@dataclass(frozen=True)
class TermLoop:
    """One loop whose body marks terms: its instructions and what they come to per term.

    Attributes
    ----------
    start, end : int
        Addresses of its first instruction and of its backward branch.
    counts : dict
        Instructions of the body by base opcode (``LDG``, ``STS``, ``LOP3``, ...).
    terms : int
        Terms one pass of the body marks (its shared byte stores).
    """

    start: int
    end: int
    counts: dict
    terms: int
    xors: int

    @property
    def instructions(self) -> int:
        return sum(self.counts.values())

    @property
    def per_term(self) -> float:
        """Instructions per term, the loop's own counter and branch shared out."""
        return self.instructions / self.terms


def parse(sass: str) -> tuple[list[Instruction], dict[str, int]]:
    """The instructions of a SASS listing in address order, and its labels' addresses (nvdisasm's)."""
    found, labels, pending = [], {}, []
    events = sorted(
        [(m.start(), "label", m) for m in _LABEL.finditer(sass)]
        + [(m.start(), "code", m) for m in _LINE.finditer(sass)],
        key=lambda e: e[0],
    )
    for _, kind, match in events:
        if kind == "label":
            pending.append(match.group(1))
            continue
        address = int(match.group(1), 16)
        for label in pending:
            labels[label] = address
        pending = []
        found.append(Instruction(address, match.group(3), match.group(4).strip()))
    return found, labels


def _branch_target(instruction: Instruction, labels: dict[str, int]) -> int | None:
    label = re.search(r"\((\.L_x_\d+)\)", instruction.operands)
    if label:
        return labels.get(label.group(1))
    address = re.search(r"0x([0-9a-f]+)", instruction.operands)
    return int(address.group(1), 16) if address else None


def term_loops(sass: str) -> list[TermLoop]:
    """The loops (a backward branch to an earlier address) whose body has global byte loads and as
    many shared byte stores, innermost first by address."""
    code, labels = parse(sass)
    at = {i.address: k for k, i in enumerate(code)}
    loops = []
    for k, instruction in enumerate(code):
        if instruction.base != "BRA":
            continue
        target = _branch_target(instruction, labels)
        if target is None or target >= instruction.address or target not in at:
            continue
        body = code[at[target] : k + 1]
        loads = [i for i in body if i.base == "LDG" and ".U8" in i.opcode]
        stores = [i for i in body if i.base == "STS" and ".U8" in i.opcode]
        if not loads or len(loads) != len(stores) or any(i.base == "BAR" for i in body):
            continue
        counts: dict[str, int] = {}
        for i in body:
            counts[i.base] = counts.get(i.base, 0) + 1
        xors = sum(1 for i in body if i.base == "LOP3" and i.operands.rstrip().endswith(("0x96, !PT", "0x3c, !PT")))
        loops.append(TermLoop(body[0].address, instruction.address, counts, len(stores), xors))
    return loops


def main(argv: list[str]) -> int:
    from ..api import rare_table
    from .cuda_plan import make_cuda_plan
    from .kernels import compile_kernels

    game = argv[0] if argv else ".6"
    kernel = argv[1] if len(argv) > 1 else "octal_round"
    compiled = compile_kernels(make_cuda_plan(rare_table(game)))
    sass = disassemble(compiled.cubin, kernel)
    for loop in term_loops(sass):
        print(
            f"{kernel} terms loop {loop.start:#x}..{loop.end:#x}: {loop.terms} terms a pass, "
            f"{loop.per_term:.2f} instructions a term, {loop.xors} XORs; "
            + " ".join(f"{op} {n}" for op, n in sorted(loop.counts.items()))
        )
    if len(argv) > 2:
        Path(argv[2]).write_text(sass)
        print(f"SASS of {kernel} in {argv[2]}")
    return 0


if __name__ == "__main__":
    from ..errors import OctalgenError

    try:
        sys.exit(main(sys.argv[1:]))
    except OctalgenError as error:
        print(f"octalgen.cuda.sass: {error}", file=sys.stderr)
        sys.exit(1)
