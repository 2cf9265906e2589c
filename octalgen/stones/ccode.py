"""Generated C for pick-up stones: plan -> render -> build -> wrap.

The plan (:mod:`octalgen.stones.stones_plan`) decides everything; the templates under
``templates/stones/`` place its values; :func:`octalgen.build.build_module`
compiles and caches the module, like every other generated C of octalgen.
"""

from __future__ import annotations

import numpy as np

from ..build import CompiledModule, build_module
from ..errors import ComputationError, InternalError
from ..render import render
from .outcomes import Outcomes
from .stones_plan import HistoryPlan, RegisterPlan, make_stones_plan, provenance

__all__ = ["StonesKernel", "generate_source"]

_CDEF = {
    RegisterPlan: "void stones_run(uint64_t blocks, uint64_t stride, uint64_t *out);",
    HistoryPlan: "int stones_run(uint64_t count, uint64_t *safe, uint64_t *trace);",
}


def generate_source(plan: RegisterPlan | HistoryPlan) -> str:
    """The complete C source of a kernel plan, starting with its provenance header."""
    return render(plan.template, provenance=provenance(plan), **plan.context())


class StonesKernel:
    """The compiled kernel of one game.

    Parameters
    ----------
    game : Classic, NoRepeat or Asymmetric

    Raises
    ------
    ToolMissingError
        No C compiler.
    BuildError
        The generated code did not compile.
    """

    def __init__(self, game):
        self.game = game
        self.plan = make_stones_plan(game)
        self.module: CompiledModule = build_module(
            f"stones_{game.rule.replace('-', '_')}",
            generate_source(self.plan),
            _CDEF[type(self.plan)],
            what=game.describe(),
        )

    def packed(self, count: int) -> np.ndarray:
        """The second-player-wins bits of pile sizes 0 ... count-1, packed.

        Returns
        -------
        numpy uint64 array of shape (channels, ceil(count / 64))
            Bit n % 64 of word n // 64 is pile size n; bits past count are
            meaningless.  Channels in ``game.channels`` order.
        """
        packed, _ = self._run(count, trace=False)
        return packed

    def outcomes(self, count: int, states: bool = False) -> Outcomes:
        """The outcomes of pile sizes 0 ... count-1 (with their states when ``states``)."""
        packed, trace = self._run(count, trace=states)
        bits = _unpack(packed, count)
        if isinstance(self.plan, RegisterPlan):
            # The channels are the whole state.
            return (
                Outcomes.from_states(self.game, bits.T)
                if states
                else Outcomes(self.game, dict(zip(self.game.channels, bits)))
            )
        if trace is None:
            return Outcomes(self.game, {"safe": bits[0]})
        history_bits = _unpack(trace, len(self.game.histories))  # one row per pile size
        outcomes = Outcomes.from_states(self.game, history_bits)
        if not np.array_equal(outcomes.second_wins["safe"], bits[0]):
            raise InternalError(f"{self.game.describe()}: the kernel's safe bits disagree with its own states")
        return outcomes

    def _run(self, count: int, trace: bool):
        ffi, lib = self.module.ffi, self.module.lib
        words = -(-count // 64)
        if isinstance(self.plan, RegisterPlan):
            pad = self.plan.pad_words
            out = np.zeros((len(self.plan.channels), pad + words), dtype=np.uint64)
            lib.stones_run(words, pad + words, ffi.from_buffer("uint64_t[]", out))
            return out[:, pad:], None
        safe = np.zeros((1, words), dtype=np.uint64)
        states = np.zeros((count, self.plan.words), dtype=np.uint64) if trace else None
        status = lib.stones_run(
            count,
            ffi.from_buffer("uint64_t[]", safe),
            ffi.from_buffer("uint64_t[]", states) if trace else ffi.NULL,
        )
        if status != 0:
            raise ComputationError(f"{self.game.describe()}: the kernel ran out of memory")
        return safe, states


def _unpack(words: np.ndarray, count: int) -> np.ndarray:
    """Rows of little-endian bit words to rows of ``count`` booleans."""
    as_bytes = np.ascontiguousarray(words, dtype="<u8").view(np.uint8)
    return np.unpackbits(as_bytes, axis=-1, bitorder="little", count=count).astype(bool)
