"""The build cache (:mod:`octalgen.build`): hit, miss, changed flags, broken artefacts, two processes.

Each test works in a cache directory of its own, with a C source of a few lines, so the
compiles take a fraction of a second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from octalgen import build
from octalgen.errors import BuildError, Terminated, ToolMissingError

SOURCE = "int answer(int x) { return x * 6 + 4; }\n"
CDEF = "int answer(int x);"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory and no module loaded in this process from an earlier test."""
    monkeypatch.setenv("OCTALGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(build, "_LOADED", {})
    return tmp_path / "cache"


def artefacts(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if p.is_dir() and (p / "artefact.json").is_file())


def test_miss_then_hit(cache):
    built = build.build_module("octalgen_t", SOURCE, CDEF)
    assert built.lib.answer(7) == 46 and not built.artefact.cached
    build._LOADED.clear()  # as a new process would: found on disk, not in memory
    again = build.build_module("octalgen_t", SOURCE, CDEF)
    assert again.artefact.cached and again.artefact.path == built.artefact.path
    assert again.lib.answer(1) == 10
    assert len(artefacts(cache)) == 1


def test_changed_source_or_flags_is_a_new_artefact(cache):
    first = build.build_module("octalgen_t", SOURCE, CDEF)
    other_source = build.build_module("octalgen_t", SOURCE.replace("+ 4", "+ 5"), CDEF)
    other_flags = build.build_module("octalgen_t", SOURCE, CDEF, flags=("-O1", "-std=gnu11"))
    names = {first.artefact.name, other_source.artefact.name, other_flags.artefact.name}
    assert len(names) == 3
    assert other_source.lib.answer(7) == 47 and other_flags.lib.answer(7) == 46
    assert len(artefacts(cache)) == 3


def test_a_shipped_header_is_compiled_beside_the_source_and_keys_it(cache, monkeypatch):
    """A source that includes a shipped header (templates/c/include/octalgen/) is built with it, and a
    change of the header alone is a new artefact; inlined, the source needs no header."""
    from octalgen import c_headers

    source = '#include "octalgen/prelude.h"\n#include "octalgen/answer.h"\n'
    texts = {"octalgen/answer.h": '#include "octalgen/prelude.h"\nint answer(int x) { return x * 6 + 4; }\n'}
    shipped = c_headers.shipped_header
    monkeypatch.setattr(c_headers, "shipped_header", lambda name: texts.get(name) or shipped(name))
    first = build.build_module("octalgen_t", source, CDEF)
    assert first.lib.answer(7) == 46 and (first.artefact.path / "octalgen" / "answer.h").is_file()
    assert list(c_headers.included_headers(source)) == ["octalgen/prelude.h", "octalgen/answer.h"]
    texts["octalgen/answer.h"] = texts["octalgen/answer.h"].replace("+ 4", "+ 5")
    second = build.build_module("octalgen_t", source, CDEF)
    assert second.artefact.name != first.artefact.name and second.lib.answer(7) == 47
    standalone = c_headers.inline_headers(source)
    assert '#include "octalgen/' not in standalone and standalone.count("#define OCTALGEN_PRELUDE_H") == 1
    assert build.build_module("octalgen_t", standalone, CDEF).lib.answer(7) == 47


def build_in_new_process(cache: Path) -> dict:
    """Build (or load) the test module in a fresh interpreter, as a second run of octalgen would."""
    script = textwrap.dedent(
        f"""
        import json, logging
        from octalgen import build
        logging.basicConfig(level=logging.INFO)
        built = build.build_module("octalgen_t", {SOURCE!r}, {CDEF!r})
        print(json.dumps({{"answer": built.lib.answer(2), "cached": built.artefact.cached,
                           "path": str(built.artefact.path)}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OCTALGEN_CACHE_DIR": str(cache)},
    )
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout), "log": done.stderr}


def test_corrupt_artefact_is_rebuilt(cache):
    # A loaded extension stays loaded in its process, so the damage is seen by the next process.
    first = build_in_new_process(cache)
    shared = next(Path(first["path"]).glob("*.so"))
    shared.write_bytes(b"not an ELF file")
    again = build_in_new_process(cache)
    assert again["answer"] == 16 and not again["cached"]
    assert "could not be loaded" in again["log"] and "rebuilding" in again["log"]
    assert build_in_new_process(cache)["cached"]


def test_partial_artefact_is_a_miss(cache):
    def builder(staging: Path, name: str) -> None:
        (staging / "out.txt").write_text("complete")

    key_dir = build.cached_build("octalgen_p", {"x": 1}, builder).path
    (key_dir / "artefact.json").unlink()  # as if a build had died before renaming into place
    (key_dir / "out.txt").write_text("half")
    again = build.cached_build("octalgen_p", {"x": 1}, builder)
    assert not again.cached and (again.path / "out.txt").read_text() == "complete"


def test_an_interrupted_build_leaves_no_staging_even_as_its_compiler_writes(cache, monkeypatch):
    """Ctrl-C reaches the compiler's whole process group: a dying compiler may still create a file in the
    staging directory after the removal listed it, so that the removal, ignoring errors, leaves it.  The
    build removes it again until it is gone."""
    real_rmtree, calls = build.shutil.rmtree, []

    def rmtree(path, ignore_errors=False):
        calls.append(path)
        if len(calls) == 1:  # the directory emptied, and a file made again before its rmdir: ENOTEMPTY, ignored
            (Path(path) / "late.o").write_text("")
            return
        real_rmtree(path, ignore_errors=ignore_errors)

    def builder(staging: Path, name: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(build.shutil, "rmtree", rmtree)
    with pytest.raises(KeyboardInterrupt):
        build.cached_build("octalgen_w", {"x": 1}, builder)
    assert not list(cache.glob(".staging-*")) and len(calls) == 2


def test_failed_compile_keeps_the_source_and_caches_nothing(cache):
    with pytest.raises(BuildError) as caught:
        build.build_module("octalgen_bad", "int answer(int x) { return x +; }\n", CDEF)
    assert "compiling" in str(caught.value)
    kept = caught.value.kept
    assert (kept / "generated.c").is_file() and (kept / "compile.log").is_file()
    assert artefacts(cache) == []


@pytest.mark.parametrize(
    "signal_name, raised", [("INT", KeyboardInterrupt), ("TERM", Terminated), ("KILL", BuildError)]
)
def test_a_compiler_killed_by_a_signal_keeps_nothing(cache, tmp_path, monkeypatch, signal_name, raised):
    """Ctrl-C or SIGTERM to the process group reaches the compiler: the build is cancelled, as the
    command is; killed otherwise (out of memory), it failed, but not on the source.  Either way no
    failed/ entry, no staging directory, and the compiler's temporary files stay in the staging
    directory (gone with it)."""
    compiler = tmp_path / "cc"
    compiler.write_text(
        f"#!/bin/sh\n[ \"$1\" = --version ] && echo 'a stand-in' && exit 0\n"
        f'touch "$TMPDIR/ccTEMP.s"\nkill -{signal_name} $$\n'
    )
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    with pytest.raises(raised) as stopped:
        build.build_module("octalgen_t", SOURCE, CDEF)
    if raised is BuildError:
        assert "was killed by SIGKILL (out of memory?)" in str(stopped.value) and "\n" not in str(stopped.value)
    assert sorted(entry.name for entry in cache.iterdir()) == [next(cache.glob("*.lock")).name]


def test_missing_compiler_is_one_clear_error(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(ToolMissingError, match="set CC"):
        build.build_module("octalgen_t", SOURCE, CDEF)


def test_two_processes_build_once(cache, tmp_path):
    # Both processes ask for the same key at once; the builder sleeps so that their requests
    # overlap, and logs each build.  The lock per key lets exactly one of them build.
    log = tmp_path / "builds.log"
    script = textwrap.dedent(
        f"""
        import json, sys, time
        from pathlib import Path
        from octalgen import build

        def builder(staging, name):
            with open({str(log)!r}, "a") as f:
                f.write(name + "\\n")
            time.sleep(1.0)
            (staging / "out.txt").write_text("done")

        art = build.cached_build("octalgen_race", {{"k": 1}}, builder)
        print(json.dumps({{"path": str(art.path), "cached": art.cached}}))
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(log.read_text().splitlines()) == 1
    assert results[0]["path"] == results[1]["path"]
    assert sorted(r["cached"] for r in results) == [False, True]
    assert (Path(results[0]["path"]) / "out.txt").read_text() == "done"
    assert not list(cache.glob(".staging-*"))


def test_a_render_is_kept_and_keyed_by_its_templates_and_context(cache, monkeypatch):
    """Rendered text is read back where the templates and the context are the same; a context that
    differs, even only a tuple for a list, or another template's text renders anew."""
    from octalgen import render as rendering

    made = []
    environment = rendering.environment
    monkeypatch.setattr(rendering, "environment", lambda: made.append(1) or environment())
    header = {"provenance": ["unit: x"], "declarations": "int f(void);", "guard": "X_H"}
    text = rendering.render("c/header.h.j2", **header)
    assert "int f(void);" in text and made == [1]
    assert rendering.render("c/header.h.j2", **header) == text and made == [1]
    assert "Y_H" in rendering.render("c/header.h.j2", **(header | {"guard": "Y_H"})) and len(made) == 2
    assert rendering.render("c/header.h.j2", **(header | {"provenance": ("unit: x",)})) == text and len(made) == 3
    monkeypatch.setattr(rendering, "_templates_digest", lambda: "templates edited")
    assert rendering.render("c/header.h.j2", **header) == text and len(made) == 4
