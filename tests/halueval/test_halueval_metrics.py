"""Metrics and baselines against hand-computed values."""

from __future__ import annotations

import pytest

from pytest_evals.families.halueval.metrics import Outcome, aggregate
from pytest_evals.model.metric_value import Metric
from pytest_evals.stats import intervals as stats


def o(task: str, expected: str, predicted: str | None, shown: int = 10, other: int | None = 5, **kw: bool) -> Outcome:
    return Outcome(task, expected, predicted, shown_len=shown, other_len=other, **kw)


def qa_outcomes() -> list[Outcome]:
    # TP 3, FP 1, FN 2 (one of them a verdict-less strict reply), TN 4
    return (
        [o("qa", "yes", "yes", 20, 5)] * 3
        + [o("qa", "no", "yes", 5, 20)]
        + [o("qa", "yes", "no", 20, 5), o("qa", "yes", None, 3, 20, unparseable=True)]
        + [o("qa", "no", "no", 5, 20)] * 3
        + [o("qa", "no", "no", 30, 20, ambiguous=True)]
    )


def value(tree: dict, path: str) -> float | None:
    node = tree
    for part in path.split("."):
        node = node[part]
    assert isinstance(node, Metric)
    return node.value


def test_confusion_metrics_by_hand() -> None:
    tree, tables = aggregate(qa_outcomes())
    assert value(tree, "qa.confusion.tp") == 3
    assert value(tree, "qa.confusion.fp") == 1
    assert value(tree, "qa.confusion.fn") == 2
    assert value(tree, "qa.confusion.tn") == 4
    assert value(tree, "qa.n") == 10
    assert value(tree, "qa.accuracy") == pytest.approx(0.7)
    assert value(tree, "qa.precision") == pytest.approx(0.75)
    assert value(tree, "qa.recall") == pytest.approx(0.6)
    assert value(tree, "qa.f1") == pytest.approx(2 * 0.75 * 0.6 / (0.75 + 0.6))
    assert value(tree, "qa.yes_rate") == pytest.approx(0.4)
    assert value(tree, "qa.unparseable") == 1
    assert value(tree, "qa.ambiguous") == 1
    acc = tree["qa"]["accuracy"]
    assert isinstance(acc, Metric) and acc.ci == stats.clopper_pearson(7, 10)
    f1 = tree["qa"]["f1"]
    assert isinstance(f1, Metric) and f1.ci is not None and f1.ci[0] <= f1.value <= f1.ci[1]  # type: ignore[operator]
    # overall equals qa when only qa is present
    assert value(tree, "overall.accuracy") == value(tree, "qa.accuracy")
    assert tables["halueval_confusion"][1] == {
        "task": "qa", "n": 10, "accuracy": 0.7, "precision": 0.75, "recall": 0.6,
        "f1": pytest.approx(2 / 3), "unparseable": 1, "errored": 0, "tp": 3, "fp": 1, "fn": 2, "tn": 4,
    }
    # the suite-level unparseable count and rate sit at the top of the tree (gate-able)
    assert value(tree, "unparseable") == 1
    assert value(tree, "unparseable_rate") == pytest.approx(0.1)


def test_strict_verdictless_on_faithful_output_is_a_false_positive() -> None:
    tree, _ = aggregate([o("qa", "no", None, unparseable=True), o("qa", "yes", "yes")])
    assert value(tree, "qa.confusion.fp") == 1
    assert value(tree, "qa.confusion.tp") == 1
    assert value(tree, "qa.accuracy") == 0.5


def test_baselines_by_hand() -> None:
    general = [
        # lengths 10, 20, 30, 40 -> median 25: the two longer ones are called hallucinated
        o("general", "yes", "yes", 40, None),
        o("general", "no", "no", 10, None),
        o("general", "no", "yes", 30, None),
        o("general", "yes", "no", 20, None),
    ]
    tree, tables = aggregate(qa_outcomes() + general)
    b = "baselines"
    # qa: 5 hallucinated of 10
    assert value(tree, f"{b}.always_yes.qa.accuracy") == 0.5
    assert value(tree, f"{b}.always_no.qa.accuracy") == 0.5
    assert value(tree, f"{b}.always_yes.qa.f1") == pytest.approx(2 * 5 / (2 * 5 + 5))
    # 2TP / (2TP + FP + FN) = 0 / 5: precision is 0/0 but F1 is defined and 0
    assert value(tree, f"{b}.always_no.qa.f1") == 0.0
    # qa length rule: shown longer than the other -> yes.
    # right: 4 yes-cases longer (20>5 x3, 20>5), 1 shorter (3<20) -> TP 4, FN 1;
    # no-cases: (5,20) x4 shorter -> TN 4, (30,20) longer -> FP 1  => 8/10
    assert value(tree, f"{b}.longer_is_hallucinated.qa.accuracy") == pytest.approx(0.8)
    assert value(tree, f"{b}.longer_is_hallucinated.general.accuracy") == pytest.approx(0.5)
    assert value(tree, f"{b}.always_yes.overall.accuracy") == pytest.approx(7 / 14)
    assert value(tree, f"{b}.always_no.general.accuracy") == pytest.approx(0.5)
    # general judge metrics
    assert value(tree, "general.accuracy") == 0.5
    assert value(tree, "overall.accuracy") == pytest.approx((7 + 2) / 14)
    assert value(tree, "overall.n") == 14
    row = tables["halueval_accuracy_vs_baselines"][2]
    assert row == {"task": "general", "judge": 0.5, "always_yes": 0.5, "always_no": 0.5, "longer_is_hallucinated": 0.5}
    assert list(tree) == ["overall", "qa", "general", "baselines", "unparseable", "unparseable_rate"]


def test_errored_items_leave_accuracy_unless_the_denominator_is_all() -> None:
    # 4 answered (3 right), 2 errored after retries (no reply): one hallucinated, one not
    items = [
        o("qa", "yes", "yes"), o("qa", "no", "no"), o("qa", "yes", "yes"), o("qa", "no", "yes"),
        o("qa", "yes", None, errored=True), o("qa", "no", None, errored=True),
    ]
    judged, _ = aggregate(items)
    assert value(judged, "qa.accuracy") == pytest.approx(3 / 4)
    assert value(judged, "qa.n") == 4 and value(judged, "qa.errored") == 2
    assert value(judged, "baselines.always_yes.qa.accuracy") == pytest.approx(2 / 4)
    every, _ = aggregate(items, "all")
    # the official script: correct / all items, an item without a verdict is wrong
    assert value(every, "qa.accuracy") == pytest.approx(3 / 6)
    assert value(every, "qa.n") == 6
    assert (value(every, "qa.confusion.fn"), value(every, "qa.confusion.fp")) == (1, 2)
    assert value(every, "baselines.always_yes.qa.accuracy") == pytest.approx(3 / 6)
    # an errored item is not an unparseable reply: the rate is over answered items only
    assert value(every, "unparseable") == 0 and value(every, "unparseable_rate") == 0.0
    rate = aggregate([o("qa", "no", None, errored=True)])[0]["unparseable_rate"]
    assert isinstance(rate, Metric) and rate.value is None and "no judge replies" in (rate.reason or "")


def test_empty_and_undefined() -> None:
    tree, _ = aggregate([])
    acc = tree["overall"]["accuracy"]
    assert isinstance(acc, Metric) and acc.value is None and acc.reason and acc.reason.startswith("0/0")
    tree, _ = aggregate([o("dialogue", "no", "no")])
    p = tree["dialogue"]["precision"]
    assert isinstance(p, Metric) and p.value is None and "no output was called hallucinated" in (p.reason or "")
    r = tree["dialogue"]["recall"]
    assert isinstance(r, Metric) and r.value is None


def test_aggregation_does_not_depend_on_order() -> None:
    items = [*qa_outcomes(), o("general", "yes", "no", 7, None), o("general", "no", "no", 9, None)]
    a, _ = aggregate(items)
    b, _ = aggregate(list(reversed(items)))
    from pytest_evals.model.metric_value import tree_to_json

    assert tree_to_json(a) == tree_to_json(b)
