"""Logic without carry chains: GF(2)-linear maps as XOR trees, and sums as carry-save rows.

The statistics' CRC-64 (:class:`~octalgen.hdl.statistics.RollingCrc`) and the records' CRC-16
(:class:`~octalgen.hdl.sender.RecordSender`) are linear maps of their state and input bits;
the FNV-1a-64 digest (:class:`~octalgen.hdl.statistics.Fnv1aDigest`) compresses the prime's
shifted copies into two rows and leaves the one carry chain to its caller.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const

__all__ = ["carry_save_rows", "linear_map"]


def linear_map(value, columns: list[int], width: int):
    """The GF(2)-linear map whose input bit k contributes ``columns[k]``, as XOR trees.

    Parameters
    ----------
    value : Value
        The input bits.
    columns : list of int
        ``columns[k]``: the output (``width`` bits) of input bit k alone.
    width : int
        Output bits.
    """
    masks = [sum(1 << k for k, column in enumerate(columns) if column >> j & 1) for j in range(width)]
    return Cat((value & mask).xor() if mask else Const(0, 1) for mask in masks)


def carry_save_rows(operands, width: int) -> tuple:
    """Two operands with the sum of ``operands`` mod ``2**width``: 3:2 compressors, no adder.

    A chain of adders would put one carry chain per operand on the path;
    this puts one LUT level per compressor, and leaves the one carry chain to the caller.
    """
    operands = list(operands)
    while len(operands) > 2:
        a, b, c = operands[:3]
        operands = operands[3:] + [(a ^ b ^ c)[:width], (((a & b) | (a & c) | (b & c)) << 1)[:width]]
    return operands[0], operands[1]
