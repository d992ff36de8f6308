"""Aggregation on the controller: corpus recomputation, means, undefined scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.harpia.scores import TABLE_KEY
from pytest_evals.families.harpia.task import Harpia
from pytest_evals.families.harpia.writers import LiveLog, log_lines, output_objects
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import Metric
from pytest_evals.registry.family_registry import implicit_suite
from pytest_evals.suites.suite_config import load_suite
from pytest_evals.tasks import TASK_CATALOG

from .conftest import INSTANCES, harpia_doc, validate_schema


def make_task(tmp_path: Path, metrics: list[dict[str, Any]]) -> Harpia:
    path = tmp_path / "s.harpia.json"
    path.write_text(json.dumps(harpia_doc(metrics)), encoding="utf-8")
    suite = load_suite(path, "s.harpia.json", raw=implicit_suite(path), catalog=TASK_CATALOG)
    return Harpia(suite)


def evaluate_all(task: Harpia) -> list[CaseResult]:
    from pytest_evals.worker.prefetch import drive

    out = []
    for ref in task.case_refs():
        case = task.load_case(ref)
        result: CaseResult = drive(task.evaluate(case, ref, None))  # type: ignore[arg-type]
        result.index = ref.locator
        out.append(result)
    return out


def test_aggregate_recomputes_corpus_scores_in_any_arrival_order(tmp_path: Path) -> None:
    task = make_task(tmp_path, [{"id": "bleu", "parameters": {"smoothing": "method1"}}, {"id": "chrf"},
                                {"id": "exact_match", "parameters": {"threshold": 1}}])
    results = evaluate_all(task)
    tree, tables = task.aggregate(results)
    shuffled_tree, shuffled_tables = task.aggregate(list(reversed(results)))
    timing = ("elapsed_time", "elapsed time", "setup_time")
    untimed = [[{k: v for k, v in o.items() if k not in timing} for o in t[TABLE_KEY]["metrics"]]
               for t in (tables, shuffled_tables)]
    assert untimed[0] == untimed[1]
    bleu = task.specs[0].metric
    expected = bleu.corpus_score([i["actual-output"] for i in INSTANCES], [i["expected-output"] for i in INSTANCES])
    assert isinstance(tree["bleu"], Metric) and tree["bleu"].value == pytest.approx(expected["bleu"])
    assert tree["bleu"] == shuffled_tree["bleu"]
    per_instance = tree["per_instance"]
    assert isinstance(per_instance, dict)
    assert set(per_instance) == {"bleu", "chrf", "exact_match"}
    exact = per_instance["exact_match"]
    assert isinstance(exact, dict) and exact["pass_rate"].value == pytest.approx(2 / 6)  # type: ignore[union-attr]
    objects = output_objects({"name": "s", "tables": tables})
    validate_schema(objects, "output.schema.json")
    assert [o["level"] for o in objects] == ["corpus", "corpus", "mean"]


def test_no_scored_instance_gives_undefined_scores_not_zeros(tmp_path: Path) -> None:
    task = make_task(tmp_path, [{"id": "bleu"}, {"id": "rouge", "parameters": {"rouge_types": ["rougeL"]}},
                                {"id": "exact_match"}])
    tree, tables = task.aggregate([])
    assert isinstance(tree["bleu"], Metric) and tree["bleu"].value is None
    assert tree["bleu"].reason == "0/0: no scored instances"
    rouge = tree["rouge"]
    assert isinstance(rouge, Metric) and rouge.value is None  # one rouge type: one value
    assert isinstance(tree["exact_match"], Metric) and tree["exact_match"].value is None
    objects = output_objects({"name": "s", "tables": tables})
    assert [o["score"] for o in objects] == [{"bleu": None}, {"rougeL": None}, {"exact_match": None}]
    assert all(o["instances"] == 0 for o in objects)
    validate_schema(objects, "output.schema.json")
    assert tables[TABLE_KEY]["disabled"] == []


def test_live_log_lines_are_the_final_lines_in_arrival_order(tmp_path: Path) -> None:
    task = make_task(tmp_path, [{"id": "chrf"}, {"id": "bleu", "parameters": {"smoothing_function": "method1"}}])
    results = evaluate_all(task)
    live = LiveLog(str(tmp_path / "{suite}.log.jsonl"))
    for result in reversed(results):  # any arrival order
        live.add(result)
    live.close()
    appended = [json.loads(x) for x in (tmp_path / "s.log.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [x["instance_id"] for x in appended[:2]] == [INSTANCES[-1]["id"]] * 2
    _, tables = task.aggregate(results)
    suite = {"suite": task.suite.nodeid, "name": task.suite.name, "tables": tables}
    final = list(log_lines(suite, results))
    key = lambda x: (x["metric_id"], x["instance_id"])  # noqa: E731
    assert sorted(appended, key=key) == sorted(final, key=key)
    for line in appended:
        validate_schema(line, "log.schema.json")
