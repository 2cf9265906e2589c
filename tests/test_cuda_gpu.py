"""The CUDA kernels on a real GPU against their numpy twin and the reference.

Skipped where no GPU, driver, CuPy or nvcc is present (CI); run on a GPU machine with
``pytest tests/test_cuda_gpu.py``.  The fixed point is deterministic, so the GPU must
reproduce the twin's values *and* its front and window after every round; the verifier
must find the twin's first unproven heap and use its scan steps.
"""

from dataclasses import replace

import numpy as np
import pytest

from octalgen.api import rare_table
from octalgen.backends import compute_values
from octalgen.checksum import fnv1a64
from octalgen.cuda import plugin, runtime, twin
from octalgen.cuda.cuda_plan import CudaOptions, make_cuda_plan
from octalgen.engine.core import Engine, EngineOptions
from octalgen.engine.run_summary import summarize
from octalgen.engine.tally import Tally
from octalgen.game import parse_game
from octalgen.reference import exact_values

pytestmark = pytest.mark.skipif(runtime.unavailable() is not None, reason=f"no GPU: {runtime.unavailable()}")

OPTIONS = [CudaOptions(), CudaOptions(cache_final=True)]


def plan_of(game, options):
    return make_cuda_plan(rare_table(game), options=replace(options, arch=runtime.device_defaults()[0]))


@pytest.mark.parametrize("options", OPTIONS, ids=["cached", "recomputed"])
@pytest.mark.parametrize("game, span", [(".6", 6000), (".16", 8000), (".644", 8000), (".104", 8000)])
def test_gpu_rounds_are_the_twin_rounds(options, game, span):
    plan = plan_of(game, options)
    w, first = plan.kernel.window, plan.start + 500  # a stretch of a run, not its first heap
    codes = plan.kernel.encoding.encode_array(
        exact_values(game, first + span, mask=plan.table.mask, parity=plan.table.parity)
    )
    runs, ring = {}, 1 << 20  # the limit never binds: the GPU's queued rounds run ahead as the twin's would
    for name, speculator in (
        ("gpu", runtime.GpuSpeculator(plan, 256, ring, rounds_per_launch=12, lookahead=1 << 14)),
        ("twin", twin.Speculator(plan, 256, ring, options.cache_final)),
    ):
        speculator.reset(codes[first - w : first].astype(np.uint8))
        served = w
        for piece in (1000, 17, span - 1017):
            speculator.advance(served + piece)
            assert np.array_equal(
                speculator.read(served, served + piece), codes[first + served - w : first + served - w + piece]
            )
            served += piece
            speculator.release(served)
        runs[name] = speculator.take_log()
    common = min(len(runs["gpu"]), len(runs["twin"]))
    assert common > 10 and np.array_equal(runs["gpu"][:common], runs["twin"][:common])


@pytest.mark.parametrize("game", [".6", ".16", ".644", ".104", ".724"])  # positions; .724: a rare one-heap option
def test_gpu_verifier_is_the_twin_verifier(game):
    plan = plan_of(game, CudaOptions())
    lo, hi = plan.start + 500, plan.start + 3500
    values = exact_values(game, hi, mask=plan.table.mask, parity=plan.table.parity)
    codes = plan.kernel.encoding.encode_array(values).astype(np.uint8)
    scan = plan.scan_table(values[:lo])
    device = runtime.GpuVerifier(plan)
    for base in (0, lo - plan.kernel.window):  # every partner at hand, and only W codes of history
        bad, steps, longest, _ = device.verify(codes[base:], base, scan, lo, hi)
        expected = twin.verify(plan, codes[base:], base, scan, lo, hi)
        assert bad == expected.first_bad
        if bad is None:
            assert (steps, longest) == (expected.scan_steps.sum(), expected.scan_steps.max())
    for fault in (lo, lo + 1000, hi - 1):
        wrong = codes.copy()
        wrong[fault] ^= 1
        assert device.verify(wrong, 0, scan, lo, hi)[0] == fault


@pytest.mark.parametrize("code", [".16", ".104"])
def test_run_through_the_engine_with_the_gpu_plug_in(code):
    game = parse_game(code)
    tally = Tally()
    kernels = plugin.CudaKernels()
    engine = Engine(game, EngineOptions(until=400_000, chunk=1 << 16), [tally], kernels=kernels)
    engine.run()
    assert summarize(engine, tally).statistics.digest == fnv1a64(compute_values(code, 0, 400_000, backend="c"))
    rounds, verification = kernels.figures()
    assert rounds.rounds > 0 and verification.values == 400_000 - engine.planning.plan.start


@pytest.mark.parametrize("backend", ["cuda", "cuda-speculative"])
def test_gpu_backends_equal_the_reference(backend):
    end = make_cuda_plan(rare_table(".16")).start + 20000
    assert np.array_equal(compute_values(".16", 0, end, backend=backend), exact_values(".16", end))
