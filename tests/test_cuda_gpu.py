"""The CUDA kernels on a real GPU against their numpy twin and the reference.

Skipped where no GPU, driver, CuPy or nvcc is present (CI); run on a GPU machine with
``pytest tests/test_cuda_gpu.py``.  The fixed point is deterministic, so the GPU must
reproduce the twin's values *and* its front after every round.
"""

import numpy as np
import pytest

from octalgen.backends import compute_values
from octalgen.cuda import runtime, twin
from octalgen.cuda.plan import CudaOptions, make_cuda_plan
from octalgen.rare import rare_table
from octalgen.reference import exact_values

pytestmark = pytest.mark.skipif(runtime.unavailable() is not None, reason=f"no GPU: {runtime.unavailable()}")


@pytest.fixture(scope="module", params=[CudaOptions(), CudaOptions(term_loop=False, term_groups=32)],
                ids=["term-loop", "unrolled"])
def engine(request):
    return runtime.CudaEngine(window=256, options=request.param, rounds_per_launch=12)


@pytest.mark.parametrize("game, span", [(".6", 6000), (".16", 8000), (".644", 8000)])
def test_gpu_rounds_are_the_twin_rounds(engine, game, span):
    table = rare_table(game)
    plan = make_cuda_plan(table, options=engine.options)
    end = plan.start + span
    codes = plan.kernel.encoding.encode_array(exact_values(game, end, mask=table.mask))
    gpu = engine.speculate(plan, codes[: plan.start], end)
    assert np.array_equal(gpu, codes)
    run = twin.FixedPoint(plan, codes[: plan.start], end, engine.window)
    run.run()
    assert np.array_equal(engine.report["speculation"]["advances"], run.advances())


@pytest.mark.parametrize("game", [".6", ".16"])
def test_gpu_verifier_is_the_twin_verifier(engine, game):
    table = rare_table(game)
    plan = make_cuda_plan(table, options=engine.options)
    end = plan.start + 3000
    codes = plan.kernel.encoding.encode_array(exact_values(game, end, mask=table.mask))
    assert engine.verify(plan, codes, plan.start, end) is None
    expected = twin.verify(plan, codes, plan.start, end).scan_steps
    assert engine.report["verification"]["scan_steps_max"] == expected.max()
    assert engine.report["verification"]["scan_steps_mean"] == pytest.approx(expected.mean())
    for fault in (plan.start, plan.start + 1000, end - 1):
        wrong = codes.copy()
        wrong[fault] ^= 1
        assert engine.verify(plan, wrong, plan.start, end) == fault


@pytest.mark.parametrize("backend", ["cuda", "cuda-speculative"])
def test_gpu_backends_equal_the_reference(backend):
    table = rare_table(".16")
    end = make_cuda_plan(table).start + 20000
    assert np.array_equal(compute_values(".16", 0, end, backend=backend), exact_values(".16", end))
