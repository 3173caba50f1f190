"""The module graph of ``src/patchbay``, read from the source: no import cycles, and the layers
(core → adapters → connectors → runtime → control → interfaces, the package's ``__init__`` on top)
import downwards only, and no module outside ``patchbay.connectors`` imports it (the built-in
connectors are separate programs the registry starts).

Every import counts, wherever it is written: at module level, inside a function, under
``if TYPE_CHECKING:``. ``import a.b.c`` and ``from a.b import c`` (``c`` a module) name the module
``a.b.c``; ``from a.b import name`` (``name`` not a module) names ``a.b``, a package's
``__init__``. Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, but that is not
an edge here: only the module an import names is.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from tests.support.paths import REPO

SRC = REPO / "src"
LAYERS = ("core", "adapters", "connectors", "runtime", "control", "interfaces")
"""Lowest first; a module may import its own layer and the ones before it."""

Graph = Mapping[str, frozenset[str]]


def module_name(root: Path, path: Path) -> str:
    """The dotted name of source file ``path`` under import root ``root`` (``pkg/__init__.py`` is ``pkg``)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> Iterator[str]:
    """The modules of ``modules`` that one import statement of ``module`` names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in modules:
                yield alias.name
        return
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    for alias in node.names:
        if f"{base}.{alias.name}" in modules:
            yield f"{base}.{alias.name}"
        elif base in modules:
            yield base


def module_graph(root: Path, package: str) -> dict[str, frozenset[str]]:
    """The import graph of ``package`` (a directory under ``root``): each module's name → the names
    of the modules of ``package`` it imports (itself left out)."""
    paths = {module_name(root, path): path for path in sorted((root / package).rglob("*.py"))}
    modules = set(paths)
    graph = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        imported = {
            target
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for target in _imported(node, module, is_package, modules)
        }
        graph[module] = frozenset(imported - {module})
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module, each sorted, in
    sorted order (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
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
                        found.append(sorted(component))
    return sorted(found)


def layer_of(module: str) -> int:
    """The rank of ``module``'s layer (``LAYERS`` order): a layer's package and everything in it have
    the layer's rank; ``patchbay`` itself (and any module directly in it) is above every layer."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    assert len(parts) <= 2, f"{module} is in no layer of {LAYERS}"
    return len(LAYERS)


def upward_imports(graph: Graph) -> list[str]:
    """Each import of a module from a higher layer, as ``importer -> imported``."""
    return [
        f"{module} -> {target}"
        for module in sorted(graph)
        for target in sorted(graph[module])
        if layer_of(target) > layer_of(module)
    ]


def _report(groups: Iterable[list[str]]) -> str:
    return "\n".join(f"cycle of {len(group)}: {', '.join(group)}" for group in groups)


def test_the_modules_of_patchbay_import_each_other_in_no_cycle() -> None:
    found = cycles(module_graph(SRC, "patchbay"))
    assert found == [], f"{len(found)} import cycles (function-local imports included):\n{_report(found)}"


def test_the_layers_import_downwards_only() -> None:
    upward = upward_imports(module_graph(SRC, "patchbay"))
    assert upward == [], "imports from a higher layer:\n" + "\n".join(upward)


def test_nothing_outside_the_builtin_connectors_imports_them() -> None:
    graph = module_graph(SRC, "patchbay")
    inside = "patchbay.connectors"
    found = [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        if module != inside and not module.startswith(inside + ".")
        for target in sorted(targets)
        if target == inside or target.startswith(inside + ".")
    ]
    assert found == [], "the built-in connectors are separate programs:\n" + "\n".join(found)


# --- the graph builder itself, on a tiny package ---------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_a_function_local_import_is_found(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from pkg.b import helper\n",
            "pkg/b.py": "def helper():\n    from pkg import a\n    return a\n",
            "pkg/c.py": "import pkg.a\n",
        },
    )
    graph = module_graph(root, "pkg")
    assert graph == {
        "pkg": frozenset(),
        "pkg.a": frozenset({"pkg.b"}),
        "pkg.b": frozenset({"pkg.a"}),
        "pkg.c": frozenset({"pkg.a"}),
    }
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_type_checking_and_relative_imports_are_edges_and_a_name_from_a_package_is_its_init(
    tmp_path: Path,
) -> None:
    root = _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .sub import Thing\n",
            "pkg/sub/__init__.py": "from .impl import Thing\n",
            "pkg/sub/impl.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import other\n",
            "pkg/other.py": "from pkg.sub import Thing\nimport json\n",
        },
    )
    graph = module_graph(root, "pkg")
    assert graph == {
        "pkg": frozenset({"pkg.sub"}),
        "pkg.sub": frozenset({"pkg.sub.impl"}),
        "pkg.sub.impl": frozenset({"pkg.other"}),
        "pkg.other": frozenset({"pkg.sub"}),
    }
    assert cycles(graph) == [["pkg.other", "pkg.sub", "pkg.sub.impl"]]


def test_an_import_from_a_higher_layer_is_reported() -> None:
    graph = {
        "patchbay": frozenset({"patchbay.runtime.runtime"}),
        "patchbay.core.models": frozenset({"patchbay.runtime.runtime"}),
        "patchbay.runtime": frozenset({"patchbay.runtime.runtime"}),
        "patchbay.runtime.runtime": frozenset({"patchbay.core.models", "patchbay"}),
        "patchbay.control.probe": frozenset({"patchbay.runtime", "patchbay.control"}),
        "patchbay.control": frozenset(),
    }
    assert upward_imports(graph) == [
        "patchbay.core.models -> patchbay.runtime.runtime",
        "patchbay.runtime.runtime -> patchbay",
    ]
