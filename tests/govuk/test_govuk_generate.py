"""generate: true with a rake-style command: INPUT in the environment, the app's own JSON mapped."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from .layout import JAILBREAK, build

#: Stands in for ``bundle exec rake evaluation:generate_jailbreak_guardrail_response``:
#: reads the question from INPUT and answers in the Rails app's own shape.
RAKE = textwrap.dedent(
    """
    import json, os, sys
    question = os.environ["INPUT"]
    if question == "Q9":
        print("boom", file=sys.stderr)
        sys.exit(3)
    status = "fail" if question in {"Q1", "Q2", "Q3", "Q4", "Q8"} else "pass"
    print(json.dumps({"jailbreak_guardrails_status": status,
                      "metrics": {"jailbreak_guardrails": {"model": os.environ.get("BEDROCK_MODEL", "claude-x")}}}))
    """
)


def write_rake_suite(root: Path, target: dict[str, Any]) -> None:
    build(root)
    (root / "govuk-chat").mkdir()
    (root / "govuk-chat" / "rake.py").write_text(RAKE, encoding="utf-8")
    cfg = yaml.safe_load((root / "config" / "defaults" / "jailbreak_guardrails.yaml").read_text())
    cfg["claude_generation_model"] = "eu.anthropic.claude-sonnet"
    cfg["target"] = target
    (root / "config" / "defaults" / "jailbreak_guardrails.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")


TARGET = {
    "command": [sys.executable, "rake.py", "evaluation:generate_jailbreak_guardrail_response"],
    "cwd": "../../govuk-chat",
    "input_env": {"INPUT": "question"},
    "output_map": {"actual_outcome": 'jailbreak_guardrails_status == "fail"',
                   "model": "metrics.jailbreak_guardrails.model"},
}


def test_rake_command_is_the_target_without_a_wrapper(pytester: pytest.Pytester) -> None:
    write_rake_suite(pytester.path, TARGET)
    result = pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", "--evals-suite-pattern", "*.yaml",
                                "--evals-json", "summary.json", "-p", "no:cacheprovider")
    # Q9's command fails: one ERROR naming the exit status, the others scored.
    result.assert_outcomes(passed=7, failed=1, errors=1)
    result.stdout.fnmatch_lines(["*exited with status 3: boom*"])
    summary = json.loads((pytester.path / "summary.json").read_text())
    (suite,) = summary["suites"]
    m = suite["metrics"]
    assert [m[k]["value"] for k in ("tp", "tn", "fp", "fn")] == [4, 3, 1, 0]
    # generated.jsonl records the model the app reported, as their tool's re-read needs.
    lines = [json.loads(x) for x in Path(suite["generated_path"]).read_text().splitlines()]
    assert len(lines) == 8 and {x["model"] for x in lines} == {"claude-x"}
    assert [x["actual_outcome"] for x in lines[:4]] == [True] * 4


def test_generation_model_falls_back_to_the_config(pytester: pytest.Pytester) -> None:
    target = {**TARGET, "output_map": {"actual_outcome": 'jailbreak_guardrails_status == "fail"'}}
    write_rake_suite(pytester.path, target)
    # Without a mapped model the app's nested one is not at the top level: the config's
    # claude_generation_model is what generated.jsonl names.
    pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", "--evals-suite-pattern", "*.yaml",
                       "--evals-json", "summary.json", "-p", "no:cacheprovider")
    (suite,) = json.loads((pytester.path / "summary.json").read_text())["suites"]
    lines = [json.loads(x) for x in Path(suite["generated_path"]).read_text().splitlines()]
    assert {x["model"] for x in lines} == {"eu.anthropic.claude-sonnet"}


def test_output_map_naming_a_missing_field_is_a_clear_error(pytester: pytest.Pytester) -> None:
    target = {**TARGET, "output_map": {"actual_outcome": 'guardrail_status == "fail"'}}
    write_rake_suite(pytester.path, target)
    result = pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", "--evals-suite-pattern", "*.yaml",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(errors=9)
    line = "names a field the output does not have (output keys: ['jailbreak_guardrails_status', 'metrics'])"
    assert "output_map.actual_outcome: 'guardrail_status == \"fail\"' " + line in result.stdout.str()


def test_output_map_rejects_code(pytester: pytest.Pytester) -> None:
    target = {**TARGET, "output_map": {"actual_outcome": '__import__("os").system("true")'}}
    write_rake_suite(pytester.path, target)
    result = pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", "--evals-suite-pattern", "*.yaml",
                                "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*target.output_map.actual_outcome: Call is not allowed*"])
    assert len(JAILBREAK) == 9
