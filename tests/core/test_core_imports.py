"""The package forms a layered graph: no import cycle inside ``pytest_evals/``, and
each layer package imports only the layers below it.

Imports are read from the source (AST), not by importing. Module-level, function-level
and ``if TYPE_CHECKING:`` imports all count: a deferred or annotation-only import still
means the lower module knows the upper one's concepts, which is what the layering
forbids. Importing ``a.b.c`` also imports the packages ``a.b`` (their ``__init__``), so
those are edges too.
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


#: The layer packages, lowest first: a module may import its own package and the ones
#: before it. What each holds is said in its ``__init__`` docstring and the README.
LAYERS = (
    "stats", "model", "hardening", "registry", "llm", "suites", "targets", "tasks", "metrics",
    "collection", "worker", "controller", "output", "regression", "reports", "families", "cli",
)
#: Top-level modules: the wiring above every layer (and the test helpers beside them).
TOP_LEVEL = {"pytest_evals", "pytest_evals.plugin", "pytest_evals.hookspecs"}
#: Helpers for the project's and users' tests; they may use the layers, nothing uses them.
BESIDE = ("testing",)


def graph() -> dict[str, set[str]]:
    """module -> the package modules it imports (anywhere in it, TYPE_CHECKING included)."""
    return {
        module: imports_from_tree(module, ast.parse(path.read_text(encoding="utf-8")))
        for module, path in MODULES.items()
    }


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in (*LAYERS, *BESIDE) else None


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a higher layer (or of the wiring) from inside a layer package."""
    rank = {name: i for i, name in enumerate(LAYERS)}
    found = []
    for module, targets in sorted(edges.items()):
        here = layer_of(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = layer_of(target)
            if target in TOP_LEVEL - {"pytest_evals"} or (there in BESIDE and here != there):
                found.append(f"{module} -> {target}")
            elif here in rank and there in rank and rank[there] > rank[here]:
                found.append(f"{module} -> {target} ({there} is above {here})")
    return found


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


def test_function_level_type_only_and_package_imports_count() -> None:
    module = "pytest_evals.tasks.eval_context"
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pytest_evals.llm.client import LLMClient\n"
        "def f():\n    from pytest_evals.worker.case_runner import get_runner\n"
    )
    found = imports_from_tree(module, tree)
    # importing pytest_evals.llm.client runs pytest_evals/llm/__init__.py first
    assert {"pytest_evals.llm", "pytest_evals.llm.client"} <= found
    assert "pytest_evals.worker.case_runner" in found


def test_every_layer_imports_only_the_layers_below_it() -> None:
    assert layer_violations(graph()) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    edges = {
        "pytest_evals.llm.client": {"pytest_evals.worker.case_runner"},
        "pytest_evals.worker.case_runner": {"pytest_evals.llm.client"},
        "pytest_evals.stats.intervals": {"pytest_evals.plugin"},
        "pytest_evals.model.errors": {"pytest_evals.testing.fake_openai"},
    }
    assert layer_violations(edges) == [
        "pytest_evals.llm.client -> pytest_evals.worker.case_runner (worker is above llm)",
        "pytest_evals.model.errors -> pytest_evals.testing.fake_openai",
        "pytest_evals.stats.intervals -> pytest_evals.plugin",
    ]


def test_only_the_wiring_sits_at_the_top_level() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "hookspecs.py", "plugin.py"]
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted((*LAYERS, *BESIDE))


#: File names a task family conventionally has (each family one of each, like pytest
#: plugins' conftest.py); every other module name is unique in the package.
FAMILY_CONVENTIONAL = {"task.py", "family.py", "plugin.py", "cli.py", "config.py", "offline.py", "prompts.py", "scoring.py"}


def test_module_names_are_unique_outside_the_families_conventional_files() -> None:
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if path.name == "__init__.py" or (rel.parts[0] == "families" and path.name in FAMILY_CONVENTIONAL):
            continue
        seen.setdefault(path.name, []).append(str(rel))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_plugin_only_wires() -> None:
    # plugin.py holds no evaluation logic: it imports the parts and registers them.
    source = (PACKAGE / "plugin.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) < 220
    assert "def aggregate" not in source and "Prefetcher" not in source
