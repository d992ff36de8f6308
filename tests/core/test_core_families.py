"""Task families register through entry points; docs/extending.md's example works as
written, plain and under ``-n 2``; the core modules name no family."""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tokenize
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from core_helpers import read_summary, suite_by_name, write_suite

from pytest_evals.registry import family_registry as families

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "extending.md"


def example_module() -> str:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1
    return str(blocks[0])


def install_family(root: Path, module: str, source: str, name: str = "keyword") -> None:
    """A family module as an installed distribution would look to importlib.metadata:
    a ``.dist-info`` folder with its entry point, on ``sys.path`` (the run's folder)."""
    (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{families.GROUP}]\n{name} = {module}\n", encoding="utf-8")


def install_example(root: Path) -> None:
    install_family(root, "kwfamily", example_module())


def test_the_example_is_about_thirty_lines() -> None:
    assert 25 <= len(example_module().strip().splitlines()) <= 40


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_third_party_family_adds_tasks_and_suite_files(pytester: pytest.Pytester, workers: list[str]) -> None:
    install_example(pytester.path)
    rows = [
        {"id": "a", "keyword": "Paris", "answer": "The capital is paris."},
        {"id": "b", "keyword": "Rome", "answer": "It is Milan."},
        {"id": "c", "keyword": "Oslo", "answer": "Oslo, of course."},
    ]
    (pytester.path / "answers.kw.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (pytester.path / "strict.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    write_suite(pytester.path, "strict.eval.yaml", task="keyword", input_path="strict.jsonl",
                thresholds={"hit_rate": {"min": 0.9}})
    result = pytester.runpytest_subprocess(*workers, "--evals-json", "s.json", "-p", "no:cacheprovider")
    summary = read_summary(pytester.path / "s.json")
    by_file = suite_by_name(summary, "answers.kw.jsonl")
    # The implicit suite (by file name) passes its gate, the YAML one misses its own.
    assert by_file["task"] == "keyword" and by_file["passed"] is True
    assert by_file["metrics"]["hit_rate"]["value"] == pytest.approx(2 / 3)
    strict = suite_by_name(summary, "strict")
    assert strict["passed"] is False
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*MISSED GATE strict: hit_rate = 0.6667, required >= 0.9*"])


def test_an_unknown_task_names_the_known_ones(pytester: pytest.Pytester) -> None:
    write_suite(pytester.path, "x.eval.yaml", task="keyword", input_path="x.jsonl")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*unknown task 'keyword'; known tasks: *halueval*jailbreak_guardrails*"])


BUILTIN_FAMILIES = {"classification", "rag", "halueval", "harpia", "redteam"}


def test_builtin_families_register_like_any_other() -> None:
    # Found through the entry point group (pyproject.toml), as a third-party family is.
    assert {ep.name for ep in entry_points(group=families.GROUP)} >= BUILTIN_FAMILIES
    reg = families.registry()
    assert set(reg.families) >= BUILTIN_FAMILIES and not reg.broken
    assert {"jailbreak_guardrails", "rag_answers", "halueval", "harpia", "redteam"} <= set(reg.tasks)
    assert "*.harpia.json" in families.suite_patterns()
    assert families.progress_group({"task": "halueval", "data": {"task_type": "qa"}}) == ("qa", "acc")
    assert families.progress_group({"task": "question_router", "data": {}}) is None


#: A family that brings one of everything beyond tasks, and one whose declarations are
#: malformed (it must be reported as broken, not half-registered).
DECLARING_FAMILY = """
EXPORTS = {"shout": "declfamily:shout"}
EXTRAS = {"left_pad_xyz": "declfamily[pad]", "right_pad_xyz": "pads"}
LABEL_WORDS = ("Flagged",)
GROUP_FIELDS = {"keyword": "lang"}


def shout(text):
    return text.upper() + "!"
"""
BROKEN_FAMILY = 'TASKS = {"bad": 3}\nEXPORTS = {"never": "badfamily:never"}\n'

CHECK_DECLARATIONS = """
import sys
import pytest_evals
assert not hasattr(pytest_evals, "__wrapped__")  # a dunder probe, as inspect makes
assert "pytest_evals.registry.family_registry" not in sys.modules  # import stays cheap
from pytest_evals import shout
assert shout("hi") == pytest_evals.shout("hi") == "HI!" and "shout" in dir(pytest_evals)
from pytest_evals.registry import family_registry as fr
from pytest_evals.registry.missing_extras import install_hint
reg = fr.registry()
assert "flagged" in reg.label_words and fr.group_field("keyword") == "lang", reg
assert fr.group_field("harpia") is None
hint = install_hint(ModuleNotFoundError("no", name="left_pad_xyz.core"))
assert hint.endswith('it comes with the \\'pad\\' extra: pip install "declfamily[pad]" (in a checkout: pip install -e ".[pad]")'), hint
assert 'pip install "pytest-evals[pads]"' in install_hint(ModuleNotFoundError("no", name="right_pad_xyz"))
assert "TASKS must map strings to strings" in reg.broken["bad"], reg.broken
assert "never" not in reg.exports
try:
    pytest_evals.never
except AttributeError as exc:
    assert "has no attribute 'never'" in str(exc)
else:
    raise AssertionError("a broken family's export resolved")
print("ok")
"""


def test_a_family_brings_exports_extras_label_words_and_groups(pytester: pytest.Pytester) -> None:
    install_family(pytester.path, "declfamily", DECLARING_FAMILY, name="decl")
    install_family(pytester.path, "badfamily", BROKEN_FAMILY, name="bad")
    script = pytester.path / "check.py"
    script.write_text(CHECK_DECLARATIONS, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=pytester.path)
    assert proc.stdout.strip() == "ok", proc.stderr


def test_the_red_team_helpers_are_the_family_exports() -> None:
    import pytest_evals
    from pytest_evals.families.redteam import helpers

    assert families.registry().exports["save_system_prompt_stats"].startswith("pytest_evals.families.redteam.")
    for name in ("hash_system_prompt", "convert_attack_to_dict", "save_system_prompt_stats", "save_cluster_info",
                 "save_population_state", "adversariality", "load_run_dir", "load_data_dir"):
        assert getattr(pytest_evals, name) is getattr(helpers, name)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        pytest_evals.no_such_name  # noqa: B018


def test_a_suite_file_stem_drops_the_pattern_ending() -> None:
    assert families.suite_file_stem("dir/a.eval.yaml") == "a"
    assert families.suite_file_stem("dir\\b.harpia.json") == "b"
    assert families.suite_file_stem("c.yaml") == "c.yaml"


#: Words that belong to one task family (its name, its task names, its labels).
FAMILY_WORDS = (
    "halueval", "harpia", "redteam", "red-team", "red team", "rm-bias", "rag_answers", "jailbreak",
    "govuk", "gov.uk", "hallucinat", "guardrail", "question_router", "topic_tagger",
    "pytest_evals.families.",
)
CORE_MODULES = sorted(
    str(p.relative_to(ROOT / "pytest_evals"))
    for p in (ROOT / "pytest_evals").rglob("*.py")
    if p.relative_to(ROOT / "pytest_evals").parts[0] not in ("families", "testing")
)


def code_only(source: str) -> str:
    """The module's code without comments and docstrings (prose may cite a measurement)."""
    tree = ast.parse(source)
    docstrings = {
        (node.body[0].value.lineno, node.body[0].value.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }
    kept = [
        tok.string
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type != tokenize.COMMENT and not (tok.type == tokenize.STRING and tok.start in docstrings)
    ]
    return " ".join(kept)


def test_code_only_drops_prose() -> None:
    source = '"""About HaluEval."""\nx = 1  # halueval\ny = "halueval"\n'
    assert "halueval" not in code_only(source).replace('"halueval"', "")
    assert '"halueval"' in code_only(source)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_modules_name_no_family(module: str) -> None:
    # Code outside families/ knows no family: families bring their own words through
    # their family.py (tasks, patterns, extras, exports, label words) and hooks.
    source = code_only((ROOT / "pytest_evals" / module).read_text(encoding="utf-8")).lower()
    named = [word for word in FAMILY_WORDS if word in source]
    assert not named, f"{module} names a task family: {named}"
