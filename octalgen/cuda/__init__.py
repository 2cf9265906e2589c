"""The GPU backend: generated CUDA for the speculative fixed point and the exact verifier.

Nothing in this package imports CuPy or touches a GPU when imported; only
:mod:`octalgen.cuda.runtime` does, and only when a computation starts.

* :mod:`.cuda_plan` -- :class:`~.cuda_plan.CudaPlan`: everything the kernels need, decided
  in Python from the shared :class:`~octalgen.plan.KernelPlan`.
* :mod:`.twin` -- the same algorithm in numpy (the streaming fixed point with the
  kernel's own bookkeeping, and the verifier), so CI checks its logic without a GPU.
* :mod:`.plugin` -- the engine's kernel plug-in (:class:`~.plugin.CudaKernels`, and
  :class:`~.plugin.TwinKernels` on the twin): producer and verifier of
  :class:`octalgen.engine.core.Engine`, which does everything else (exact prefix,
  checkpoints, recovery, period search).
* :mod:`.kernels` -- render ``templates/cuda/*.cu.j2`` and compile with nvcc into
  the build cache.
* :mod:`.runtime` -- load and launch through CuPy (the ``cuda`` extra): the
  speculation and verification streams.
* :mod:`.sass` -- the compiled kernels' machine code: instructions per term of the terms loops.
* :mod:`.occupancy` -- how many verifier blocks fit beside a round block (the verify grid's cap).
* :mod:`.bench` -- the lent-GPU measurement (checksum, values/s, rounds, work).
"""
