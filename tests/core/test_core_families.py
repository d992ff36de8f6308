"""Task families register through entry points; docs/extending.md's example works as
written, plain and under ``-n 2``; the core modules name no family."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
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


def install_example(root: Path) -> None:
    """The example family as an installed distribution would look to importlib.metadata:
    a ``.dist-info`` folder with its entry point, on ``sys.path`` (the run's folder)."""
    (root / "kwfamily.py").write_text(example_module(), encoding="utf-8")
    info = root / "kwfamily-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: kwfamily\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{families.GROUP}]\nkeyword = kwfamily\n", encoding="utf-8")


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


def test_builtin_families_register_like_any_other() -> None:
    reg = families.registry()
    assert {"jailbreak_guardrails", "rag_answers", "halueval", "harpia", "redteam"} <= set(reg.tasks)
    assert "*.harpia.json" in families.suite_patterns()
    assert families.progress_group({"task": "halueval", "data": {"task_type": "qa"}}) == ("qa", "acc")
    assert families.progress_group({"task": "question_router", "data": {}}) is None


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
