"""The Python interface of octalgen, for notebooks and scripts.

The functions here do what the commands of the same name do, and return values instead of
printing them::

    >>> import octalgen
    >>> octalgen.values("officers", 10, start=20620)       # doctest: +SKIP
    array([  4, 256, 175,  15, 111, 263, 151, 277, 200, 128], dtype=uint16)
    >>> octalgen.period(".137")                             # doctest: +SKIP
    PeriodResult(game='.137', period=34, preperiod=52, proven=True, ...)

* :func:`values` (and :func:`iter_values`, which streams): exact values G(start) ...
  G(start+n-1) from the fastest exact backend, as ``octalgen values`` computes them;
* :func:`period`: the least period and preperiod, proven by the Guy–Smith theorem, as
  ``octalgen period`` finds them;
* :func:`run`: a long, resumable, proven run with its digests, counts and period search, as
  ``octalgen run`` makes it (the same :class:`~octalgen.engine.run_summary.RunSummary` that
  ``octalgen run --json`` prints);
* :func:`rare_table`: the rare-value table, as ``octalgen rare`` gives it;
* :func:`info`: what is known about a game without computing, as ``octalgen info`` prints it.

A game is an :class:`~octalgen.game.OctalGame` or any text the command line accepts: an octal
code (``.6``, ``4.07``), a name (``officers``, ``kayles``) or a subtraction set (``S(1,2)``).
Every error is an :class:`~octalgen.errors.OctalgenError` (bad input: an
:class:`~octalgen.errors.InputError`); nothing here exits the interpreter.  Ctrl-C during a
computation raises :class:`~octalgen.errors.Interrupted` once what was proven is put away.

This module imports only NumPy and octalgen's small modules when it is loaded; the compiler,
the engine and the backends are loaded by the first call that needs them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .errors import ComputationError, GameCodeError, InputError, InternalError, TableError
from .game import OctalGame, parse_game
from .limits import CHUNK_RANGE, MAX_HEAP, MAX_WORKERS, largest, seconds, whole

__all__ = [
    "GameInfo",
    "PeriodCandidate",
    "PeriodResult",
    "info",
    "iter_values",
    "period",
    "rare_table",
    "run",
    "values",
]

log = logging.getLogger("octalgen")

#: The largest value :func:`values` can return (its array is uint16, as the C backends store values).
LARGEST_VALUE = np.iinfo(np.uint16).max


# -- arguments ---------------------------------------------------------------------------------


def as_game(game) -> OctalGame:
    """``game`` as an :class:`~octalgen.game.OctalGame`: a game itself, or a code, name or ``S(...)``.

    Raises
    ------
    GameCodeError
        For text that is no game, or anything that is neither text nor a game.
    """
    if isinstance(game, OctalGame):
        return game
    if not isinstance(game, str):
        raise GameCodeError(
            f"a game is an octal code, a name or S(...) as text, or an OctalGame, not {type(game).__name__} {game!r}"
        )
    return parse_game(game)


def _count(name: str, number, low: int = 0) -> int:
    """A count or heap position, held to the command line's limits (:func:`octalgen.limits.whole`)."""
    return whole(name, number, low, MAX_HEAP)


def _processes(name: str, number, low: int) -> int | None:
    """A thread or process count (None: the default), held to the command line's limits."""
    return None if number is None else whole(name, number, low, MAX_WORKERS)


def _span(n, start) -> tuple[int, int]:
    """``(n, start)`` checked: each a count, and G(start + n - 1) within :data:`~octalgen.limits.MAX_HEAP`."""
    n, start = _count("n", n), _count("start", start)
    if start + n > MAX_HEAP:
        raise InputError(f"start + n must be at most {largest(MAX_HEAP)} (the largest heap accepted), not {start + n}")
    return n, start


def _backend(name):
    """The backend called ``name`` (None: the fastest exact one here)."""
    from .backends import get_backend

    if name is not None and not isinstance(name, str):
        raise InputError(f"backend must be a backend's name as text, not {type(name).__name__} {name!r}")
    return get_backend(name)


def _checked_table(table, game: OctalGame):
    """``table`` (a RareTable or None) after checking it belongs to ``game``."""
    from .rare import RareTable

    if table is None:
        return None
    if not isinstance(table, RareTable):
        raise TableError(
            f"table must be a RareTable (octalgen.rare.RareTable.load(path) reads a file), not {type(table).__name__}"
        )
    if table.game != game:
        raise TableError(f"the rare table is for {table.game.code}, not {game.code}")
    return table


# -- values ------------------------------------------------------------------------------------


def iter_values(
    game,
    n: int,
    start: int = 0,
    *,
    backend: str | None = None,
    table=None,
    threads: int | None = None,
    workers: int | None = None,
    progress=None,
) -> Iterator[np.ndarray]:
    """Stream G(start) ... G(start+n-1) in chunks, in bounded memory whatever ``n``.

    The parameters are those of :func:`values`.  They are checked, and the backend chosen,
    before this returns; the values are computed as the chunks are taken.  ``progress`` (a
    :class:`~octalgen.progress.Progress`, as the command line shows) is told the computation's
    phase and how far it has come.

    Yields
    ------
    numpy.ndarray
        ``uint16`` chunks (the dtype of :func:`values`) that together are G(start) ...
        G(start+n-1), in order.

    Raises
    ------
    InputError
        Bad game, count, start, backend, table or thread count: before any work.
    ComputationError
        While streaming: a value beyond 65535, which uint16 cannot hold.
    """
    game = as_game(game)
    n, start = _span(n, start)
    table = _checked_table(table, game)
    threads, workers = _processes("threads", threads, 1), _processes("workers", workers, 0)
    chosen = _backend(backend)
    if not chosen.exact:
        log.warning("backend %s gives speculative values: they are NOT proven", chosen.name)
    log.debug(
        "%s: G(%d) ... G(%d) by the %s backend (threads %s, workers %s)",
        game.code,
        start,
        start + n - 1,
        chosen.name,
        threads or "default",
        "default" if workers is None else workers,
    )
    # Only the exact C backend verifies in worker processes; the others have no such option.
    options = {"workers": workers} if workers is not None and chosen.name == "c" else {}
    if n == 0:
        return iter(())
    chunks = chosen.compute(game, start, n, table=table, threads=threads, progress=progress, **options)
    return _as_uint16(chunks, start)


def _as_uint16(chunks, start: int) -> Iterator[np.ndarray]:
    """The backend's chunks of G(start) ... as uint16, a value that does not fit being one error."""
    position = start
    for chunk in chunks:
        too_big = np.flatnonzero(chunk > LARGEST_VALUE) if chunk.dtype != np.uint16 else None  # uint16: all fit
        if too_big is not None and len(too_big):
            at = int(too_big[0])
            raise ComputationError(
                f"G({position + at}) = {int(chunk[at])} does not fit the uint16 values of "
                "octalgen.values and iter_values"
            )
        yield chunk.astype(np.uint16, copy=False)
        position += len(chunk)


def _room_for(n: int) -> np.ndarray:
    """An empty uint16 array of ``n`` values, refused in one line when this machine cannot hold it."""
    needed = 2 * n
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not every system says
        physical = None
    refusal = InputError(
        f"{n} values need {needed / 2**30:,.1f} GiB of memory"
        + (f", more than this machine's {physical / 2**30:,.1f} GiB" if physical else "")
        + ": stream them with octalgen.iter_values, or write them to a file with "
        "octalgen values -o FILE"
    )
    if physical is not None and needed > physical:
        raise refusal
    try:
        return np.empty(n, dtype=np.uint16)
    except MemoryError:
        raise refusal from None


def values(
    game,
    n: int,
    start: int = 0,
    *,
    backend: str | None = None,
    table=None,
    threads: int | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """The exact values G(start) ... G(start+n-1) of a game, as ``octalgen values`` computes them.

    Parameters
    ----------
    game : str or OctalGame
        An octal code (``.6``), a name (``officers``) or a subtraction set (``S(1,2)``).
    n : int
        How many values (0 gives an empty array).  An int, or a whole float (``1e6``); the
        command line's limits hold: ``start + n`` at most :data:`~octalgen.limits.MAX_HEAP`.
    start : int, optional
        The first heap (default 0).
    backend : str, optional
        ``c``, ``reference``, ``cuda``, ... (see :func:`octalgen.backends.backends`); default: the
        fastest exact one on this machine.  A ``-speculative`` backend's values are not proven
        (a warning says so on the ``octalgen`` logger).
    table : RareTable, optional
        A rare-value table to start from instead of the shipped or computed one (a hint: a
        wrong one costs time, never exactness).
    threads, workers : int, optional
        Kernel threads (1 or more) and verifying processes (0: none, this process verifies), as
        on the command line.

    Returns
    -------
    numpy.ndarray
        ``uint16`` array of length ``n``: element k is G(start + k).

    Raises
    ------
    InputError
        Bad game, count, start, backend, table or thread count (a bool is no count), or more
        values than this machine's memory holds (:func:`iter_values` streams them).
    ComputationError
        A value beyond 65535, which uint16 cannot hold.
    ToolMissingError
        The backend cannot run here (no C compiler, no GPU).
    """
    result = _room_for(_span(n, start)[0])  # before anything is computed
    chunks = iter_values(game, n, start, backend=backend, table=table, threads=threads, workers=workers)
    position = 0
    for chunk in chunks:
        result[position : position + len(chunk)] = chunk
        position += len(chunk)
    if position != len(result):  # a backend that stopped short would leave garbage in the array
        raise InternalError(f"the backend gave {position} values, not {len(result)}")
    return result


# -- periods -----------------------------------------------------------------------------------


#: The most values :func:`period` (and ``octalgen period``) computes when no ``max`` is given.
DEFAULT_PERIOD_MAX = 10**8


class PeriodCandidate(NamedTuple):
    """A period seen in the values: its Guy–Smith proof needs G(0) ... G(proof_length - 1).

    G(n + period) = G(n) was checked for preperiod <= n < checked_to - period.  ``outcome`` says
    what became of it: ``"open"`` (holds as far as computed, not proven yet), ``"failed"`` (G(n +
    period) != G(n) at n = checked_to - period), ``"proven"``, or ``"reduced"`` (a period, but a
    multiple of the least one or with a longer preperiod than the least: the least is proven
    beside it, or, for a claim, :attr:`PeriodResult.refuted` names it).
    """

    period: int
    preperiod: int
    proof_length: int
    checked_to: int
    outcome: str = "open"


@dataclass(frozen=True)
class PeriodResult:
    """What :func:`period` found.

    Attributes
    ----------
    game : str
        The game's canonical code.
    period, preperiod : int or None
        The least period and least preperiod (G(n + period) = G(n) for every n >= preperiod),
        when ``proven``; None otherwise.
    proven : bool
        True when the period holds for ever (Guy–Smith theorem on the values computed).
    values : int
        How many values are proven: G(0) ... G(values - 1), by this call and, resumed from a
        checkpoint, by the calls before it.  The search ends as soon as a proof is complete, so
        for a proven period this is ``proof_length`` (or, where the direct search proved it at
        once, the values it searched).
    limit : int
        The most values the search was allowed (``max``, or what a claim's proof needs).
    proof_length : int or None
        The values the Guy–Smith proof used, when ``proven``.
    refuted : str or None
        For a claim that does not hold: why (the first n where it fails, or why it is not least).
    candidates : tuple of PeriodCandidate
        Every period the search saw, in the order seen, with its outcome and the values its
        proof needs (:attr:`open_candidates`: those not proven within ``limit``, nor failed).
    session_values : int
        The values this call proved (``values`` less those proven before a resume).
    seconds, session_seconds : float
        Wall seconds of the whole search (every session of a resumed one) and of this call (both
        left out of comparisons and of the repr).
    """

    game: str
    period: int | None
    preperiod: int | None
    proven: bool
    values: int
    limit: int
    proof_length: int | None = None
    refuted: str | None = None
    candidates: tuple[PeriodCandidate, ...] = ()
    session_values: int = field(default=0, compare=False, repr=False)
    seconds: float = field(default=0.0, compare=False, repr=False)
    session_seconds: float = field(default=0.0, compare=False, repr=False)

    @property
    def open_candidates(self) -> tuple[PeriodCandidate, ...]:
        """The candidates that hold as far as computed but are not proven: what more values may prove."""
        return tuple(c for c in self.candidates if c.outcome == "open")


def _claim(claim) -> tuple[int, int] | None:
    """``claim`` checked: None, or ``(period, preperiod)`` as ints."""
    if claim is None:
        return None
    try:
        claimed_period, claimed_preperiod = claim
    except (TypeError, ValueError):
        raise InputError(f"claim must be (period, preperiod), not {claim!r}") from None
    return _count("the claimed period", claimed_period, 1), _count("the claimed preperiod", claimed_preperiod)


def period_limit(game, max: int | None = None, claim: tuple[int, int] | None = None) -> int:
    """How many values :func:`period` computes at most: what its ``max`` becomes.

    ``max`` itself when given; else, for a claim, exactly the values its proof needs
    (2i + 2p + t); else :data:`DEFAULT_PERIOD_MAX`.

    Raises
    ------
    InputError
        Bad game, ``max`` or claim.
    """
    from .periodicity import proof_length

    game, claim = as_game(game), _claim(claim)
    if max is not None:
        return _count("max", max, 1)
    return proof_length(*claim, game.max_take) if claim else DEFAULT_PERIOD_MAX


def period(
    game,
    max: int | None = None,
    *,
    claim: tuple[int, int] | None = None,
    table=None,
    checkpoint=None,
    threads: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    chunk: int | None = None,
    checkpoint_every: float | None = None,
    progress=None,
) -> PeriodResult:
    """Find and prove the least period and preperiod of a game, as ``octalgen period`` does.

    Values are proven by the engine and kept on disk (in ``checkpoint``, else in a temporary
    directory removed at the end); the prover (:class:`~octalgen.engine.period_proof.ExactProof`)
    finds candidates, checks them by comparing values, and once G(0) ... G(2i + 2p + t - 1)
    are proven the Guy–Smith theorem proves the period; the search ends there.  A checkpoint
    directory is shared with ``octalgen period`` of the same game.

    Parameters
    ----------
    game : str or OctalGame
    max : int, optional
        Compute at most G(0) ... G(max - 1) (default :data:`DEFAULT_PERIOD_MAX`; with a claim,
        exactly the values its proof needs: see :func:`period_limit`).
    claim : (int, int), optional
        ``(period, preperiod)`` to check instead of searching: proven, or ``refuted`` says why not.
    table : RareTable, optional
        A rare-value table to start from (a hint).
    checkpoint : path, optional
        A directory to keep the values and checkpoint in: the same call resumes from it.
    threads, workers : int, optional
        Kernel threads and verifying processes, as on the command line.
    scheduler : str, optional
        Address of a Dask scheduler to verify on instead (``tcp://host:8786``).
    chunk : int, optional
        Heaps per kernel chunk and verification task (default
        :data:`~octalgen.engine.options.CHUNK`).
    checkpoint_every : float, optional
        Seconds between checkpoints (default :data:`~octalgen.engine.options.CHECKPOINT_EVERY`).
    progress : Progress, optional
        Told the computation's phase and how far it has come (:class:`~octalgen.progress.Progress`).

    Returns
    -------
    PeriodResult
        A proven period; or, with ``proven`` False, the candidates seen within ``max`` (or
        ``refuted`` for a claim that fails).

    Raises
    ------
    InputError
        Bad game, limit, claim, table or option; a checkpoint of another run.
    Interrupted
        Ctrl-C or SIGTERM during the search (the checkpoint, if any, is written first).
    """
    from .engine.period_proof import ExactProof
    from .engine.run_summary import summarized_run
    from .engine.tally import Tally

    game, claim = as_game(game), _claim(claim)
    limit = period_limit(game, max, claim)
    options = _engine_options(
        limit, threads=threads, workers=workers, scheduler=scheduler, chunk=chunk, checkpoint_every=checkpoint_every
    )
    tally = Tally(0, ExactProof(game.max_take, claim, until=limit))
    engine, summary = summarized_run(
        game,
        options,
        tally,
        table=_checked_table(table, game),
        directory=checkpoint,
        identity={"command": "period", "claim": list(claim) if claim else None},
        keep_all=True,
        progress=progress,
    )
    found = summary.period
    candidates = tuple(
        PeriodCandidate(c["period"], c["preperiod"], c["proof_length"], c["checked_to"], c["outcome"])
        for c in tally.prover.seen
    )
    return PeriodResult(
        game=game.code,
        period=found["period"] if found else None,
        preperiod=found["preperiod"] if found else None,
        proven=found is not None,
        values=engine.position,
        limit=limit,
        proof_length=found["proof_length"] if found else None,
        refuted=summary.refuted,
        candidates=candidates,
        session_values=summary.session_values,
        seconds=summary.seconds,
        session_seconds=summary.session_seconds,
    )


# -- runs --------------------------------------------------------------------------------------


def run(
    game,
    until: int,
    checkpoint=None,
    *,
    backend: str = "c",
    table=None,
    keep_values: bool = False,
    digest_from: int = 0,
    threads: int | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    chunk: int | None = None,
    checkpoint_every: float | None = None,
    progress=None,
):
    """Prove G(0) ... G(until-1) of a game and report on them, as ``octalgen run`` does.

    The values are proven by the engine (the speculative kernel, verifying processes, exact
    recovery); the run reports the FNV-1a-64 digest, the count and first heap of every value, the
    zeros, the rare values found, and the period search (a period proven by the Guy–Smith
    theorem ends the run).  With ``checkpoint`` the run is written to that directory every few
    seconds and at exit, and the same call resumes it, also after the process was killed; a
    larger ``until`` extends a finished run.  The directory is shared with ``octalgen run`` of
    the same game and options.

    Parameters
    ----------
    game : str or OctalGame
    until : int
        Prove G(0) ... G(until - 1) (at most 10**15, as on the command line).
    checkpoint : path, optional
        The checkpoint directory (made where missing); None keeps no checkpoint.
    backend : {"c", "cuda"}
        What proves the values: the generated C on this machine's cores, or the GPU.
    table : RareTable, optional
        A rare-value table to start from (a hint).
    keep_values : bool
        Keep every proven value in ``checkpoint``'s ``values/`` (for ``octalgen export``).
    digest_from : int
        Also the FNV-1a-64 digest of G(digest_from) ... G(until - 1).
    threads, workers, scheduler, chunk, checkpoint_every : optional
        How the engine computes, as the options of the same names on the command line.
    progress : Progress, optional
        Told the computation's phase and how far it has come (:class:`~octalgen.progress.Progress`).

    Returns
    -------
    RunSummary
        The run's figures (:class:`~octalgen.engine.run_summary.RunSummary`): ``to_json()`` is what
        ``octalgen run --json`` prints, ``lines()`` what it prints without.

    Raises
    ------
    InputError
        Bad game, count, option or table; a checkpoint of another run.
    ToolMissingError
        The backend cannot run here (no C compiler, no GPU).
    Interrupted
        Ctrl-C or SIGTERM (the checkpoint, if any, is written first).
    """
    from .backends import kernel_plugin
    from .engine.run_summary import summarized_run
    from .engine.tally import RecurrenceProof, Tally

    game = as_game(game)
    options = _engine_options(
        until, threads=threads, workers=workers, scheduler=scheduler, chunk=chunk, checkpoint_every=checkpoint_every
    )
    digest_from = whole("digest_from", digest_from, 0, MAX_HEAP)
    if not isinstance(keep_values, bool):
        raise InputError(f"keep_values must be True or False, not {keep_values!r}")
    if keep_values and checkpoint is None:
        raise InputError("keep_values needs a checkpoint directory (the values go to its values/)")
    if checkpoint is not None and not isinstance(checkpoint, (str, os.PathLike)):
        raise InputError(f"checkpoint must be a directory's path, not {type(checkpoint).__name__} {checkpoint!r}")
    if not isinstance(backend, str):
        raise InputError(f"backend must be a name as text (c or cuda), not {backend!r}")
    kernels = kernel_plugin(backend)
    tally = Tally(digest_from, RecurrenceProof(game.max_take))
    _, summary = summarized_run(
        game,
        options,
        tally,
        table=_checked_table(table, game),
        directory=checkpoint,
        identity={"command": "run", "digest_from": digest_from},
        keep_all=keep_values,
        progress=progress,
        kernels=kernels,
    )
    return summary


def _engine_options(until: int, *, threads=None, workers=None, scheduler=None, chunk=None, checkpoint_every=None):
    """The :class:`~octalgen.engine.options.EngineOptions` of a computation to ``until``, each option
    checked against the command line's limits (:mod:`octalgen.limits`; one
    :class:`~octalgen.errors.InputError` line for the first that is off; None: the default)."""
    from .engine.options import CHECKPOINT_EVERY, CHUNK, EngineOptions

    if scheduler is not None and not isinstance(scheduler, str):
        raise InputError(f"scheduler must be a Dask scheduler's address as text (tcp://host:8786), not {scheduler!r}")
    return EngineOptions(
        until=whole("until", until, 1, MAX_HEAP),
        threads=_processes("threads", threads, 1),
        workers=_processes("workers", workers, 0),
        scheduler=scheduler,
        chunk=CHUNK if chunk is None else whole("chunk", chunk, *CHUNK_RANGE),
        checkpoint_every=CHECKPOINT_EVERY
        if checkpoint_every is None
        else seconds("checkpoint_every", checkpoint_every),
    )


# -- rare values and what is known -------------------------------------------------------------


def rare_table(game, upto: int | None = None, *, backend: str | None = None):
    """The rare-value table of a game, as ``octalgen rare`` gives it.

    Parameters
    ----------
    game : str or OctalGame
    upto : int, optional
        Make the table exact for G(0) ... G(upto - 1): the shipped table cut to ``upto`` when it
        reaches that far, else one computed from ``upto`` exact values.  Default: the shipped
        table, or one computed from :data:`~octalgen.rare.DEFAULT_TABLE_UPTO` values.
    backend : str, optional
        The exact backend to compute with (default: the fastest).

    Returns
    -------
    RareTable
        Its ``exact_to`` is ``upto`` when ``upto`` is given.

    Raises
    ------
    InputError
        Bad game or ``upto``, or a speculative backend (a table must be exact).
    """
    from .rare import DEFAULT_TABLE_UPTO, RareTable, shipped_table

    game = as_game(game)
    upto = None if upto is None else _count("upto", upto, 1)
    shipped = shipped_table(game)
    if shipped is not None and upto is None:
        log.info("shipped table for %s (exact below %d)", game.code, shipped.exact_to)
        return shipped
    if shipped is not None and upto is not None and upto <= shipped.exact_to:
        # The shipped table is exact further: its entries below upto are the table to upto.
        log.info("shipped table for %s (exact below %d), cut to %d", game.code, shipped.exact_to, upto)
        return shipped.with_entries([(p, v) for p, v in shipped.entries if p < upto], upto)
    chosen = _backend(backend)
    if not chosen.exact:
        raise InputError(f"backend {chosen.name} is speculative; a rare table must be exact")
    upto = upto or DEFAULT_TABLE_UPTO
    log.info("computing %d exact values of %s with the %s backend", upto, game.code, chosen.name)
    return RareTable.from_values(game, values(game, upto, backend=chosen.name))


@dataclass(frozen=True)
class GameInfo:
    """What is known about a game without computing anything: what ``octalgen info`` prints.

    Attributes
    ----------
    code : str
        The canonical octal code; ``name`` its common name (``officers``) or None.
    moves : tuple of str
        The moves in words, one per number of beans removed.
    sparse_space : str or None
        The shipped table's sparse space in words (``range (popcount(G(n) & 0x1ee) even)``);
        None without a shipped table or when it has no sparse space (mask 0).
    mask : int or None
        The shipped table's rare mask (0: every value is rare), None without a shipped table.
    rare_count : int or None
        Rare values (rare heaps, for a space of positions) in the shipped table.
    last_rare : (int, int) or None
        ``(heap, value)`` of the last of them.
    exact_to : int or None
        The shipped table holds every rare value below this heap.
    period, preperiod, max_value : int or None
        From the table of solved games (published results), when the game is there.
    game : OctalGame
    table : RareTable or None
        The shipped table itself (left out of the repr: it can hold thousands of entries).
    """

    code: str
    name: str | None
    moves: tuple[str, ...]
    sparse_space: str | None
    mask: int | None
    rare_count: int | None
    last_rare: tuple[int, int] | None
    exact_to: int | None
    period: int | None
    preperiod: int | None
    max_value: int | None
    game: OctalGame = field(repr=False)
    table: object = field(repr=False, compare=False)

    @property
    def solved(self) -> bool:
        """True when the game's period is known (it is in the table of solved games)."""
        return self.period is not None

    @property
    def proof_length(self) -> int | None:
        """For a solved game, the values its Guy–Smith proof needs: G(0) ... G(proof_length - 1)."""
        from .periodicity import proof_length

        if self.period is None or self.preperiod is None:  # not solved
            return None
        return proof_length(self.period, self.preperiod, self.game.max_take)


def info(game) -> GameInfo:
    """What is known about a game, from the shipped tables only (nothing is computed).

    Raises
    ------
    GameCodeError
        For text that is no game.
    """
    from .periodicity import solved_games
    from .rare import shipped_table

    game = as_game(game)
    table = shipped_table(game)
    solved = solved_games().get(game)
    return GameInfo(
        code=game.code,
        name=game.name,
        moves=tuple(game.describe()),
        sparse_space=table.describe() if table is not None and table.mask else None,
        mask=table.mask if table is not None else None,
        rare_count=table.count if table is not None else None,
        last_rare=table.entries[-1] if table is not None and table.entries else None,
        exact_to=table.exact_to if table is not None else None,
        period=solved.period if solved else None,
        preperiod=solved.preperiod if solved else None,
        max_value=solved.max_value if solved else None,
        game=game,
        table=table,
    )
