"""Hardware-side files of octalgen's HDL backend, installed as ``octalgen.hdl.files``.

``verilator_tb.cpp``: the Verilator test bench that ``octalgen emit hdl --sim
--simulator verilator`` compiles with the emitted Verilog.
"""
