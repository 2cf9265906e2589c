"""Generated CUDA: it compiles with nvcc (warnings are errors), is reproducible, and the GPU
backends fail in one clear line where they cannot run.  No GPU needed; nvcc tests skip without it.
"""

import subprocess
import sys

import pytest

from octalgen.api import rare_table
from octalgen.backends import backends, get_backend
from octalgen.cuda import runtime
from octalgen.cuda.cuda_plan import CudaOptions, make_cuda_plan
from octalgen.cuda.kernels import NVCC_FLAGS, compile_kernels, find_nvcc, render_kernels
from octalgen.cuda.occupancy import KernelResources, Multiprocessor, parse_resource_usage, verify_grid_cap
from octalgen.cuda.sass import term_loops
from octalgen.errors import ToolMissingError


def _has_nvcc() -> bool:
    try:
        find_nvcc()
        return True
    except ToolMissingError:
        return False


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc (CUDA toolkit) not installed")


@needs_nvcc
@pytest.mark.parametrize(
    "game, options",
    [
        (".6", CudaOptions()),
        (".16", CudaOptions()),
        (".16", CudaOptions(cache_final=True, term_groups=8)),
        (".104", CudaOptions()),
        (".106", CudaOptions()),
        (".644", CudaOptions(term_groups=1)),
    ],
    ids=[".6", ".16", ".16-cached", ".104-positions", ".106-positions-rare-options", ".644-one-warp"],
)
def test_generated_cuda_compiles_without_warnings_or_spills(game, options):
    assert "--Werror" in NVCC_FLAGS and "all-warnings" in NVCC_FLAGS
    compiled = compile_kernels(make_cuda_plan(rare_table(game), options=options))
    assert compiled.cubin.stat().st_size > 0
    usage = compiled.resource_usage
    kernels = ("octal_round", "octal_verify", "octal_verify_tail")
    for kernel in kernels:
        assert f"Compiling entry function '{kernel}' for 'sm_90'" in usage
    # Registers, never local memory: a spill would put the hot loops on device memory.
    assert usage.count("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") == len(kernels)
    # The verifier's term loop within 64 registers (unrolled it took 80), so that 8 blocks of 128
    # threads fit a multiprocessor by registers and a round block fits beside the verifier.
    registers = {kernel: figures[0] for kernel, figures in parse_resource_usage(usage).items()}
    assert registers["octal_verify"] <= 64 and registers["octal_verify_tail"] <= 64
    assert compiled.source.read_text() == render_kernels(compiled.plan)


def test_source_is_reproducible_and_names_its_origin():
    table = rare_table(".6")
    plan = make_cuda_plan(table)
    source = render_kernels(plan)
    assert source == render_kernels(make_cuda_plan(rare_table(".6")))
    header = source.split("\n#include")[0]
    assert "// game: .6" in header and table.digest in header and "cuda term_groups: 16" in header
    assert "terms: 1584, window 20628, first heap 41256" in header and "cuda cache_final: False" in header
    # Every term is a compile-time constant, in one table that the round kernel and the verifier loop over.
    assert "#define TERM_COUNT 1584" in source and "for (int i = 0; i < TERM_COUNT; i++)" in source
    terms = source.split("__constant__ int2 TERMS[TERM_COUNT] = {")[1].split("};")[0]
    offsets = [int(line.strip(" {},").split(",")[0]) for line in terms.strip().splitlines()]
    assert len(offsets) == 1584 and offsets == sorted(offsets)  # by offset: the kernels search it
    cached = render_kernels(make_cuda_plan(table, options=CudaOptions(cache_final=True)))
    assert "cache[" in cached and "cache[" not in source  # no cached marks by default (0.72x on an H100)


def test_importing_octalgen_loads_no_cuda():
    code = "import octalgen.cli, octalgen.backends as b; b.backends(); import sys; print('cupy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_both_gpu_backends_are_registered():
    registered = backends()
    assert registered["cuda"].exact and not registered["cuda-speculative"].exact


@pytest.mark.skipif(runtime.unavailable() is None, reason="a usable GPU is present")
@pytest.mark.parametrize("name", ["cuda", "cuda-speculative"])
def test_unavailable_gpu_backend_is_one_clear_line(name, cli):
    reason = runtime.unavailable()
    assert reason and "\n" not in reason
    with pytest.raises(ToolMissingError, match="cannot run here"):
        get_backend(name)
    result = cli("values", ".6", "-n", 10, "--backend", name)
    assert result.code == 1 and result.out == ""
    assert result.err.count("\n") == 1 and result.err.startswith("octalgen: error: backend")
    assert reason in result.err


@pytest.mark.skipif(runtime.unavailable() is None, reason="a usable GPU is present")
def test_default_backend_is_unaffected(cli):
    assert get_backend().name != "cuda"
    assert cli("values", ".6", "-n", 5).out.split() == ["0", "0", "1", "2", "0"]


def test_emit_cuda_writes_the_generated_source(cli, tmp_path):
    out = tmp_path / "officers.cu"
    result = cli("emit", "cuda", ".6", "-o", out)
    assert result.code == 0
    assert out.read_text() == render_kernels(make_cuda_plan(rare_table(".6")))
    bad = cli("emit", "cuda", ".6", "--term-groups", 40)
    assert bad.code == 2 and bad.err.count("\n") == 1 and "term_groups must be 1..32" in bad.err


REPORT = """ptxas info    : Compiling entry function 'octal_verify' for 'sm_90'
ptxas info    : Function properties for octal_verify
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 80 registers, used 0 barriers, 32768 bytes smem
ptxas info    : Compiling entry function 'octal_round' for 'sm_90'
ptxas info    : Function properties for octal_round
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 8320 bytes smem
"""


def test_verify_grid_leaves_room_for_a_round_block():
    """The arithmetic of octalgen.cuda.occupancy on an H100 (issue 28's figures: 80 and 32 registers)."""
    figures = parse_resource_usage(REPORT)
    assert figures == {"octal_verify": (80, 32768), "octal_round": (32, 8320)}
    h100 = Multiprocessor()
    verify, round_block = KernelResources(*figures["octal_verify"], 128), KernelResources(*figures["octal_round"], 512)
    assert h100.blocks_of(verify) == 6  # alone: 65,536 / 10,240 registers
    assert h100.blocks_of(verify, beside=round_block) == 4  # 49,152 registers left
    assert verify_grid_cap(132, h100, verify, round_block) == 528
    # What the cap leaves fits a round block: registers, threads, shared memory, block slots.
    assert 4 * verify.block_registers + round_block.block_registers <= h100.registers
    assert 4 * (verify.shared + 1024) + round_block.shared + 1024 <= h100.shared
    leaner = KernelResources(64, 32768, 128)  # at 64 registers shared memory decides: 6 beside the round block
    assert h100.blocks_of(leaner, beside=round_block) == 6
    # A verifier block too big to share a multiprocessor still gets one block on each.
    assert verify_grid_cap(132, h100, KernelResources(255, 200 * 1024, 256), round_block) == 132


# Two listings of one short terms loop (a term a pass) and a zeroing loop, as cuobjdump and nvdisasm print them.
CUOBJDUMP_LOOPS = """
        /*0080*/                   STS [R5], RZ ;
        /*0090*/              @!P1 BRA 0x80 ;
        /*0100*/                   LDC.64 R2, c[0x3][R10] ;
        /*0110*/                   IADD3 R4, P0, P1, R8, R6, -R2 ;
        /*0120*/                   IADD3.X R5, RZ, -0x1, R7, P0, P1 ;
        /*0130*/                   LDG.E.U8.STRONG.SM R4, desc[UR8][R4.64] ;
        /*0140*/                   LOP3.LUT R9, R4, 0xfc, RZ, 0xc0, !PT ;
        /*0150*/                   IMAD R9, R9, 0x1f, R4 ;
        /*0160*/                   LOP3.LUT R9, R9, R3, R14, 0x96, !PT ;
        /*0170*/                   STS.U8 [R9], R20 ;
        /*0180*/                   VIADD R10, R10, 0x80 ;
        /*0190*/                   ISETP.GE.U32.AND P2, PT, R10, 0x630, PT ;
        /*01a0*/              @!P2 BRA 0x100 ;
"""


def test_the_sass_reader_finds_terms_loops_in_either_listing():
    nvdisasm = (
        CUOBJDUMP_LOOPS.replace("@!P1 BRA 0x80", "@!P1 BRA `(.L_x_1)")
        .replace("@!P2 BRA 0x100", "@!P2 BRA `(.L_x_2)")
        .replace("        /*0080*/", ".L_x_1:\n        /*0080*/")
        .replace("        /*0100*/", ".L_x_2:\n        /*0100*/")
    )
    for listing in (CUOBJDUMP_LOOPS, nvdisasm):
        loops = term_loops(listing)
        assert len(loops) == 1  # the zeroing loop stores words, loads nothing: not a terms loop
        loop = loops[0]
        assert (loop.start, loop.end, loop.terms, loop.xors) == (0x100, 0x1A0, 1, 1)
        assert (
            loop.counts
            == {"LDC": 1, "IADD3": 2, "LDG": 1, "LOP3": 2, "IMAD": 1, "STS": 1, "VIADD": 1, "ISETP": 1, "BRA": 1}
            and loop.per_term == 11
        )
