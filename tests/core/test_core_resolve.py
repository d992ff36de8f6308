"""One resolver for "module:attr" strings (``pkgutil.resolve_name``), with errors that name
the field and the file the string came from."""

from __future__ import annotations

import json
import os.path
from pathlib import Path

import pytest
from core_helpers import jb_counts, write_jsonl, write_suite

from pytest_evals.registry.dotted_names import ResolveError, resolve_name


def test_a_good_name_resolves_to_the_object_with_dotted_attributes() -> None:
    assert resolve_name("os.path:join", "target") is os.path.join
    assert resolve_name("pytest_evals.registry.dotted_names:ResolveError.__name__", "x") == "ResolveError"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("os.path.join", "suite.yaml: target 'os.path.join': expected 'package.module:attribute'"),
        (":join", "suite.yaml: target ':join': expected 'package.module:attribute'"),
        ("os.path:", "suite.yaml: target 'os.path:': expected 'package.module:attribute'"),
        ("no_such_mod_xyz:f", "suite.yaml: target 'no_such_mod_xyz:f': cannot import 'no_such_mod_xyz': No module named 'no_such_mod_xyz'"),
        ("os.path:nope", "suite.yaml: target 'os.path:nope': module 'os.path' has no attribute 'nope'"),
        ("os.path:join.nope", "suite.yaml: target 'os.path:join.nope': module 'os.path' has no attribute 'join.nope'"),
        ("a b:c", "suite.yaml: target 'a b:c': expected 'package.module:attribute'"),
    ],
)
def test_each_failure_names_the_field_the_file_and_why(spec: str, message: str) -> None:
    with pytest.raises(ResolveError) as info:
        resolve_name(spec, "target", where="suite.yaml")
    assert str(info.value).startswith(message), str(info.value)


def test_a_module_that_fails_inside_says_what_it_could_not_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "needs_extra_xyz.py").write_text("import not_installed_lib_xyz\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ResolveError, match=r"rater 'rm': field 'callable' 'needs_extra_xyz:f': cannot import 'needs_extra_xyz': No module named 'not_installed_lib_xyz'"):
        resolve_name("needs_extra_xyz:f", "rater 'rm': field 'callable'")


def test_a_suite_target_that_names_nothing_is_an_error_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(pytarget="def classify(case):\n    return {'actual_outcome': True}\n")
    write_jsonl(pytester.path, "data/c.jsonl", jb_counts(1, 1, 0, 0))
    write_suite(pytester.path, "attr.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/c.jsonl", target="pytarget:nope")
    write_suite(pytester.path, "fmt.eval.yaml", task="jailbreak_guardrails", generate=True, input_path="data/c.jsonl", target="pytarget.classify")
    result = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "s.json")
    out = result.stdout.str()
    assert "target 'pytarget:nope': module 'pytarget' has no attribute 'nope'" in out
    assert "target 'pytarget.classify': expected 'package.module:attribute'" in out
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    assert not summary["passed"] and all(s["cases"]["errors"] == 2 for s in summary["suites"])


def test_an_unknown_task_class_names_the_task() -> None:
    from pytest_evals.model.errors import SuiteConfigError
    from pytest_evals.registry.family_registry import registry
    from pytest_evals.tasks import get_task_class

    registry().tasks["broken_task_xyz"] = "no_such_family_xyz.task:Broken"
    try:
        with pytest.raises(SuiteConfigError, match=r"s\.yaml: task 'broken_task_xyz' cannot be loaded: task 'broken_task_xyz': class 'no_such_family_xyz.task:Broken': cannot import 'no_such_family_xyz.task'"):
            get_task_class("broken_task_xyz", where="s.yaml")
    finally:
        del registry().tasks["broken_task_xyz"]
