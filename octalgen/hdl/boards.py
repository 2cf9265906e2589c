"""The boards a bitstream can be built for (plain data), and the PLL and UART settings for one.

Nothing here imports Amaranth, so ``octalgen synth --help`` lists the boards
without it; the top level and the flow that makes a bitstream are in
:mod:`octalgen.hdl.top`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError, ToolMissingError
from .records import BoardSettings
from .synth import TARGETS, Target

__all__ = ["BOARDS", "Board", "PllSetting", "board_settings", "ecp5_pll", "get_board"]


@dataclass(frozen=True)
class Board:
    """A board the flow can build for.

    Attributes
    ----------
    name : str
        What ``--board`` takes.
    platform : str
        ``module:class`` of its amaranth-boards platform.
    target : Target
        The FPGA on it (for the estimate and the report).
    reference_mhz : float
        The clock the board gives the FPGA.
    """

    name: str
    platform: str
    target: Target
    reference_mhz: float

    def load_platform(self):
        """The amaranth-boards platform object (ToolMissingError without the ``board`` extra)."""
        module, name = self.platform.split(":")
        try:
            import importlib

            return getattr(importlib.import_module(module), name)()
        except ImportError:
            raise ToolMissingError("amaranth-boards is not installed: pip install 'octalgen[board]'") from None


BOARDS = {
    b.name: b
    for b in (
        # ULX3S with the 85F: FT231X USB serial bridge (3 Mbaud), 25 MHz oscillator, 8 LEDs.
        Board("ulx3s-85f", "amaranth_boards.ulx3s:ULX3S_85F_Platform", TARGETS["ecp5-85k"], 25.0),
    )
}


def get_board(name: str) -> Board:
    """The board ``--board`` names (InputError for an unknown one)."""
    if name not in BOARDS:
        raise InputError(f"unknown board {name!r}; choose from {', '.join(BOARDS)}")
    return BOARDS[name]


@dataclass(frozen=True)
class PllSetting:
    """Dividers of an ECP5 EHXPLLL with CLKOP as feedback: out = in / input * feedback."""

    input_divider: int
    feedback_divider: int
    output_divider: int
    reference_mhz: float

    @property
    def output_mhz(self) -> float:
        return self.reference_mhz / self.input_divider * self.feedback_divider

    @property
    def vco_mhz(self) -> float:
        return self.output_mhz * self.output_divider


def ecp5_pll(reference_mhz: float, wanted_mhz: float) -> PllSetting:
    """The dividers closest to ``wanted_mhz`` (ties: VCO nearest 600 MHz), as Project Trellis's ecppll picks them.

    Limits: phase detector 3.125 to 400 MHz, VCO 400 to 800 MHz, dividers
    1-128 (input, output) and 1-80 (feedback).
    """
    best = None
    for input_divider in range(1, 129):
        pfd = reference_mhz / input_divider
        if not 3.125 <= pfd <= 400:
            continue
        for feedback_divider in range(1, 81):
            out = pfd * feedback_divider
            for output_divider in range(1, 129):
                vco = out * output_divider
                if not 400 <= vco <= 800:
                    continue
                key = (abs(out - wanted_mhz), abs(vco - 600))
                if best is None or key < best[0]:
                    best = (key, PllSetting(input_divider, feedback_divider, output_divider, reference_mhz))
    if best is None:
        raise InputError(f"no PLL setting makes {wanted_mhz} MHz from {reference_mhz} MHz")
    return best[1]


def board_settings(clock_mhz: float, baud: float, record_every: int, capture_depth: int) -> BoardSettings:
    """Settings for a UART of ``baud`` at ``clock_mhz`` (the nearest whole number of clocks per bit)."""
    if baud <= 0:
        raise InputError("--baud must be positive")
    clocks = round(clock_mhz * 1e6 / baud)
    if clocks < 4:
        raise InputError(f"--baud {baud:g} is too fast for a {clock_mhz:g} MHz clock (at least 4 clocks per bit)")
    return BoardSettings(record_every=record_every, clocks_per_bit=clocks, capture_depth=capture_depth)
