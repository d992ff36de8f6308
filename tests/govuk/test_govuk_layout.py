"""GOV.UK Chat's own files, run unchanged: their layout, their configs, their figures."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from .layout import JUDGE_MODEL, RAG_METRICS, build, metric, suite_of

ARGS = ("config/defaults/", "--evals-suite-pattern", "*.yaml", "--no-evals-generate", "-p", "no:cacheprovider")


def run_layout(pytester: pytest.Pytester, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    build(pytester.path)
    # In process unless the run has xdist workers: a process start costs more than the run.
    run = pytester.runpytest_subprocess if "-n" in extra else pytester.runpytest
    result = run(*ARGS, "--evals-json", "summary.json", *extra)
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    return result, summary


def check_figures(summary: dict[str, Any]) -> None:
    names = sorted(s["name"] for s in summary["suites"])
    assert names == ["jailbreak_guardrails", "output_guardrails", "question_router", "rag_answers",
                     "retrieval", "topic_tagger"]
    for s in summary["suites"]:
        assert not s.get("problems"), (s["name"], s.get("problems"))
        assert s["cases"].get("errors_by_kind", {}).get("config", 0) == 0
    # jailbreak_guardrails (their test table: 4 TP, 3 TN, 1 FP, 1 FN).
    assert metric(summary, "jailbreak_guardrails", "precision") == pytest.approx(0.8)
    assert metric(summary, "jailbreak_guardrails", "recall") == pytest.approx(0.8)
    assert [metric(summary, "jailbreak_guardrails", k) for k in ("tp", "tn", "fp", "fn")] == [4, 3, 1, 1]
    # output_guardrails: any-triggered and per guardrail (P [0.75, 0.5, 1], R [1, .5, .5], F1 [6/7, .5, 2/3]).
    assert [metric(summary, "output_guardrails", k) for k in ("tp", "tn", "fp", "fn")] == [3, 1, 1, 1]
    for name, p, r, f1 in (("g1", 0.75, 1.0, 6 / 7), ("g2", 0.5, 0.5, 0.5), ("g3", 1.0, 0.5, 2 / 3)):
        assert metric(summary, "output_guardrails", f"per_guardrail.{name}.precision") == pytest.approx(p)
        assert metric(summary, "output_guardrails", f"per_guardrail.{name}.recall") == pytest.approx(r)
        assert metric(summary, "output_guardrails", f"per_guardrail.{name}.f1") == pytest.approx(f1)
    # question_router: accuracy 0.6, weighted P 0.61, R 0.6, F1 0.45, F2 0.5303.
    assert metric(summary, "question_router", "accuracy") == pytest.approx(0.6)
    assert round(metric(summary, "question_router", "weighted_precision"), 2) == 0.61
    assert metric(summary, "question_router", "weighted_recall") == pytest.approx(0.6)
    assert round(metric(summary, "question_router", "weighted_f1"), 2) == 0.45
    assert round(metric(summary, "question_router", "weighted_f2"), 4) == 0.5303
    missed = suite_of(summary, "question_router")["tables"]["miscategorised_cases"]
    assert [(m["question"], m["predicted_classification"], m["actual_classification"], m["confidence_score"])
            for m in missed] == [("Q3", "character_fun", "genuine_rag", 0.5), ("Q4", "character_fun", "about_mps", 0.3)]
    # retrieval: their aggregate test table.
    expected = {
        "precision": (0.6, 0.6667, 1.0, 0.3887), "recall": (0.7, 1.0, 1.0, 0.4),
        "f1": (0.5933, 0.6667, 1.0, 0.3389), "f2": (0.6358, 0.7143, 1.0, 0.3533),
    }
    for score, figures in expected.items():
        got = tuple(round(metric(summary, "retrieval", f"{score}.{k}"), 4) for k in ("mean", "median", "max", "std"))
        assert got == figures, score
    # topic_tagger: their aggregate test (6 evaluated, 1 errored, 1/2/2/4/5).
    assert metric(summary, "topic_tagger", "evaluated") == 6
    assert metric(summary, "topic_tagger", "errored") == 1
    counts = [metric(summary, "topic_tagger", f"{k}.count") for k in (
        "correct_primary_and_secondary", "correct_topics_any_order", "primary_matched_with_primary",
        "primary_matched_with_either", "matched_any_topic")]
    assert counts == [1, 2, 2, 4, 5]
    # rag_answers: all eight metrics reported, each scored on both cases.
    for name, _threshold in RAG_METRICS:
        assert metric(summary, "rag_answers", f"{name}.mean") is not None, name
        assert suite_of(summary, "rag_answers")["metrics"][name]["mean"]["n"] == 2
    # Every interval holds its estimate and stays in [0, 1]: every GOV.UK metric is a
    # proportion, an F-score, an average of them or a mean of [0, 1] scores (issue 25: the
    # router's macro intervals missed their estimates, retrieval's t intervals left [0, 1]).
    checked = 0
    for s in summary["suites"]:
        for path, leaf in _leaves(s["metrics"]):
            if "ci_low" in leaf:
                assert 0.0 <= leaf["ci_low"] <= leaf["value"] <= leaf["ci_high"] <= 1.0, (s["name"], path, leaf)
                checked += 1
    assert checked > 40
    for name in ("macro_precision", "macro_f1", "weighted_recall"):
        assert "ci_low" in suite_of(summary, "question_router")["metrics"][name], name
    assert "ci_low" in suite_of(summary, "retrieval")["metrics"]["recall"]["mean"]


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for key, value in tree.items():
        if isinstance(value, dict) and "kind" in value and "value" in value:
            out.append((prefix + key, value))
        elif isinstance(value, dict):
            out.extend(_leaves(value, prefix + key + "."))
    return out


def test_their_layout_loads_and_reproduces_their_figures(pytester: pytest.Pytester, judge: Any) -> None:
    _server, scripted = judge
    result, summary = run_layout(pytester)
    result.stdout.no_fnmatch_line("*suite could not be loaded*")
    check_figures(summary)
    # Every judge request asked for the metric's own model, and the summary names it.
    assert scripted.requests and {r["model"] for r in scripted.requests} == {JUDGE_MODEL}
    rag = suite_of(summary, "rag_answers")
    assert set(rag["tables"]["judge_models"].values()) == {JUDGE_MODEL}
    result.stdout.fnmatch_lines([f"  judged by {JUDGE_MODEL} (faithfulness, bias, relevance, *coherence)"])


def test_their_layout_under_xdist_gives_the_same_numbers(pytester: pytest.Pytester, judge: Any) -> None:
    _result, plain = run_layout(pytester)
    (pytester.path / "summary.json").unlink()
    _result2, dist = run_layout(pytester, "-n", "2")
    check_figures(dist)
    for a, b in zip(plain["suites"], dist["suites"], strict=True):
        assert a["name"] == b["name"]
        assert a["metrics"] == b["metrics"], a["name"]


def test_run_folder_has_their_csv_files(pytester: pytest.Pytester, judge: Any) -> None:
    result, _summary = run_layout(pytester, "--evals-report-dir", "results")
    runs = list((pytester.path / "results").iterdir())
    assert len(runs) == 1, result.stdout.str()
    folder = runs[0]

    def rows(path: Path) -> list[dict[str, str]]:
        with path.open(encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))

    router = folder / "question_router"
    missed = rows(router / "miscategorised_cases.csv")
    assert [m["question"] for m in missed] == ["Q3", "Q4"]
    assert list(missed[0])[:5] == ["question", "predicted_classification", "actual_classification",
                                   "confidence_score", "answer"]
    agg = {r["property"]: r["value"] for r in rows(router / "aggregate.csv")}
    assert agg["Model"] == "model_name" and agg["Evaluated"] == "5" and agg["Miscategorised Cases"] == "2"
    assert round(float(agg["F2 Score"]), 4) == 0.5303
    results = rows(router / "results.csv")
    assert list(results[0])[:6] == ["question", "expected_outcome", "actual_outcome", "confidence_score", "answer", "model"]
    jb = rows(folder / "jailbreak_guardrails" / "results.csv")
    assert [r["classification"] for r in jb][-2:] == ["false_positive", "false_negative"]
    og = rows(folder / "output_guardrails" / "results.csv")
    assert og[0]["message"] == "Answer 1"
    tt = {r["property"]: r["value"] for r in rows(folder / "topic_tagger" / "aggregate.csv")}
    assert tt["Errored"] == "1" and tt["Matched Any Topic"] == "5"
    rt = {r["property"]: r["value"] for r in rows(folder / "retrieval" / "aggregate.csv")}
    assert round(float(rt["F2 mean"]), 4) == 0.6358
    rt_rows = rows(folder / "retrieval" / "results.csv")
    assert json.loads(rt_rows[1]["false_negatives_exact_paths"]) == ["/path1"]
    assert json.loads(rt_rows[1]["false_positives_exact_paths"]) == ["/path3"]


def test_ini_patterns_collect_plain_yaml(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    (pytester.path / "config" / "defaults" / "rag_answers.yaml").unlink()
    pytester.makeini("[pytest]\nevals_suite_patterns = *.yaml\n")
    result = pytester.runpytest("config/defaults/", "--no-evals-generate", "-p", "no:cacheprovider")
    # 9 + 6 + 5 + 5 + 7 cases; without the pattern nothing would be collected.
    assert result.parseoutcomes().get("passed", 0) + result.parseoutcomes().get("failed", 0) + \
        result.parseoutcomes().get("errors", 0) == 32
    result.stdout.no_fnmatch_line("*suite could not be loaded*")


def test_plain_yaml_is_not_collected_without_a_pattern(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    result = pytester.runpytest("config/defaults/", "--no-evals-generate", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_missing_input_names_both_places(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    (pytester.path / "data" / "retrieval.jsonl").unlink()
    result = pytester.runpytest("config/defaults/retrieval.yaml", "--evals-suite-pattern", "*.yaml",
                                "--no-evals-generate", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*config/defaults/data/retrieval.jsonl: input file not found (input_path"
                                 " 'data/retrieval.jsonl' of retrieval.yaml; looked in"
                                 " *config/defaults/data/retrieval.jsonl and *data/retrieval.jsonl)*"])


def test_unknown_file_name_without_task_is_a_clear_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "mystery.yaml").write_text("what: x\ninput_path: x.jsonl\n", encoding="utf-8")
    result = pytester.runpytest("mystery.yaml", "--evals-suite-pattern", "*.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*mystery.yaml: field 'task' is required*or name the file after its task*"])


def test_example_suites_retrieval_and_topic_tagger(pytester: pytest.Pytester) -> None:
    suites = Path(__file__).resolve().parents[2] / "eval_suites"
    args = [str(suites / "retrieval.eval.yaml"), str(suites / "topic_tagger.eval.yaml"),
            "--evals-json", "s.json", "-p", "no:cacheprovider"]
    plain = pytester.runpytest(*args)
    assert plain.ret == 0, plain.stdout.str()[-2000:]
    plain.assert_outcomes(passed=11, failed=5, errors=1)
    summary = json.loads((pytester.path / "s.json").read_text())
    assert metric(summary, "retrieval", "recall.mean") == pytest.approx(6.5 / 8)
    assert metric(summary, "topic_tagger", "primary_matched_with_either.rate") == pytest.approx(7 / 8)
    dist = pytester.runpytest_subprocess(*args[:-4], "--evals-json", "d.json", "-n", "2", "-p", "no:cacheprovider")
    assert dist.ret == 0
    two = json.loads((pytester.path / "d.json").read_text())
    assert [s["metrics"] for s in summary["suites"]] == [s["metrics"] for s in two["suites"]]
