"""``octalgen bench CODE``: how fast the generated C is, against baselines measured in the same run.

For N heaps from the kernel's first heap it times the speculative kernel with one thread and
with T, the naive C baseline (Grossman's Figure 3 as a loop over the term table, same flags),
the verifier in one process against its own plain C proof scan (CPU time on the last heaps, in
alternating rounds; with the options it scanned per heap and the time per option, a measure of
the machine rather than of the last version), and the whole exact backend with T threads and T
verifying processes; the pure-Python reference is timed on its first, smaller count.  It also
checks that all of them agree, so a fast wrong kernel cannot pass.  Tests never time anything:
speed is measured here (``benchmarks/`` compares versions).

``--backend cuda`` measures the GPU instead (:func:`octalgen.cuda.bench.run_benchmark`):
speculative and verified values/s, rounds per window and the checksum, against the
one-thread C kernel timed in the same command.
"""

from __future__ import annotations

import os
import textwrap
import time

import numpy as np

from ..cpu.kernel import NaiveKernel, SpeculativeKernel, default_threads
from ..cpu.verify import PLAIN_SCAN_FLAGS, Verifier
from ..engine.planning import plan_game
from ..engine.values import ValueStream
from ..errors import InputError, InternalError
from ..reference import exact_values as reference_values
from .arguments import add_game, count_type

DEFAULT_COUNT = 1 << 22
REFERENCE_COUNT = 20_000
#: The verifier rows prove the last heaps of N, at most this many, in VERIFY_ROUNDS alternating
#: rounds of the vector and the plain proof scan (the plain one takes seconds per round).
VERIFY_SAMPLE = 1 << 19
VERIFY_ROUNDS = 3
#: Columns of bench's report: every line fits this, whatever the terminal (a report is kept in files too).
WIDTH = 80


def register(sub) -> None:
    parser = sub.add_parser(
        "bench",
        help="time the generated C against the naive C loop and the Python reference",
        description="Time the generated C of a game on N heaps from the kernel's first heap: the speculative "
        "kernel with one thread and with T, the naive C loop over the same terms, the verifier, the "
        "whole exact backend and the Python reference, each as values/s and as a ratio to a baseline "
        "timed in the same command; it also checks that they all agree.  --backend cuda times the GPU "
        "instead.  Timings depend on the load of the machine, which is printed.",
        epilog="examples:\n  octalgen bench .6 -n 1e7 --threads 2\n  octalgen bench .6 -n 1e8 --backend cuda",
    )
    add_game(parser)
    parser.add_argument(
        "-n",
        "--count",
        type=count_type,
        default=DEFAULT_COUNT,
        metavar="N",
        help=f"heaps to compute from the kernel's first heap (default {DEFAULT_COUNT})",
    )
    parser.add_argument(
        "--threads",
        type=count_type,
        metavar="T",
        help="threads and verifying processes for the multi-threaded figures (default: all cores)",
    )
    parser.add_argument(
        "--backend",
        choices=("c", "cuda"),
        default="c",
        help="what to time: the generated C (default) or the GPU (needs octalgen[cuda] and a GPU)",
    )
    parser.set_defaults(run=run)


def _timed(function, *args, **kwargs):
    began = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - began


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def _verify_cpu(verifiers, codes, base, prefix, a, b):
    """Each verifier on [a, b) in turn, VERIFY_ROUNDS times: verdicts and CPU seconds per round.

    CPU time of this thread (the verifier runs in it), so other work on a busy machine counts
    less than it would in wall-clock time; alternating rounds share whatever load there is.
    """
    verdicts = []
    seconds: list[list[float]] = [[] for _ in verifiers]
    for _ in range(VERIFY_ROUNDS):
        for verifier, times in zip(verifiers, seconds):
            began = time.thread_time()
            verdicts.append(verifier.verify(codes, base, prefix, a, b))
            times.append(time.thread_time() - began)
    return verdicts, seconds


def run(args) -> int:
    if args.count < 1 or (args.threads is not None and args.threads < 1):
        raise InputError("-n and --threads must be at least 1")
    return _bench_cuda(args) if args.backend == "cuda" else _bench_c(args)


def _bench_cuda(args) -> int:
    from ..cuda.bench import run_benchmark
    from ..cuda.runtime import require_gpu

    require_gpu()  # one line, before the C baseline spends any time
    game, count = args.game, args.count
    plan, prefix = plan_game(game, required=True)
    baseline_count = min(count, DEFAULT_COUNT)
    codes = np.empty(plan.window + baseline_count, dtype=SpeculativeKernel(plan).dtype)
    codes[: plan.window] = plan.encoding.encode_array(prefix[plan.start - plan.window :])
    kernel = SpeculativeKernel(plan)
    _ = kernel.module  # compile (or load) before the clock starts
    _, c_seconds = _timed(kernel.fill, codes, plan.start, 1)
    c_rate = baseline_count / c_seconds
    figures = run_benchmark(game.code, max(count, plan.start + 1))
    _say(
        f"octalgen bench {game.code} --backend cuda: G(0) ... G({figures['count'] - 1}), "
        f"window {figures['window']} positions per round, whole runs through the engine"
    )
    rows = (
        ("speculative (GPU, whole run)", "speculative_values_per_s"),
        ("verified (GPU, whole run)", "verified_values_per_s"),
        ("round kernels alone (device time)", "kernel_values_per_s"),
    )
    for name, key in rows:
        if figures.get(key):
            _row(name, figures[key], f"{figures[key] / c_rate:.1f}x the C kernel")
    _row("C speculative kernel, 1 thread", c_rate, "the baseline", f"on {baseline_count} heaps of this machine")
    _say(
        f"rounds {figures['rounds']} ({figures['microseconds_per_round']:.2f} us each); positions recomputed per "
        f"value {figures['recomputed_per_value']:.2f}; rounds per window {figures['rounds_per_window']}"
    )
    known = figures.get("checksum_known")
    _say(f"fnv1a64 {figures['checksum']}" + (f" (agreed: {known})" if known else ""))
    if not figures["checksum_ok"]:
        raise InternalError(
            f"bench: the GPU values are wrong (checksum {figures['checksum']}, speculative "
            f"{figures['speculative_checksum']})"
        )
    return 0


def _bench_c(args) -> int:
    game, count = args.game, args.count
    threads = args.threads or default_threads()
    plan, prefix = plan_game(game, required=True)
    threads = min(threads, SpeculativeKernel(plan).max_threads)
    start, window = plan.start, plan.window
    _say(
        f"octalgen bench {game.code}: N = {count} heaps from G({start}); kernel of {len(plan.terms)} terms, "
        f"{plan.encoding.kind} storage; {os.cpu_count()} cores, load average {_load()} at start"
    )

    def buffer():
        codes = np.empty(window + count, dtype=SpeculativeKernel(plan).dtype)
        codes[:window] = plan.encoding.encode_array(prefix[start - window :])
        return codes

    kernel, naive, verifier = SpeculativeKernel(plan), NaiveKernel(plan), Verifier(plan)
    plain_verifier = Verifier(plan, flags=PLAIN_SCAN_FLAGS)
    _ = kernel.module, naive.module, verifier.module, plain_verifier.module  # compile (or load) before any clock starts
    one = buffer()
    _, one_s = _timed(kernel.fill, one, start, 1)
    many = buffer()
    _, many_s = _timed(kernel.fill, many, start, threads)
    fell_back = kernel.fell_back_at
    plain = buffer()
    _, naive_s = _timed(naive.fill, plain, start)
    sample = min(count, VERIFY_SAMPLE)
    verdicts, (verify_s, plain_s) = _verify_cpu(
        (verifier, plain_verifier), one, start - window, prefix, start + count - sample, start + count
    )
    verdict = verdicts[0]
    stream = ValueStream(game, 0, start + count, threads=threads, workers=threads)
    exact, exact_s = _timed(lambda: np.concatenate(list(stream)))
    reference, reference_s = _timed(reference_values, game, min(REFERENCE_COUNT, start + count))

    decoded = plan.encoding.decode_array(one[window:], start)
    if not (
        np.array_equal(one, many)
        and np.array_equal(one, plain)
        and verdict.proven
        and all(v == verdict for v in verdicts)
        and np.array_equal(exact[start:], decoded)
        and np.array_equal(exact[: len(reference)], reference)
    ):
        raise InternalError(f"bench: the kernels, verifier and reference disagree ({verdict})")

    rate = {name: count / seconds for name, seconds in (("one", one_s), ("many", many_s), ("naive", naive_s))}
    rate["verify"], rate["plain verify"] = (sample / float(np.median(s)) for s in (verify_s, plain_s))
    speedup = float(np.median(np.divide(plain_s, verify_s)))
    exact_rate = (start + count) / exact_s
    reference_rate = len(reference) / reference_s
    fell = f"fell back to one thread at G({fell_back}): cores busy" if fell_back is not None else None
    _row("speculative kernel, 1 thread", rate["one"], f"{rate['one'] / rate['naive']:.2f}x naive C")
    many = f"{threads} thread" + ("s" if threads > 1 else "")
    _row(f"speculative kernel, {many}", rate["many"], f"{rate['many'] / rate['one']:.2f}x one thread", fell)
    _row("naive C (loop over the term table)", rate["naive"], "the baseline", "same compiler flags")
    options = verdict.options_scanned / sample
    _row(
        "verifier, 1 process",
        rate["verify"],
        f"{options:,.0f} options/heap",
        f"{1e9 / rate['verify'] / options:.3f} ns an option scanned (marks of the terms included); per core "
        f"(CPU time, last {sample} heaps, median of {VERIFY_ROUNDS})",
    )
    _row(
        "verifier, plain C proof scan",
        rate["plain verify"],
        f"{1 / speedup:.2f}x the verifier",
        f"same unit and heaps, no vectors (-DOCTALGEN_PLAIN_SCAN); median of {VERIFY_ROUNDS}",
    )
    _row(
        f"exact --backend c, {many}",
        exact_rate,
        "",
        f"G(0) ... G({start + count - 1}): exact prefix, kernel, {threads} verifying "
        f"process{'es' if threads > 1 else ''}",
    )
    _row(
        f"Python reference, first {len(reference)}",
        reference_rate,
        f"kernel {rate['one'] / reference_rate:.0f}x faster",
        f"exact C {exact_rate / reference_rate:.0f}x faster",
    )
    roles = stream.engine.session.roles()
    _say(
        "  exact backend, CPU seconds per 10^8 values: "
        + ", ".join(
            f"{role} {figures['per_1e8_values']:,.1f}" for role, figures in roles.items() if figures["cpu_seconds"]
        )
    )
    _say(
        f"all agree (kernel 1 and {many}, naive, verifier and its plain scan, exact backend, "
        f"reference); load average {_load()} at end"
    )
    return 0


def _row(name: str, rate: float, comparison: str, note: str | None = None) -> None:
    """A row of figures: what was timed, its rate and how it compares (``note``: on lines below)."""
    print(f"  {name:<34} {rate / 1e6:8.3f} M values/s  {comparison}".rstrip())
    if note:
        _say(note, indent="      ")


def _say(text: str, indent: str = "") -> None:
    """``text`` wrapped to :data:`WIDTH` columns after ``indent`` (default: the text's own), later lines four more."""
    lead = indent or text[: len(text) - len(text.lstrip())]
    print(
        "\n".join(
            textwrap.wrap(
                text.strip(), WIDTH, initial_indent=lead, subsequent_indent=lead + "    ", break_on_hyphens=False
            )
        )
    )
