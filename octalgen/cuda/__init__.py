"""The GPU backend: generated CUDA for the speculative fixed point and the exact verifier.

Nothing in this package imports CuPy or touches a GPU when imported; only
:mod:`octalgen.cuda.runtime` does, and only when a computation starts.

* :mod:`.plan` -- :class:`~.plan.CudaPlan`: everything the kernels need, decided
  in Python from the shared :class:`~octalgen.plan.KernelPlan`.
* :mod:`.twin` -- the same algorithm in numpy (the fixed-point rounds with the
  kernel's own bookkeeping, and the verifier), so CI checks its logic without a GPU.
* :mod:`.driver` -- the exact loop (prefix, speculate, verify, extend the rare
  table on a failure), shared by the numpy twin and the GPU engine.
* :mod:`.kernels` -- render ``templates/cuda/*.cu.j2`` and compile with nvcc into
  the build cache.
* :mod:`.runtime` -- load and launch through CuPy (the ``cuda`` extra).
* :mod:`.bench` -- the lent-GPU measurement (checksum, values/s, rounds).
"""
