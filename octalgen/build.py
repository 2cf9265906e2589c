"""Compile generated code into cached artefacts: cffi extension modules and other builds.

The flow is plan -> render -> build -> wrap; this module is *build*.

* Every artefact is keyed by a content hash of everything that could change
  it: the source and the shipped headers it includes, the interface, the
  compiler's identity and flags, the versions of cffi, Python and octalgen,
  and the machine (flags like ``-march=native`` make code that only runs on
  this kind of CPU).
* Artefacts live under :func:`cache_dir` (``$OCTALGEN_CACHE_DIR``, else the
  user cache directory), one directory per key.  A build happens in a staging
  directory that is renamed into place when complete, under a lock per key, so
  concurrent processes build once and never see half an artefact.
* An artefact that cannot be loaded is a cache miss: it is removed and built
  again, once.
* A failed compilation raises :class:`~octalgen.errors.BuildError` with the
  compiler's messages and the path of the kept source.  A compiler stopped by Ctrl-C or
  SIGTERM (sent to the process group, as a terminal sends it) is a cancellation, not a
  failure: nothing is kept, and KeyboardInterrupt (:class:`~octalgen.errors.Terminated`) is
  raised.  A staging directory left by a builder that was killed goes at the next build of
  the same artefact.
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib.util
import json
import logging
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from . import __version__
from .errors import BuildError, Terminated, ToolMissingError

log = logging.getLogger("octalgen")

#: Flags for generated C: optimised for this machine's CPU (the cache key includes the CPU).
DEFAULT_CFLAGS = ("-O3", "-march=native", "-std=gnu11", "-pthread")

_COMPLETE = "artefact.json"


def cache_dir() -> Path:
    """Where artefacts are cached: ``$OCTALGEN_CACHE_DIR`` or the user cache directory."""
    if os.environ.get("OCTALGEN_CACHE_DIR"):
        return Path(os.environ["OCTALGEN_CACHE_DIR"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "octalgen"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "octalgen"


# -- compilers ---------------------------------------------------------------


def command_from_environment(variable: str, what: str) -> list[str] | None:
    """The command ``$variable`` names (split as a shell would), None where it is not set.

    Raises
    ------
    ToolMissingError
        When the command it names is not found.
    """
    chosen = os.environ.get(variable)
    if not chosen:
        return None
    command = shlex.split(chosen)
    if not shutil.which(command[0]):
        raise ToolMissingError(f"{what} {command[0]!r} from ${variable} not found; set {variable} to a {what}")
    return command


def find_compiler(variable: str = "CC", candidates=("cc", "gcc", "clang")) -> list[str]:
    """The C compiler command: ``$CC`` if set, else the first of ``candidates`` on PATH.

    Raises
    ------
    ToolMissingError
        Naming what was looked for and how to set ``CC``.
    """
    chosen = command_from_environment(variable, "C compiler")
    if chosen:
        return chosen
    for name in candidates:
        if shutil.which(name):
            return [name]
    raise ToolMissingError(
        f"no C compiler found (looked for {', '.join(candidates)} on PATH); install one or set {variable}=/path/to/cc"
    )


@cache
def tool_identity(command: tuple[str, ...]) -> str:
    """First line of ``command --version`` plus the resolved path: what built an artefact."""
    try:
        out = subprocess.run([*command, "--version"], check=False, capture_output=True, text=True, timeout=60)
        first = (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""
    except (OSError, subprocess.SubprocessError):
        first = "unknown"
    return f"{shutil.which(command[0])}: {first}"


@cache
def machine_identity() -> str:
    """The OS, architecture and CPU (model and feature flags), for keys of native code."""
    try:
        with open("/proc/cpuinfo") as f:
            fields = {}
            for line in f:
                if not line.strip():
                    break  # first processor only
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
        cpu = f"{fields.get('model name', '')} {fields.get('flags', fields.get('Features', ''))}"
    except OSError:
        cpu = platform.processor()  # where there is no /proc (it may run uname: not on Linux)
    return f"{platform.system()} {platform.machine()} {hashlib.sha256(cpu.encode()).hexdigest()[:16]}"


# -- the cache ---------------------------------------------------------------


@dataclass(frozen=True)
class Artefact:
    """A directory in the cache holding one complete build.

    Attributes
    ----------
    name : str
        Unique name: a prefix and the first hex digits of the key.
    path : Path
        The artefact's directory.
    cached : bool
        True when it was found in the cache, False when built now.
    seconds : float
        Build time (0 for a cache hit).
    """

    name: str
    path: Path
    cached: bool
    seconds: float


def content_key(material: dict) -> str:
    """sha256 of a JSON-serialisable description of everything a build depends on."""
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached_build(
    prefix: str, material: dict, builder: Callable[[Path, str], None], what: str | None = None
) -> Artefact:
    """Return the artefact for ``material``, building it with ``builder(staging_dir, name)`` on a miss.

    Parameters
    ----------
    prefix : str
        Start of the artefact name (letters, digits, underscores).
    material : dict
        Everything the build depends on; hashed into the key.
    builder : callable
        ``builder(staging_dir, name)`` writes the artefact's files into the
        directory it is given (``name`` is the artefact's name); raises on failure.
    what : str, optional
        Description for log lines (default: ``prefix``).
    """
    what = what or prefix
    key = content_key({"material": material, "octalgen": __version__})
    name = f"{prefix}_{key[:20]}"
    root = cache_dir()
    final = root / name
    if (final / _COMPLETE).is_file():
        return Artefact(name, final, True, 0.0)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BuildError(f"cannot create the cache directory {root}: {exc.strerror}; set OCTALGEN_CACHE_DIR") from None
    with _lock(root / f"{name}.lock"):
        if (final / _COMPLETE).is_file():  # another process built it while we waited
            return Artefact(name, final, True, 0.0)
        if final.exists():  # a partial or broken artefact: a miss
            shutil.rmtree(final, ignore_errors=True)
        _remove_staging(root, name)  # by a builder killed under the lock
        try:
            staging = Path(tempfile.mkdtemp(prefix=f".staging-{name}-", dir=root))
            began = time.perf_counter()
            builder(staging, name)
            seconds = time.perf_counter() - began
            (staging / _COMPLETE).write_text(json.dumps({"key": key, "seconds": seconds}, default=str))
            os.rename(staging, final)
        except BaseException:
            # A failed compile was kept by run_compiler.  Under the lock every staging directory of this
            # name is this builder's, so an interrupt anywhere (even as mkdtemp returns) leaves none.
            _remove_staging(root, name)
            raise
    log.info("compiled %s in %.1f s", what, seconds)
    return Artefact(name, final, False, seconds)


def _remove_staging(root: Path, name: str) -> None:
    """Remove the staging directories of artefact ``name`` under ``root`` (the caller holds its lock).

    A compiler stopped with the build (Ctrl-C reaches its whole process group) may still create a
    file there as it dies, after the removal listed the directory: it is removed again until gone.
    """
    for left in glob.glob(glob.escape(str(root / f".staging-{name}-")) + "*"):
        for _ in range(100):
            shutil.rmtree(left, ignore_errors=True)
            if not os.path.lexists(left):
                break
            time.sleep(0.01)


def discard(artefact: Artefact) -> None:
    """Remove a bad artefact from the cache so that the next request rebuilds it."""
    shutil.rmtree(artefact.path, ignore_errors=True)


def keep_failed(staging: Path, name: str) -> Path:
    """Move a failed build's directory to ``failed/<name>`` in the cache and return it."""
    kept = cache_dir() / "failed" / name
    shutil.rmtree(kept, ignore_errors=True)
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(staging, kept)
    shutil.rmtree(staging, ignore_errors=True)
    return kept


def run_compiler(command: list[str], cwd: Path, name: str, source: Path) -> str:
    """Run a compiler and return its messages; on failure keep the directory and raise :class:`BuildError`.

    A compiler killed by a signal did not fail on the source: nothing is kept.  Stopped by Ctrl-C
    or SIGTERM, the build is cancelled (KeyboardInterrupt, :class:`~octalgen.errors.Terminated`).
    Its temporary files go to ``cwd`` (a staging directory), so that one killed outright (its
    build cancelled in a worker process, which ignores Ctrl-C and so does its compiler) leaves
    none elsewhere.
    """
    result = subprocess.run(
        command, check=False, cwd=cwd, capture_output=True, text=True, env={**os.environ, "TMPDIR": str(cwd)}
    )
    if result.returncode < 0:
        number = -result.returncode
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        if number == signal.SIGTERM:
            raise Terminated
        why = " (out of memory?)" if number == signal.SIGKILL else ""
        raise BuildError(
            f"compiling {source.name}: the compiler {command[0]} was killed by {signal.Signals(number).name}{why}"
        )
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        (cwd / "compile.log").write_text(" ".join(map(shlex.quote, command)) + "\n" + output + "\n")
        kept = keep_failed(cwd, name)
        errors = [line for line in output.splitlines() if "error" in line] or output.splitlines()[-3:]
        error = BuildError(
            f"compiling {source.name} failed (source and compile.log kept in {kept}): " + " | ".join(errors[:3])
        )
        error.compiler_output = output
        error.kept = kept
        raise error
    return result.stdout + result.stderr


# -- cffi extension modules ----------------------------------------------------


@dataclass(frozen=True)
class CompiledModule:
    """A loaded cffi extension module.

    Attributes
    ----------
    ffi, lib
        The module's cffi objects: call C functions as ``lib.name(...)``.
    artefact : Artefact
        Where it lives in the cache and whether it was built now.
    """

    # Both are made at run time from the module's cdef, which no type checker sees.
    ffi: Any
    lib: Any
    artefact: Artefact


_LOADED: dict[str, CompiledModule] = {}


def build_module(prefix: str, source: str, cdef: str, flags=DEFAULT_CFLAGS, what: str | None = None) -> CompiledModule:
    """Compile C ``source`` exposing the declarations ``cdef`` into a cached cffi module.

    Parameters
    ----------
    prefix : str
        Start of the module name (letters, digits, underscores).
    source : str
        Complete C source (the generated code).  The shipped headers it includes
        (:func:`~octalgen.c_headers.included_headers`) are compiled beside it and are part of the key.
    cdef : str
        The declarations Python may call (cffi ``cdef`` syntax).
    flags : sequence of str
        Compiler flags; part of the cache key.
    what : str, optional
        Description for log lines.

    Raises
    ------
    ToolMissingError
        No C compiler.
    BuildError
        Compilation or loading failed (the message carries the compiler's
        first errors and the path of the kept source).
    """
    import cffi
    from cffi.recompiler import make_c_source  # emit_c_code would print to stdout

    from .c_headers import included_headers

    what = what or prefix
    compiler = find_compiler()
    headers = included_headers(source)
    material = {
        "kind": "cffi-module",
        "source": source,
        "headers": headers,
        "cdef": cdef,
        "compiler": tool_identity(tuple(compiler)),
        "flags": list(flags),
        "cffi": cffi.__version__,
        "python": sys.version,
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "machine": machine_identity(),
    }

    def builder(staging: Path, name: str) -> None:
        ffi = cffi.FFI()
        ffi.cdef(cdef)
        wrapper = staging / f"{name}.c"
        # #line makes compiler messages point into generated.c, the file users read.
        make_c_source(ffi, name, f'#line 1 "generated.c"\n{source}', str(wrapper), verbose=False)
        (staging / "generated.c").write_text(source)
        for header, text in headers.items():  # under the staging folder, which -I. names
            (staging / header).parent.mkdir(parents=True, exist_ok=True)
            (staging / header).write_text(text)
        target = staging / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
        link = ["-bundle", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
        command = [
            *compiler,
            *flags,
            "-fPIC",
            *link,
            "-I.",
            f"-I{sysconfig.get_paths()['include']}",
            wrapper.name,
            "-o",
            target.name,
        ]
        run_compiler(command, staging, name, wrapper)

    for attempt in (1, 2):
        artefact = cached_build(prefix, material, builder, what)
        if artefact.name in _LOADED:
            return _LOADED[artefact.name]
        try:
            compiled = _loaded(artefact)
        except (ImportError, OSError) as exc:
            discard(artefact)
            if attempt == 2 or not artefact.cached:
                raise BuildError(f"built {what} but could not load it: {exc}") from None
            log.warning("cached %s could not be loaded (%s); rebuilding", what, exc)
            continue
        if artefact.cached:
            log.info("loaded %s from cache", what)
        return compiled
    raise AssertionError("unreachable")


def module_address(module: CompiledModule) -> tuple[str, str, str]:
    """Where a loaded module lies and what can load it: (name, directory, :func:`loader_identity`), for
    another process of this machine to load it by :func:`load_module_at` without making its source."""
    return module.artefact.name, str(module.artefact.path), loader_identity()


def load_module_at(address: tuple[str, str, str]) -> CompiledModule | None:
    """The module at ``address`` (:func:`module_address`), or None where this process cannot take it
    from there: another machine or Python, or the artefact gone (the caller then builds it)."""
    name, folder, identity = address
    if name in _LOADED:
        return _LOADED[name]
    path = Path(folder)
    if identity != loader_identity() or not (path / _COMPLETE).is_file():
        return None
    try:
        return _loaded(Artefact(name, path, True, 0.0))
    except (ImportError, OSError):
        return None


@cache
def loader_identity() -> str:
    """The machine and the Python that load native modules: one built for another may not run here."""
    return f"{machine_identity()} {sys.version} {sysconfig.get_config_var('EXT_SUFFIX')}"


def _loaded(artefact: Artefact) -> CompiledModule:
    """The module of ``artefact``, loaded once a process (:data:`_LOADED`); ImportError or OSError
    where it cannot be loaded."""
    if artefact.name not in _LOADED:
        module = _load_extension(artefact)
        _LOADED[artefact.name] = CompiledModule(module.ffi, module.lib, artefact)
    return _LOADED[artefact.name]


def _load_extension(artefact: Artefact):
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    path = artefact.path / f"{artefact.name}{suffix}"
    if not path.is_file():
        raise ImportError(f"{path.name} is missing")
    spec = importlib.util.spec_from_file_location(artefact.name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path.name} is not a loadable extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
