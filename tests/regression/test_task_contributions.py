"""Per-case contributions come from the Task contract: label words and a task's own rule."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.classification.task import JailbreakGuardrails
from pytest_evals.families.halueval.task import HaluEval
from pytest_evals.regression.contributions import (
    POSITIVE,
    contributor,
    label_rule,
    labels,
    own_rule,
    positive_words,
)
from pytest_evals.tasks.task_contract import Contribution, Task


class _Plain(Task[Any]):
    name = "plain"
    positive_labels = frozenset({"Flagged"})


class _Own(Task[Any]):
    name = "own"

    def paired_contribution(
        self, data: Mapping[str, Any], scores: Mapping[str, Any], status: str, metric: str
    ) -> Contribution | None:
        if metric == "per_group.a.accuracy":
            return (float(data["hit"]), 1.0) if data["group"] == "a" else None
        return NotImplemented


def _task(cls: type[Task[Any]]) -> Task[Any]:
    return cls.__new__(cls)  # the contract's class attributes only: no suite needed


def test_label_words_are_the_tasks_own() -> None:
    assert positive_words(None) == POSITIVE == {"yes", "true", "1"}
    assert positive_words(_task(_Plain)) == {"yes", "true", "1", "flagged"}
    data = {"expected": "flagged", "actual": "no"}
    assert labels(data) == (False, False)
    assert labels(data, positive_words(_task(_Plain))) == (True, False)
    recall = contributor(_task(_Plain), "recall")
    assert recall is not None and recall(data, {}, "failed") == (0.0, 1.0)
    # The built-in families declare the words their data uses.
    assert {"jailbreak", "triggered"} <= JailbreakGuardrails.positive_labels
    assert "hallucinated" in HaluEval.positive_labels


def test_a_tasks_own_rule_takes_over_and_defers_with_not_implemented() -> None:
    task = _task(_Own)
    assert own_rule(_task(_Plain)) is None and own_rule(None) is None
    nested = contributor(task, "per_group.a.accuracy")
    assert nested is not None
    assert nested({"hit": True, "group": "a"}, {}, "passed") == (1.0, 1.0)
    assert nested({"hit": True, "group": "b"}, {}, "passed") is None
    accuracy = contributor(task, "accuracy")  # NotImplemented: the built-in rule
    assert accuracy is not None and accuracy({}, {}, "failed") == (0.0, 1.0)
    # A task with its own rule never takes the shared label fast path.
    assert label_rule(task, "recall") is None and label_rule(_task(_Plain), "recall") is not None
    assert contributor(task, "per_group.b.unknown") is not None
    assert contributor(_task(_Plain), "per_group.b.unknown") is None


FAMILY = '''
from __future__ import annotations

from typing import Any

from pytest_evals import CaseRef, CaseResult, Task
from pytest_evals.model.metric_value import proportion

TASKS = {"grouped": "groupfam:Grouped"}


class Grouped(Task[dict]):
    name = "grouped"
    # ``hit`` is the system's output: a new one is the same case, not another input.
    output_fields = frozenset({"hit"})

    def validate_case(self, data: Any, ref: CaseRef) -> dict:
        return dict(data)

    async def evaluate(self, case: dict, ref: CaseRef, ctx: Any) -> CaseResult:
        result = self.new_result(ref)
        result.data = {"group": case["group"], "hit": case["hit"]}
        result.status = "passed" if case["hit"] else "failed"
        return result

    def aggregate(self, results: list[CaseResult]) -> tuple[dict, dict]:
        groups = sorted({r.data["group"] for r in results})
        per = {g: {"accuracy": proportion(sum(r.data["hit"] for r in results if r.data["group"] == g),
                                          sum(r.data["group"] == g for r in results), "none")} for g in groups}
        hits = sum(r.data["hit"] for r in results)
        return {"accuracy": proportion(hits, len(results), "none"), "per_group": per}, {}

    def paired_contribution(self, data, scores, status, metric):
        parts = metric.split(".")
        if len(parts) == 3 and parts[0] == "per_group" and parts[2] == "accuracy":
            return (float(data["hit"]), 1.0) if data["group"] == parts[1] else None
        return NotImplemented
'''


def _install(root: Path) -> None:
    from pytest_evals.registry import family_registry as families

    (root / "groupfam.py").write_text(FAMILY, encoding="utf-8")
    info = root / "groupfam-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: groupfam\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[{families.GROUP}]\ngrouped = groupfam\n", encoding="utf-8")


def _write(root: Path, misses_in_a: int) -> None:
    rows = [{"id": f"{g}-{i:02d}", "group": g, "hit": not (g == "a" and i < misses_in_a)}
            for g in ("a", "b") for i in range(30)]
    (root / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    thresholds = {"per_group": {"a": {"accuracy": {"max_drop": 0.02}}, "b": {"accuracy": {"max_drop": 0.25}}},
                  "accuracy": {"max_drop": 0.5}}
    (root / "g.eval.yaml").write_text(
        yaml.safe_dump({"task": "grouped", "input_path": "cases.jsonl", "thresholds": thresholds}), encoding="utf-8"
    )


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_third_party_tasks_nested_metric_is_gated_against_a_baseline(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    _install(pytester.path)
    _write(pytester.path, misses_in_a=0)
    assert pytester.runpytest_subprocess("--evals-json", "base.json", "-p", "no:cacheprovider").ret == 0
    _write(pytester.path, misses_in_a=12)
    result = pytester.runpytest_subprocess(*workers, "--evals-json", "cur.json", "--evals-baseline", "base.json",
                                           "-p", "no:cacheprovider")
    suite = json.loads((pytester.path / "cur.json").read_text(encoding="utf-8"))["suites"][0]
    gates = {g["metric"]: g for g in suite["baseline"]["gates"]}
    assert gates["per_group.a.accuracy"]["status"] == "failed"  # 12 of 30 flipped: the task's own rule
    # b did not change; with 30 cases the change's interval rules out a drop of 0.25
    # (a 0.02 margin would be inconclusive at this size: the interval is about +-0.12).
    assert gates["per_group.b.accuracy"]["status"] == "passed"
    # Left to the built-in rule (NotImplemented). The gate was on ``pass_rate`` before
    # issue 25: a metric this task does not compute, now a suite error (test below).
    assert gates["accuracy"]["status"] == "passed"
    assert result.ret == 1


def test_a_gate_on_a_metric_the_task_does_not_compute_is_a_suite_error(pytester: pytest.Pytester) -> None:
    """The built-in ``pass_rate`` rule would invent a metric the grouped task never reports."""
    _install(pytester.path)
    _write(pytester.path, misses_in_a=0)
    doc = yaml.safe_load((pytester.path / "g.eval.yaml").read_text(encoding="utf-8"))
    doc["thresholds"] = {"pass_rate": {"max_drop": 0.02}}
    (pytester.path / "g.eval.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    result = pytester.runpytest_subprocess("--evals-json", "cur.json", "-p", "no:cacheprovider")
    assert result.ret == 1
    suite = json.loads((pytester.path / "cur.json").read_text(encoding="utf-8"))["suites"][0]
    assert suite["problems"] == [
        "thresholds.pass_rate.max_drop: the grouped task computes no metric 'pass_rate' for this suite "
        "(its metrics: accuracy)"
    ]
