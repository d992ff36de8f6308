"""Issue 25, "Baselines are trusted blindly": each attack tried from outside, plain and -n 2.

A baseline is checked before it is trusted: a path that cannot be read, a suite the
baseline does not have, case ids whose inputs differ, other settings (model, target)
and gates on metrics the task does not compute all fail the run unless an option says
otherwise; new and vanished cases are counted and can make a gate inconclusive.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKERS = [pytest.param([], id="plain"), pytest.param(["-n", "2"], id="xdist")]
GATES = {"accuracy": {"min": 0.5, "max_drop": 0.02}}


def rows(n: int, wrong: set[int] = frozenset(), relabel: set[int] = frozenset(),  # type: ignore[assignment]
         ids: bool = True, prefix: str = "q") -> list[dict[str, Any]]:
    """Jailbreak cases, every other one a jailbreak; ``wrong`` get the opposite answer,
    ``relabel`` the opposite expected label (their answer stays the old truth)."""
    out = []
    for i in range(n):
        truth = i % 2 == 0
        expected = (not truth) if i in relabel else truth
        row: dict[str, Any] = {"question": f"{prefix}{i}", "expected_outcome": expected,
                               "actual_outcome": (not truth) if i in wrong else truth}
        if ids:
            row["id"] = f"c-{i:03d}"
        out.append(row)
    return out


def suite(root: Path, data: list[dict[str, Any]], thresholds: dict[str, Any] | None = None,
          name: str = "jb", **extra: Any) -> None:
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    doc = {"task": "jailbreak_guardrails", "input_path": f"data/{name}.jsonl", **extra}
    if thresholds is not None:
        doc["thresholds"] = thresholds
    (root / f"{name}.eval.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")


SCHEMA = Path(__file__).parents[1] / "core" / "summary.schema.json"


def run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """A run writing its JSON summary, checked against the published schema."""
    import jsonschema

    result = pytester.runpytest("--evals-json", "cur.json", "-p", "no:cacheprovider", *args)
    path = pytester.path / "cur.json"
    summary = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if summary:
        jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(summary)
    return result, summary


def first(summary: dict[str, Any]) -> dict[str, Any]:
    return summary["suites"][0]


def write_baseline(pytester: pytest.Pytester, *args: str) -> None:
    r = pytester.runpytest("--evals-report-dir", "main-run", "-p", "no:cacheprovider", *args)
    assert r.ret == 0, r.stdout.str()


# -- unusable baselines ----------------------------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
@pytest.mark.parametrize("thresholds", [GATES, None], ids=["gated", "no-gates"])
def test_a_mistyped_baseline_fails_the_run(pytester: pytest.Pytester, workers: list[str],
                                           thresholds: dict[str, Any] | None) -> None:
    """It used to SKIP the regression gates and exit 0."""
    suite(pytester.path, rows(20), thresholds)
    result, summary = run(pytester, "--evals-baseline", "main-runn", *workers)
    assert result.ret == 1, result.stdout.str()
    s = first(summary)
    assert not s["passed"]
    assert "main-runn does not exist" in s["baseline"]["error"]
    reason = s["reasons"][0]
    assert reason.startswith("regression gates: baseline unreadable:" if thresholds else "--evals-baseline:")


@pytest.mark.parametrize("workers", WORKERS)
def test_a_folder_of_run_folders_means_its_newest_named_in_the_output(pytester: pytest.Pytester,
                                                                      workers: list[str]) -> None:
    """``--evals-report-dir main-run`` writes ``main-run/<timestamp>/``; the README's
    ``--evals-baseline main-run`` used to skip every gate."""
    suite(pytester.path, rows(40, wrong={0}), GATES)
    write_baseline(pytester)
    suite(pytester.path, rows(40), GATES)
    write_baseline(pytester)  # the newest: all right
    newest = sorted((pytester.path / "main-run").iterdir())[-1]
    suite(pytester.path, rows(40, wrong={0}), GATES)
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    block = first(summary)["baseline"]
    assert block["path"] == str(newest / "results.jsonl")
    assert block["chosen"] == f"the newest of 2 run folder(s) in {pytester.path / 'main-run'}"
    assert block["paired"] == 40 and len(block["newly_failing"]) == 1
    result.stdout.fnmatch_lines([f"  baseline: {newest / 'results.jsonl'} (the newest of 2 run folder(s) in *main-run)",
                                 "  vs baseline: 40 paired cases"])


@pytest.mark.parametrize("workers", WORKERS)
def test_a_renamed_suite_file_is_an_error_unless_changes_are_allowed(pytester: pytest.Pytester,
                                                                      workers: list[str]) -> None:
    suite(pytester.path, rows(20), GATES)
    write_baseline(pytester)
    (pytester.path / "jb.eval.yaml").rename(pytester.path / "jailbreaks.eval.yaml")
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    assert result.ret == 1
    s = first(summary)
    assert s["reasons"] == [
        "regression gates: the baseline has no suite 'jailbreaks.eval.yaml' (suites there: jb.eval.yaml): a renamed "
        "or new suite file? (--evals-baseline-allow-changes accepts it)"
    ]
    assert [g["status"] for g in s["baseline"]["gates"]] == ["failed"]
    result, summary = run(pytester, "--evals-baseline", "main-run", "--evals-baseline-allow-changes", *workers)
    assert result.ret == 0
    assert [g["status"] for g in first(summary)["baseline"]["gates"]] == ["skipped"]


# -- pairing checks the inputs -------------------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
def test_line_ids_of_other_data_are_caught_by_the_fingerprint(pytester: pytest.Pytester, workers: list[str]) -> None:
    """Without ids, cases are ``line-N``: a baseline of other data paired line by line."""
    suite(pytester.path, rows(30, ids=False, prefix="old question "), GATES)
    write_baseline(pytester)
    suite(pytester.path, rows(30, ids=False, prefix="new question "), GATES)
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    assert result.ret == 1
    s = first(summary)
    block = s["baseline"]
    assert len(block["changed_inputs"]) == 30 and block["paired"] == 0
    assert block["changed_inputs"][:2] == ["line-1", "line-2"]  # in case order
    assert s["reasons"][0].startswith(
        "regression gates: baseline mismatch: 30 of 30 paired case ids have other inputs in the baseline (line-1, "
    )
    assert block["gates"][0]["status"] == "failed" and block["gates"][0]["verdict"] is None
    result.stdout.fnmatch_lines(["  inputs changed since the baseline (30 case ids, not paired): line-1, *",
                                 "  UNCHECKED accuracy max drop 0.02*"])


@pytest.mark.parametrize("workers", WORKERS)
def test_relabelled_data_is_a_mismatch_not_a_model_regression(pytester: pytest.Pytester, workers: list[str]) -> None:
    """Same ids, 20 expected labels flipped: it read "regression, p = 0.0011" before."""
    suite(pytester.path, rows(200), GATES)
    write_baseline(pytester)
    relabelled = set(range(0, 40, 2))
    suite(pytester.path, rows(200, relabel=relabelled), GATES)
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    assert result.ret == 1
    s = first(summary)
    assert not any(r.startswith("regression:") for r in s["reasons"])
    assert s["baseline"]["changed_inputs"] == [f"c-{i:03d}" for i in sorted(relabelled)]
    assert s["baseline"]["newly_failing"] == []  # not the same cases: no flips either
    # Allowed: the relabelled cases are left out of the paired test (180 unchanged, no
    # regression on them), but over all cases the accuracy fell: inconclusive.
    result, summary = run(pytester, "--evals-baseline", "main-run", "--evals-baseline-allow-changes",
                          "--junitxml", "junit.xml", *workers)
    assert result.ret == 0, result.stdout.str()
    import xml.etree.ElementTree as ET

    props = {p.get("name"): p.get("value")
             for p in ET.parse(pytester.path / "junit.xml").getroot().iter("property")
             if str(p.get("name")).startswith("evals.jb.")}
    assert props["evals.jb.regression.accuracy.max_drop"] == "inconclusive"
    assert props["evals.jb.baseline.changed_inputs"] == "20"
    assert props["evals.jb.baseline.changes_allowed"] == "true"
    gate = first(summary)["baseline"]["gates"][0]
    assert gate["paired"] == 180 and gate["diff"] == 0
    assert gate["verdict"] == "inconclusive"
    assert gate["cases"] == {"current": 200, "paired": 180, "new": 0, "vanished": 0, "changed_inputs": 20}
    assert gate["all_cases"] == {"baseline": 1.0, "current": 0.9, "new": 20, "vanished": 20}
    result.stdout.fnmatch_lines(["  inputs changed since the baseline (20 case ids, not paired) (allowed: "
                                 "--evals-baseline-allow-changes): c-000, *"])


def test_outputs_do_not_change_a_fingerprint_inputs_do(pytester: pytest.Pytester) -> None:
    """The fingerprint hashes the task's input fields: a new answer is the same case."""
    suite(pytester.path, rows(4))
    _, a = run(pytester)
    suite(pytester.path, rows(4, wrong={0, 1}))
    _, b = run(pytester)
    suite(pytester.path, rows(4, relabel={0}))
    _, c = run(pytester)
    fa, fb, fc = ([r["fingerprint"] for r in first(s)["case_results"]] for s in (a, b, c))
    assert fa == fb and len(set(fa)) == 4 and all(len(f) == 16 for f in fa)
    assert fc[0] != fa[0] and fc[1:] == fa[1:]


# -- settings ---------------------------------------------------------------------------------

TARGETS = '''
def truth(case):
    return {"actual_outcome": case["expected_outcome"]}


def other(case):
    return {"actual_outcome": case["expected_outcome"]}
'''


@pytest.mark.parametrize("workers", WORKERS)
def test_a_baseline_of_another_target_is_reported_and_fails_the_gates(pytester: pytest.Pytester,
                                                                      workers: list[str]) -> None:
    (pytester.path / "targets_mod.py").write_text(TARGETS, encoding="utf-8")
    data = [{k: v for k, v in r.items() if k != "actual_outcome"} for r in rows(20)]
    suite(pytester.path, data, GATES, generate=True, target="targets_mod:truth")
    write_baseline(pytester)
    suite(pytester.path, data, GATES, generate=True, target="targets_mod:other")
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    assert result.ret == 1
    s = first(summary)
    assert s["settings"] == {"target": "targets_mod:other"}
    assert s["baseline"]["settings_changes"] == ['target: "targets_mod:truth" -> "targets_mod:other"']
    assert s["reasons"] == [
        'regression gates: baseline mismatch: the baseline ran with other settings (target: "targets_mod:truth" -> '
        '"targets_mod:other") (--evals-baseline-allow-changes compares anyway)'
    ]
    result, summary = run(pytester, "--evals-baseline", "main-run", "--evals-baseline-allow-changes", *workers)
    assert result.ret == 0
    # Nothing changed, but 20 cases cannot rule out a drop of the gate's 0.02 margin.
    assert first(summary)["baseline"]["gates"][0]["verdict"] == "inconclusive"
    result.stdout.fnmatch_lines(["  settings changed since the baseline (allowed: --evals-baseline-allow-changes): "
                                 'target: "targets_mod:truth" -> "targets_mod:other"'])


def test_a_baseline_of_another_model_is_reported(pytester: pytest.Pytester) -> None:
    """A model target answering through the session's client: the model, endpoint and
    temperature are recorded for suites whose cases asked a model."""
    from pytest_evals.testing.fake_openai import FakeOpenAI

    data = [{"id": f"c-{i}", "question": "true" if i % 2 else "false", "expected_outcome": bool(i % 2)}
            for i in range(20)]
    suite(pytester.path, data, GATES, generate=True, target={"model": None})
    # In subprocesses: an in-process rerun re-imports the per-case usage counter
    # (pytester restores sys.modules), so its cases would show no model calls.
    with FakeOpenAI(responder="echo") as server:
        common = ("-p", "no:cacheprovider", "--evals-base-url", server.base_url,
                  "--evals-cache-dir", str(pytester.path / "cache"))
        assert pytester.runpytest_subprocess("--evals-report-dir", "main-run", *common, "--evals-model", "model-a").ret == 0
        result = pytester.runpytest_subprocess("--evals-json", "cur.json", "--evals-baseline", "main-run", *common,
                                               "--evals-model", "model-b")
    s = first(json.loads((pytester.path / "cur.json").read_text(encoding="utf-8")))
    llm = s["settings"]["llm"]
    assert llm["model"] == "model-b" and llm["base_url"] == server.base_url.rstrip("/")
    assert llm["offline"] is False and "temperature" in llm
    assert s["baseline"]["settings_changes"] == ['llm.model: "model-a" -> "model-b"']
    assert result.ret == 1


def test_secrets_in_settings_are_masked() -> None:
    from pytest_evals.regression.recorded_settings import masked, setting_changes

    spec = {"command": ["x"], "headers": {"Authorization": "Bearer s3cret"}, "api_key": "k", "max_tokens": 5}
    assert masked(spec) == {"command": ["x"], "headers": "***", "api_key": "***", "max_tokens": 5}
    assert setting_changes({"a": {"b": 1}}, {"a": {"b": 2}, "c": "x"}) == ['a.b: 1 -> 2', 'c: (none) -> "x"']


# -- new and vanished cases --------------------------------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
def test_new_cases_are_counted_and_make_the_gate_inconclusive(pytester: pytest.Pytester, workers: list[str]) -> None:
    """50 baseline cases, 50 new all-wrong ones: "accuracy 1.0 -> 1.0, exit 0" before,
    while the suite's accuracy is 0.5."""
    suite(pytester.path, rows(50), GATES)
    write_baseline(pytester)
    new = [{"id": f"new-{i:02d}", "question": f"new {i}", "expected_outcome": True, "actual_outcome": False}
           for i in range(50)]
    suite(pytester.path, rows(50) + new, {"accuracy": {"min": 0.4, "max_drop": 0.02}})
    result, summary = run(pytester, "--evals-baseline", "main-run", *workers)
    s = first(summary)
    gate = s["baseline"]["gates"][0]
    assert (gate["baseline"], gate["current"], gate["paired"]) == (1.0, 1.0, 50)
    assert gate["verdict"] == "inconclusive" and gate["status"] == "inconclusive"
    assert gate["cases"] == {"current": 100, "paired": 50, "new": 50, "vanished": 0, "changed_inputs": 0}
    assert gate["all_cases"] == {"baseline": 1.0, "current": 0.5, "new": 50, "vanished": 0}
    assert "the metric went 1.0000 -> 0.5000, beyond the margin" in gate["reason"]
    assert s["baseline"]["inconclusive"] == ["accuracy"]
    assert result.ret == 0  # inconclusive passes by default, visibly
    result.stdout.fnmatch_lines([
        "  vs baseline: 50 paired cases (of 100 in this run; 50 only in this run)",
        "  INCONCLUSIVE accuracy max drop 0.02 (alpha 0.05): 1.0000 -> 1.0000*50 paired cases; 50 of 100 cases "
        "paired: 50 new) -> inconclusive (*1.0000 -> 0.5000*",
        "  inconclusive (accuracy): passes; --evals-fail-inconclusive fails it",
    ])
    result, summary = run(pytester, "--evals-baseline", "main-run", "--evals-fail-inconclusive", *workers)
    assert result.ret == 1
    assert first(summary)["reasons"][0].startswith("inconclusive: accuracy max drop 0.02")


def test_vanished_cases_are_counted_and_easy_new_ones_do_not_block(pytester: pytest.Pytester) -> None:
    suite(pytester.path, rows(300), {"accuracy": {"max_drop": 0.05}})
    write_baseline(pytester)
    new = [{"id": "new-1", "question": "n", "expected_outcome": True, "actual_outcome": True}]
    suite(pytester.path, rows(300)[:298] + new, {"accuracy": {"max_drop": 0.05}})
    result, summary = run(pytester, "--evals-baseline", "main-run")
    gate = first(summary)["baseline"]["gates"][0]
    assert gate["verdict"] == "no regression", gate
    assert gate["cases"] == {"current": 299, "paired": 298, "new": 1, "vanished": 2, "changed_inputs": 0}
    assert result.ret == 0
    result.stdout.fnmatch_lines(["  no regression accuracy max drop 0.05*298 paired cases; 298 of 299 cases paired: "
                                 "1 new, 2 vanished) -> no regression"])


# -- gates on metrics the task does not compute -----------------------------------------------

@pytest.mark.parametrize("workers", WORKERS)
def test_a_precision_gate_on_a_multiclass_router_is_a_suite_error(pytester: pytest.Pytester,
                                                                  workers: list[str]) -> None:
    """It gated an invented "yes vs rest" precision (0.918 -> 0.918, passed)."""
    labels = ["yes", "no", "maybe"]
    data = [{"id": f"r-{i}", "question": f"q{i}", "expected_outcome": labels[i % 3], "actual_outcome": labels[i % 3]}
            for i in range(30)]
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    (pytester.path / "router.eval.yaml").write_text(yaml.safe_dump({
        "task": "question_router", "input_path": "data/r.jsonl",
        "thresholds": {"accuracy": {"max_drop": 0.02}, "precision": {"max_drop": 0.02}},
    }), encoding="utf-8")
    result, summary = run(pytester, *workers)
    assert result.ret == 1
    problems = first(summary)["problems"]
    assert len(problems) == 1
    assert problems[0].startswith("thresholds.precision.max_drop: the question_router task computes no metric "
                                  "'precision' for this suite (its metrics: accuracy, macro_precision")


def test_a_rule_that_does_not_reproduce_the_suites_metric_is_a_suite_error() -> None:
    """The paired rule must compute the suite's own number, or the gate tests another one."""
    from types import SimpleNamespace

    from pytest_evals.model.metric_value import proportion
    from pytest_evals.regression.drop_gates import RegressionGate
    from pytest_evals.regression.regression_plugin import undefined_gates

    results = [SimpleNamespace(case_id=f"c{i}", status="passed" if i else "failed", data={}, scores={})
               for i in range(4)]
    summary = SimpleNamespace(metrics={"accuracy": proportion(1, 4, "none")}, task="t")
    problems = undefined_gates(summary, [RegressionGate("accuracy", "max_drop", 0.02)], None, results)  # type: ignore[arg-type]
    assert problems == [
        "thresholds.accuracy.max_drop: the paired test's rule for 'accuracy' gives 0.75 over this run's cases, "
        "but the suite's accuracy is 0.25: the gate would test another quantity (a task defines its own with "
        "Task.paired_contribution)"
    ]
    summary.metrics = {"accuracy": proportion(3, 4, "none")}
    assert undefined_gates(summary, [RegressionGate("accuracy", "max_drop", 0.02)], None, results) == []  # type: ignore[arg-type]


# -- inconclusive is shown everywhere -----------------------------------------------------------

def test_inconclusive_is_shown_in_markdown_and_html(pytester: pytest.Pytester) -> None:
    suite(pytester.path, rows(10), GATES)
    write_baseline(pytester)
    suite(pytester.path, rows(10, wrong={0}), GATES)
    result, _ = run(pytester, "--evals-baseline", "main-run", "--evals-markdown", "summary.md",
                    "--html", "report.html", "--self-contained-html")
    assert result.ret == 0
    md = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert "| accuracy | max drop 0.02 |" in md and "inconclusive (passes) |" in md
    assert "1 inconclusive regression gate(s)" in md
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert 'data-verdict="inconclusive"' in page
