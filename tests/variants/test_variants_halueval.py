"""HaluEval comparing two judge models in one run (--evals-model weak,strong): each
model's per-task confusion, precision, recall and F1 with intervals, and the paired
tests between them on the same items, plainly and under -n 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI
from tests.halueval.conftest import DATA_DIR
from tests.halueval.test_halueval_suite import Judge, expected_confusion, truth_table

TASKS = ("qa", "dialogue", "summarization", "general")
SUITE = "task: halueval\ndata_dir: {data_dir}\nsample: {sample}\nseed: 11\n"


@pytest.fixture(scope="module")
def judge_server() -> Iterator[tuple[FakeOpenAI, Judge]]:
    assert (DATA_DIR / "qa_data.json").is_file(), f"HaluEval data missing at {DATA_DIR}"
    judge = Judge(truth_table(DATA_DIR))
    with FakeOpenAI(responder=judge) as server:  # type: ignore[arg-type]
        yield server, judge


def run(pytester: pytest.Pytester, server: FakeOpenAI, name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner("halueval.eval.yaml", "-p", "no:cacheprovider", "-p", "no:randomly",
                    "--evals-base-url", server.base_url, "--evals-model", "weak,strong",
                    "--evals-cache-dir", str(pytester.path / f"cache-{name}"), "--evals-json", str(out), *args)
    return result, json.loads(out.read_text(encoding="utf-8"))


def _value(tree: dict[str, Any], path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        node = node[part]
    return node


def test_halueval_compares_two_judge_models_per_task_with_paired_tests(
    pytester: pytest.Pytester, judge_server: tuple[FakeOpenAI, Judge]
) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    server, judge = judge_server
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=DATA_DIR, sample=60))
    judge.log.clear()
    server.reset()
    _result, plain = run(pytester, server, "plain")
    assert server.stats()["received"] == 120  # each item judged once by each model
    suite = plain["suites"][0]
    assert suite["variants"]["names"] == ["weak", "strong"] and suite["variants"]["reference"] == "weak"
    for model in ("weak", "strong"):
        # each model's confusion per task equals what the server answered it
        expected = expected_confusion([e for e in judge.log if e["model"] == model])
        tree = suite["metrics"][model]
        for group in ("overall", *TASKS):
            c = {k: int(_value(tree, f"{group}.confusion.{k}")["value"]) for k in ("tp", "fp", "fn", "tn")}
            assert c == {k: expected[group][k] for k in ("tp", "fp", "fn", "tn")}, (model, group)
            tp, fp, fn = c["tp"], c["fp"], c["fn"]
            for metric, want in (("precision", tp / (tp + fp) if tp + fp else None),
                                 ("recall", tp / (tp + fn) if tp + fn else None),
                                 ("f1", 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None)):
                got = _value(tree, f"{group}.{metric}")
                if want is None:
                    assert got["value"] is None
                    continue
                assert got["value"] == pytest.approx(want), (model, group, metric)
                assert got["ci_low"] <= got["value"] <= got["ci_high"]  # with its interval
    block = suite["variants"]
    comps = {c["metric"]: c for c in block["comparisons"]}
    assert all(c["variant"] == "strong" and c["against"] == "weak" for c in block["comparisons"])
    # the paper's comparison made honest: per task, on the same items, Holm-adjusted
    for task in ("overall", "qa", "dialogue", "summarization"):
        for metric in ("precision", "recall", "f1"):
            assert f"{task}.{metric}" in comps, f"{task}.{metric}"
            c = comps[f"{task}.{metric}"]
            assert c["value"] == pytest.approx(_value(suite["metrics"]["strong"], f"{task}.{metric}")["value"])
            assert c["against_value"] == pytest.approx(_value(suite["metrics"]["weak"], f"{task}.{metric}")["value"])
            assert c["verdict"] in ("better", "worse", "no significant difference")
            assert c["p_holm"] >= c["p_value"]
    # accuracy: the exact McNemar test on the items one model got right and the other wrong
    acc = comps["overall.accuracy"]
    status = {c["case_id"]: c["status"] for c in suite["case_results"]}
    items = {cid.rpartition("[")[0] for cid in status}
    only_weak = sum(status[f"{i}[weak]"] == "passed" and status[f"{i}[strong]"] == "failed" for i in items)
    only_strong = sum(status[f"{i}[weak]"] == "failed" and status[f"{i}[strong]"] == "passed" for i in items)
    assert (acc["method"], acc["only_against"], acc["only_variant"], acc["paired"]) == (
        "exact McNemar", only_weak, only_strong, 60)
    assert acc["p_value"] == pytest.approx(scipy_stats.binomtest(only_strong, only_weak + only_strong, 0.5).pvalue)
    best = {b["metric"]: b for b in block["best"]}
    assert best["overall.accuracy"]["verdict"] in ("better", "no significant difference")
    assert (best["overall.accuracy"]["best"] == "strong") == (acc["verdict"] == "better")

    # under -n 2, fresh cache: the same requests and the same matrix and tests
    server.reset()
    _r, two = run(pytester, server, "two", "-n", "2")
    assert server.stats()["received"] == 120
    s2 = two["suites"][0]
    assert s2["metrics"] == suite["metrics"]
    assert s2["variants"]["comparisons"] == block["comparisons"] and s2["variants"]["best"] == block["best"]


def test_a_variant_gate_on_a_halueval_task_metric(pytester: pytest.Pytester,
                                                  judge_server: tuple[FakeOpenAI, Judge]) -> None:
    server, _judge = judge_server
    gate = "variants: [{name: weak, model: weak}, {name: strong, model: strong, no_worse_than: " \
           "{variant: weak, metric: %s, margin: 0.5}}]\n"
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=DATA_DIR, sample=12) + gate % "qaa.f1")
    server.reset()
    result = pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
                                "--evals-cache-dir", str(pytester.path / "cache"))
    # a group no case is in: an error at collection, naming the file, the field and the groups there are
    result.stdout.fnmatch_lines(["*halueval.eval.yaml: variants.strong.no_worse_than.metric 'qaa.f1': the halueval "
                                 "task computes no metric 'qaa.f1' for this suite*its cases' task_type values: "
                                 "dialogue, general, qa, summarization)*"])
    assert result.ret == 1 and server.stats()["received"] == 0
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=DATA_DIR, sample=12) + gate % "qa.f1")
    out = Path(pytester.path / "s.json")
    result = pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
                                "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out))
    suite = json.loads(out.read_text(encoding="utf-8"))["suites"][0]
    gates = suite["variants"]["gates"]
    qa_items = sum(c["data"].get("task_type") == "qa" for c in suite["case_results"] if c["case_id"].endswith("[weak]"))
    assert qa_items >= 3
    assert [(g["metric"], g["paired"]) for g in gates] == [("qa.f1", qa_items)]  # the qa items only
    assert gates[0]["verdict"] in ("no worse", "worse", "inconclusive")
