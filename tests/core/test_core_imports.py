"""The package forms a layered graph: no import cycle inside ``pytest_evals/``.

Imports are read from the source (AST), not by importing. Both module-level and
function-level imports count: a function-level import is deferred, but it still means
the lower module knows the upper one, which is what the layering forbids. Imports under
``if TYPE_CHECKING:`` are annotations only and do not count. Importing ``a.b.c`` also
imports the packages ``a.b`` (their ``__init__``), so those are edges too.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_evals"
ROOT = PACKAGE.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _strip_type_checking(tree: ast.Module) -> ast.Module:
    class Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.AST | None:
            return None if _is_type_checking(node) else self.generic_visit(node)

    return Strip().visit(tree)


def graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (anywhere in it, TYPE_CHECKING aside)."""
    return {
        module: imports_from_tree(module, _strip_type_checking(ast.parse(path.read_text(encoding="utf-8"))))
        for module, path in MODULES.items()
    }


def imports_from_tree(module: str, tree: ast.Module) -> set[str]:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            names = [f"{base}.{a.name}" for a in node.names]
        for name in names:
            target = _resolve(name)
            while target and target != "pytest_evals" and target != module:
                if not module.startswith(target + "."):  # a package's own __init__ is already running
                    found.add(target)
                target = target.rpartition(".")[0]
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
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
                    found.append(sorted(component))
    return found


def test_no_import_cycle_in_the_package() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_function_level_and_package_imports_count() -> None:
    edges = graph()
    # llm takes the engine from the config's stash; it must not reach up into the runner.
    assert "pytest_evals.worker.case_runner" not in edges["pytest_evals.llm"]
    # CaseItem.setup imports the runner inside a function: that is an edge.
    assert "pytest_evals.worker.case_runner" in edges["pytest_evals.collection.suite_items"]
    # importing pytest_evals.llm.judge runs pytest_evals/llm/__init__.py first
    assert {"pytest_evals.llm", "pytest_evals.llm.judge"} <= edges["pytest_evals.tasks.eval_context"]


def test_plugin_only_wires() -> None:
    # plugin.py holds no evaluation logic: it imports the parts and registers them.
    source = (PACKAGE / "plugin.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) < 220
    assert "def aggregate" not in source and "Prefetcher" not in source
