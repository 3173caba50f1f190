"""``docs/spec-map.md`` names only modules and tests that exist, so a move or rename cannot leave
it pointing at nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPEC_MAP = REPO / "docs" / "spec-map.md"
SRC = REPO / "src"


def _module_exists(dotted: str) -> bool:
    """``patchbay.a.b`` is a module or package under src/, or a name defined in one."""
    parts = dotted.split(".")
    base = SRC.joinpath(*parts)
    if base.with_suffix(".py").is_file() or (base / "__init__.py").is_file():
        return True
    owner = SRC.joinpath(*parts[:-1])
    for source in (owner.with_suffix(".py"), owner / "__init__.py"):
        if source.is_file():
            return parts[-1] in _top_level_names(source)
    return False


def _top_level_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_module_the_spec_map_names_exists() -> None:
    text = SPEC_MAP.read_text(encoding="utf-8")
    modules = set(re.findall(r"`(patchbay(?:\.\w+)+)`", text))
    assert modules, "the spec map names no module"
    missing = sorted(m for m in modules if not _module_exists(m))
    assert missing == [], f"docs/spec-map.md names modules that do not exist: {missing}"


def test_every_test_the_spec_map_names_exists() -> None:
    text = SPEC_MAP.read_text(encoding="utf-8")
    references = set(re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text))
    assert references, "the spec map names no test"
    missing: list[str] = []
    for file, function in sorted(references):
        path = REPO / file
        if not path.is_file():
            missing.append(file)
        elif function and function not in _test_names(path):
            missing.append(f"{file}::{function}")
    assert missing == [], f"docs/spec-map.md names tests that do not exist: {missing}"
