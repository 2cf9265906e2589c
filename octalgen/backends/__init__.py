"""Registry of value backends: every way octalgen can compute G(start) ... G(start+count-1).

A backend is registered by a module listed in :data:`BACKEND_MODULES`; the
default is the fastest *exact* backend that is available on this machine.
Speculative backends (values not yet proven) are never the default.

The registry is also the one place that hands out the engine's kernel plug-ins
(:class:`~octalgen.engine.seams.KernelPlugin`): a backend that runs through the engine
makes its plug-in with :attr:`Backend.plugin`, and ``octalgen run --backend`` and
:func:`octalgen.run` take theirs from :func:`kernel_plugin`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError, ToolMissingError

if TYPE_CHECKING:
    from ..engine.seams import KernelPlugin

#: Modules that register backends when imported, in no particular order.
BACKEND_MODULES = ("octalgen.backends.reference", "octalgen.backends.c", "octalgen.backends.cuda")


@dataclass(frozen=True)
class Backend:
    """One way of computing values.

    Attributes
    ----------
    name : str
        What users type after ``--backend``.
    exact : bool
        True when every value it returns is proven.
    speed_rank : int
        Larger is faster; the default backend is the exact one with the largest rank.
    summary : str
        One line for ``--help``.
    compute : callable
        ``compute(game, start, count, table=None, threads=None, progress=None)`` (game: an
        :class:`~octalgen.game.OctalGame`) yielding numpy chunks of integers (uint16 from the
        engine, int64 from the reference) that together are G(start) ... G(start+count-1); it
        tells ``progress`` (a :class:`~octalgen.progress.Progress`) its phase and how far it has
        come.
    unavailable : callable
        Returns None when the backend can run here, else the reason (one line).
    plugin : callable or None
        For a backend that runs through the engine: makes the engine's kernel plug-in (a fresh
        one per run); None for one that does not (the pure-Python reference).
    """

    name: str
    exact: bool
    speed_rank: int
    summary: str
    compute: Callable[..., Iterator[np.ndarray]]
    unavailable: Callable[[], str | None] = lambda: None
    plugin: Callable[[], KernelPlugin] | None = None


_REGISTRY: dict[str, Backend] = {}


def register(backend: Backend) -> Backend:
    """Add a backend to the registry (called by backend modules at import)."""
    _REGISTRY[backend.name] = backend
    return backend


def backends() -> dict[str, Backend]:
    """All registered backends by name."""
    for module in BACKEND_MODULES:
        importlib.import_module(module)
    return dict(_REGISTRY)


def get_backend(name: str | None = None) -> Backend:
    """The named backend, or the default (fastest available exact one).

    Raises
    ------
    InputError
        For an unknown name.
    ToolMissingError
        When the named backend cannot run here (the reason says why).
    """
    available = backends()
    if name is None:  # the fastest first: a slower one's check (the GPU's imports) is then never made
        exact = sorted((b for b in available.values() if b.exact), key=lambda b: -b.speed_rank)
        return next(b for b in exact if b.unavailable() is None)
    if name not in available:
        raise InputError(f"unknown backend {name!r}; choose from {', '.join(sorted(available))}")
    backend = available[name]
    reason = backend.unavailable()
    if reason is not None:
        raise ToolMissingError(f"backend {name!r} cannot run here: {reason}")
    return backend


def kernel_plugin(name: str) -> KernelPlugin:
    """The engine's kernel plug-in of the exact backend ``name`` (``c``, ``cuda``), made for one run.

    Raises
    ------
    InputError
        For an unknown name, or a backend that does not prove values through the engine.
    ToolMissingError
        When the backend cannot run here (the reason says why).
    """
    backend = get_backend(name)
    if backend.plugin is None or not backend.exact:
        choices = sorted(b.name for b in backends().values() if b.plugin is not None and b.exact)
        raise InputError(f"backend {name!r} does not prove values through the engine; choose from {', '.join(choices)}")
    return backend.plugin()


def compute_values(game, start: int, count: int, backend: str | None = None, **options) -> np.ndarray:
    """G(start) ... G(start+count-1) as one int64 array (see :class:`Backend`).

    ``game`` is an :class:`~octalgen.game.OctalGame` or anything :func:`~octalgen.game.parse_game` takes.
    """
    from ..game import parse_game

    chunks = list(get_backend(backend).compute(parse_game(game), start, count, **options))
    return np.concatenate(chunks).astype(np.int64, copy=False) if chunks else np.zeros(0, np.int64)
