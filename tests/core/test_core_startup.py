"""Start-up cost: every pytest run of anyone who installs pytest_evals loads the plugin.

A run without suites must not pay for them: the heavy libraries (the suite model's
pydantic and yaml, asyncio and the HTTP stacks of the LLM layer, numpy and scipy of the
statistics, Jinja2 of the reports) are imported inside the hooks that need them. And
the plugin keeps to pytest's public API (no ``_pytest`` or private xdist modules).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_evals"

#: Imported by no pytest run that has no suite (checked by top-level module name).
HEAVY = (
    "numpy",
    "scipy",
    "pydantic",
    "pydantic_core",
    "yaml",
    "asyncio",
    "aiohttp",
    "openai",
    "httpx",
    "jinja2",
    "diskcache",
    "sqlite3",
    "torch",
    "matplotlib",
    "lxml",
    "inscriptis",
)

#: Loads the plugin as pytest does (the module, its CORE_PLUGINS, the families'
#: plugins), then prints the heavy modules that came with it.
IMPORT_PLUGIN = """
import importlib, json, sys
import pytest
before = set(sys.modules)
from pytest_evals import plugin
from pytest_evals.registry.core_plugins import CORE_PLUGINS
from pytest_evals.registry.family_registry import registry
todo = [*CORE_PLUGINS, *registry().plugins]
while todo:
    module = importlib.import_module(todo.pop())
    todo.extend(getattr(module, "pytest_plugins", []))
heavy = set(json.loads(sys.argv[1]))
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in heavy)))
"""


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORT_PLUGIN, json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    assert json.loads(proc.stdout) == []


#: Written at the very end of the run, after every hook had its chance to import.
CONFTEST = """
import json, sys
from pathlib import Path

def pytest_unconfigure(config):
    heavy = set(json.loads(Path(str(config.rootpath), "heavy.json").read_text()))
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy)
    Path(str(config.rootpath), "loaded.json").write_text(json.dumps(loaded))
"""


@pytest.mark.parametrize("extra", [[], ["--evals-json", "s.json"]])
def test_a_run_without_suites_imports_nothing_heavy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    # Only our plugin (other installed plugins import what they like).
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / "heavy.json").write_text(json.dumps(HEAVY))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_unit="""
        import pytest

        @pytest.mark.parametrize("i", range(4))
        def test_unit(i):
            assert i % 2
        """
    )
    result = pytester.runpytest_subprocess("-p", "pytest_evals.plugin", "-p", "no:cacheprovider", *extra)
    result.assert_outcomes(passed=2, failed=2)
    assert json.loads((pytester.path / "loaded.json").read_text()) == []


def test_a_suite_run_does_load_what_it_needs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check above could pass by accident if the conftest saw nothing: a run with
    a suite, through the same conftest, reports the suite model's libraries."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (pytester.path / "heavy.json").write_text(json.dumps(HEAVY))
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases.jsonl").write_text('{"id": "a", "question": "q", "expected_outcome": true, "actual_outcome": true}\n')
    (pytester.path / "jb.eval.yaml").write_text("task: jailbreak_guardrails\ninput_path: cases.jsonl\n")
    result = pytester.runpytest_subprocess("-p", "pytest_evals.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    loaded = json.loads((pytester.path / "loaded.json").read_text())
    assert "pydantic" in loaded and "yaml" in loaded


#: xdist modules a plugin may import: the package and its documented scheduler base
#: classes (``pytest_xdist_make_scheduler`` returns one of them).
PUBLIC_XDIST = {"xdist", "xdist.scheduler"}


def _private_imports(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        for name in names:
            top = name.split(".")[0]
            if top == "_pytest" or (top == "xdist" and name not in PUBLIC_XDIST):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {name}")
    return found


def test_no_module_imports_private_pytest_or_xdist() -> None:
    """Type-only imports count too: the public API is what a plugin may rely on."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _private_imports(path)]
    assert found == []


def test_the_private_import_check_sees_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from _pytest._code.code import ReprEntry\n"
        "import xdist.dsession\n"
        "from xdist.scheduler import LoadScheduling\n"
        "def f():\n"
        "    import _pytest.junitxml\n"
    )
    assert _private_imports(probe, tmp_path) == [
        "probe.py:1: _pytest._code.code",
        "probe.py:2: xdist.dsession",
        "probe.py:5: _pytest.junitxml",
    ]
