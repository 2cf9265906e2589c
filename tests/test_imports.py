"""How octalgen's modules import each other: no circle, the hardware side apart from the backends, no
private name taken from another module, and the engine's seams free of concrete modules.

The imports are read from the source with :mod:`ast` (module-level and function-level alike), so a
circle hidden inside a function is found as surely as one at the top of a file.  That commands start
without Amaranth is tested by running them (tests/test_startup.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "octalgen"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _absolute(importer: str, level: int, module: str | None) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in ``importer``."""
    if level == 0:
        return module or ""
    package = importer.split(".") if MODULES[importer].name == "__init__.py" else importer.split(".")[:-1]
    package = package[: len(package) - (level - 1)]
    return ".".join(package + ([module] if module else []))


def imports_of(importer: str) -> set[str]:
    """The octalgen modules ``importer`` imports, anywhere in its source.

    ``import a.b.c`` also imports the packages ``a`` and ``a.b``; ``from a import b`` imports the
    module ``a.b`` where there is one.  A module's own packages are left out: Python imports them
    before the module runs, so they cannot close a circle through it.
    """
    found = set()
    for node in ast.walk(ast.parse(MODULES[importer].read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(importer, node.level, node.module)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            for end in range(1, len(parts) + 1):
                target = ".".join(parts[:end])
                if target in MODULES and not (importer == target or importer.startswith(target + ".")):
                    found.add(target)
    return found


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]
    assert import_circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_between_octalgen_modules():
    graph = {module: imports_of(module) for module in MODULES}
    assert "octalgen.reference" in graph["octalgen.rare"]  # the reader sees imports at all
    assert import_circles(graph) == []


def test_the_sparse_space_imports_neither_the_tables_nor_the_reference():
    assert not imports_of("octalgen.sparse") & {"octalgen.rare", "octalgen.reference"}


def test_the_hardware_package_does_not_import_the_backends():
    """The FPGA side gets its exact values from the engine and the plan, not the --backend registry."""
    hdl = [module for module in MODULES if module.startswith("octalgen.hdl")]
    assert len(hdl) > 3
    for module in hdl:
        assert not {m for m in imports_of(module) if m.startswith("octalgen.backends")}, module


def private_imports(importer: str) -> set[tuple[str, str, str]]:
    """``(importer, module, name)`` for every ``from module import _name`` in ``importer`` that names a
    private (underscore, not dunder) name of another octalgen module, anywhere in its source."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[importer].read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = _absolute(importer, node.level, node.module)
        if base not in MODULES or base == importer:
            continue
        for alias in node.names:
            if alias.name.startswith("_") and not alias.name.startswith("__"):
                found.add((importer, base, alias.name))
    return found


def test_the_private_import_finder_finds_one(tmp_path, monkeypatch):
    source = tmp_path / "octalgen" / "a.py"
    source.parent.mkdir()
    source.write_text("from .b import _hidden, shown\nfrom __future__ import annotations\n")
    (tmp_path / "octalgen" / "b.py").write_text("")
    monkeypatch.setitem(MODULES, "octalgen.a", source)
    monkeypatch.setitem(MODULES, "octalgen.b", source.parent / "b.py")
    assert private_imports("octalgen.a") == {("octalgen.a", "octalgen.b", "_hidden")}


def test_no_module_imports_a_private_name_of_another():
    """A name with a leading underscore is its module's own: another module that needs it gets it made public."""
    found = set().union(*(private_imports(module) for module in MODULES))
    assert found == set()


def runtime_imports(importer: str) -> set[str]:
    """The octalgen modules ``importer`` imports outside ``if TYPE_CHECKING:`` blocks (names for annotations only)."""
    tree = ast.parse(MODULES[importer].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(importer, node.level, node.module)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in MODULES and name != "octalgen")
    return found


#: What the engine's seams may import when they run: the plan's values and the error family; every
#: concrete kernel, verifier, history or executor is named for annotations only.
SEAMS_MAY_IMPORT = {"octalgen.plan", "octalgen.errors"}


def test_the_seams_import_no_concrete_module():
    assert runtime_imports("octalgen.engine.seams") <= SEAMS_MAY_IMPORT
    assert "octalgen.engine.history" in imports_of("octalgen.engine.seams")  # named, for its annotations


def test_the_runtime_import_reader_sees_past_type_checking_blocks():
    assert "octalgen.cpu.plugin" in runtime_imports("octalgen.engine.core")
    assert "octalgen.engine.seams" not in runtime_imports("octalgen.backends")  # annotations only
    assert "octalgen.engine.seams" in imports_of("octalgen.backends")
