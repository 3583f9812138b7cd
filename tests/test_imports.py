"""No import cycle in python/launchgap, between modules or between its packages.

A cycle makes the order modules load in matter: a name imported from a module that is still loading is
missing, and a function-level import that "breaks" a cycle only hides it from whoever reads the top of the
file. So every import counts here, at module level or inside a function, relative ones resolved; only an
`if TYPE_CHECKING:` block is left out (it never runs). The graph is read from the source with ast, nothing
is imported.

Two graphs are checked: the modules' (`from launchgap.doctor.checks import Finding` is an edge to the
package's __init__, `from launchgap.views import words` one to the submodule), and the packages' (views,
doctor, experiments, ...; a module directly under launchgap/ is its own node), so that a package that
imports another that imports it back is found even when no one module closes the loop.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "python"
PACKAGE = "launchgap"


def module_files() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its __init__.py)."""
    modules = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, but those under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name an ImportFrom's module stands for (a relative import resolved from MODULE)."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    # `from . import x` in a package's __init__ means the package itself; in a module, its package
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """NAME if it is one of the package's modules, else its longest prefix that is (an attribute of one)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    modules = module_files()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                source = _resolve(name, is_package, node)
                # a name that is a submodule is an edge to it; any other name, to the module it is read from
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names
                ]
            for target in targets:
                known = _known(target, modules) if target.split(".")[0] == PACKAGE else None
                if known is not None and known != PACKAGE:  # launchgap/__init__.py holds the version alone
                    graph[name].add(known)
    return graph


def package_of(module: str) -> str:
    """The node a module belongs to in the packages' graph: launchgap.X for launchgap.X.*, the module itself
    directly under launchgap/."""
    return ".".join(module.split(".")[:2])


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = packages.setdefault(package_of(module), set())
        edges.update(package_of(t) for t in targets if package_of(t) != package_of(module))
    return packages


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component that has one (Tarjan's algorithm), as the path
    a -> b -> ... -> a; a module importing itself is one too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        # iterative: no recursion limit however long an import chain grows
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[current] = min(low[current], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[current])
            if low[current] == index[current]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == current:
                        break
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    found = []
    for component in components:
        members = set(component)
        start = min(component)
        if len(component) == 1 and start not in graph.get(start, ()):
            continue
        found.append(_path_back(graph, start, members))
    return sorted(found)


def _path_back(graph: dict[str, set[str]], start: str, members: set[str]) -> list[str]:
    """The shortest path from START back to itself inside one component (breadth first)."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start} is in a cycle with no path back to itself")


def _said(found: list[list[str]]) -> str:
    return "\n".join(" -> ".join(cycle) for cycle in found)


def test_no_module_imports_itself_back():
    found = cycles(import_graph())
    assert not found, f"import cycles between modules:\n{_said(found)}"


def test_no_package_imports_itself_back():
    found = cycles(package_graph(import_graph()))
    assert not found, f"import cycles between packages:\n{_said(found)}"


# ---- the walker itself, on hand-built graphs and sources ------------------------------------------------


def test_a_cycle_is_named_as_its_path():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"a"}}) == [["a", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_relative_imports_are_edges(tmp_path, monkeypatch):
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from .a import thing\n")
    (package / "sub" / "a.py").write_text("def f():\n    from ..b import g\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from launchgap.sub import a\n"
        "def g():\n    from launchgap.sub import thing\n"
    )
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    graph = import_graph()
    assert graph == {
        "launchgap": set(),
        "launchgap.sub": {"launchgap.sub.a"},
        "launchgap.sub.a": {"launchgap.b"},
        "launchgap.b": {"launchgap.sub"},
    }
    assert cycles(graph) == [["launchgap.b", "launchgap.sub", "launchgap.sub.a", "launchgap.b"]]
