"""Generated CUDA: it compiles with nvcc (warnings are errors), is reproducible, and the GPU
backends fail in one clear line where they cannot run.  No GPU needed; nvcc tests skip without it.
"""

import subprocess
import sys

import pytest

from octalgen.backends import backends, get_backend
from octalgen.cuda import runtime
from octalgen.cuda.kernels import NVCC_FLAGS, compile_kernels, find_nvcc, render_kernels
from octalgen.cuda.cuda_plan import CudaOptions, make_cuda_plan
from octalgen.errors import ToolMissingError
from octalgen.api import rare_table


def _has_nvcc() -> bool:
    try:
        find_nvcc()
        return True
    except ToolMissingError:
        return False


needs_nvcc = pytest.mark.skipif(not _has_nvcc(), reason="nvcc (CUDA toolkit) not installed")


@needs_nvcc
@pytest.mark.parametrize("game, options", [(".6", CudaOptions()), (".16", CudaOptions()),
                                           (".16", CudaOptions(cache_final=False, term_groups=8)),
                                           (".104", CudaOptions()), (".106", CudaOptions())],
                         ids=[".6", ".16", ".16-recomputed", ".104-positions", ".106-positions-rare-options"])
def test_generated_cuda_compiles_without_warnings_or_spills(game, options):
    assert "--Werror" in NVCC_FLAGS and "all-warnings" in NVCC_FLAGS
    compiled = compile_kernels(make_cuda_plan(rare_table(game), options=options))
    assert compiled.cubin.stat().st_size > 0
    usage = compiled.resource_usage
    for kernel in ("octal_round", "octal_verify"):
        assert f"Compiling entry function '{kernel}' for 'sm_90'" in usage
    # Registers, never local memory: a spill would put the hot loops on device memory.
    assert usage.count("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") == 2
    assert compiled.source.read_text() == render_kernels(compiled.plan)


def test_source_is_reproducible_and_names_its_origin():
    table = rare_table(".6")
    plan = make_cuda_plan(table)
    source = render_kernels(plan)
    assert source == render_kernels(make_cuda_plan(rare_table(".6")))
    header = source.split("\n#include")[0]
    assert "// game: .6" in header and table.digest in header and "cuda term_groups: 16" in header
    assert "terms: 1584, window 20628, first heap 41256" in header and "cuda cache_final: True" in header
    # Every term is a compile-time constant: in the round kernel's table and unrolled in the verifier.
    assert "#define TERM_COUNT 1584" in source and source.count("VERIFY_MARK(") == 1584 + 1
    terms = source.split("__constant__ int2 TERMS[TERM_COUNT] = {")[1].split("};")[0]
    offsets = [int(line.strip(" {},").split(",")[0]) for line in terms.strip().splitlines()]
    assert len(offsets) == 1584 and offsets == sorted(offsets)  # by offset: the kernels search it
    recomputed = render_kernels(make_cuda_plan(table, options=CudaOptions(cache_final=False)))
    assert "cache[" in source and "cache[" not in recomputed


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
