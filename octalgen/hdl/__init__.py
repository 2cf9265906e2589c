"""The FPGA backend: the speculative kernel as an Amaranth pipeline, and a board that streams its statistics.

Flow: plan (:mod:`octalgen.plan`) -> schedule (:mod:`.layout`) -> circuit (:mod:`.kernel`) ->
Verilog (:mod:`.verilog`), simulation (:mod:`.simulate`) or synthesis (:mod:`.synth`); on a board,
the circuit inside its top level (:mod:`.top`) -> serial records -> checked by the host (:mod:`.host`).

The kernel
    * :mod:`.layout` — where every term goes and when, in plain Python (no Amaranth):
      :func:`~.layout.layout_pipeline` -> :class:`~.layout.PipelineLayout`.
    * :mod:`.kernel` — :class:`~.kernel.SpeculativePipeline`, the circuit that layout describes:
      one value every ``fold`` clocks; its lanes feed a mark chain, whose vector goes to the mex:
    * :mod:`.vector_chain` — stages that hand the whole mark vector on (the default);
    * :mod:`.rows_chain` — stages that hand rows of marks on, a group per clock (local wires);
    * :mod:`.mex` — the lowest unmarked codes of the chain's vector, and the one-hot logic of it.
    * :mod:`.verilog` — its Verilog with a provenance header (``octalgen emit hdl``).
    * :mod:`.simulate` — amaranth.sim or Verilator against the reference; also a whole board session.
    * :mod:`.synth` — FPGA targets, the resource estimate and the fold that fits, yosys and nextpnr
      (``octalgen synth --target``).

The board (``octalgen synth --board``, ``octalgen fpga``)
    * :mod:`.streamer` — :class:`~.streamer.ResultStreamer`: the kernel, the statistics of its
      values and the records, composed from:
    * :mod:`.statistics` — the digest, the rolling CRC and its anchors, the histogram, the window
      of the last W values (``wiring.Component`` each), and their starting state;
    * :mod:`.capture` — the host's requests for values, captured as they pass;
    * :mod:`.sender` — the records, byte by byte, with their CRC-16;
    * :mod:`.uart` — the 8N1 serial link;
    * :mod:`.linear` — XOR trees and carry-save rows that the CRCs and the digest are made of.
    * :mod:`.records` — the records' format and a reader (plain Python: the host side too).
    * :mod:`.boards` — the boards, PLL and UART settings, as plain data (no Amaranth);
      :mod:`.top` — a board's top level (PLL, clock gate, pins) and the flow to its bitstream.
    * :mod:`.host` — what ``octalgen fpga`` checks each record against: the exact engine.

Only :mod:`.layout`, :mod:`.records`, :mod:`.boards`, :mod:`.synth` and :mod:`.host` can be imported
without Amaranth, so commands that build no hardware start without it.
"""
