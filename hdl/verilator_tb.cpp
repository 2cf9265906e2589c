// Verilator test bench for octalgen's speculative kernel (module `kernel`, see octalgen.hdl).
//
// usage: Vkernel CYCLES VALUES_FILE
// Runs CYCLES clocks from configuration and writes every value emitted with
// `valid` high to VALUES_FILE (little-endian uint16, in order).  Prints one
// line: "cycles C values V error E seconds S" (E: the clock in which `error`
// was first high, or -1).  The design has no reset input in use: it runs
// from its initial state.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "Vkernel.h"
#include "verilated.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s CYCLES VALUES_FILE\n", argv[0]);
        return 2;
    }
    const long long cycles = std::atoll(argv[1]);
    std::FILE *out = std::fopen(argv[2], "wb");
    if (!out) {
        std::perror(argv[2]);
        return 2;
    }
    VerilatedContext context;
    Vkernel top(&context);
    top.rst = 0;
    top.clk = 0;
    top.eval();
    std::vector<uint16_t> buffer;
    buffer.reserve(1 << 16);
    long long values = 0, error_cycle = -1, cycle = 0;
    const auto began = std::chrono::steady_clock::now();
    for (; cycle < cycles; ++cycle) {
        // Outputs now show clock `cycle`: sample them, then advance one rising edge.
        if (top.error) {
            error_cycle = cycle;
            break;
        }
        if (top.valid) {
            buffer.push_back(static_cast<uint16_t>(top.value));
            ++values;
            if (buffer.size() == buffer.capacity()) {
                std::fwrite(buffer.data(), sizeof(uint16_t), buffer.size(), out);
                buffer.clear();
            }
        }
        top.clk = 1;
        top.eval();
        top.clk = 0;
        top.eval();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::fwrite(buffer.data(), sizeof(uint16_t), buffer.size(), out);
    std::fclose(out);
    std::printf("cycles %lld values %lld error %lld seconds %.6f\n", cycle, values, error_cycle, seconds);
    top.final();
    return 0;
}
