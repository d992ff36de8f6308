"""Metric arithmetic against hand-computed values, scipy's intervals and scikit-learn's scores."""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path
from typing import Any

import pytest
import sklearn.metrics as sklearn_metrics
from scipy import stats as sps

from pytest_evals.families.classification.task import OutputGuardrails, OutputGuardrailsCase
from pytest_evals.metrics.label_metrics import (
    binary_metrics,
    confusion_matrix,
    f_beta,
    multiclass_metrics,
)
from pytest_evals.model.gate import check, parse_thresholds
from pytest_evals.model.metric_value import (
    Metric,
    count,
    mean_metric,
    proportion,
    score_summary,
    tree_from_json,
    tree_to_json,
    walk,
)
from pytest_evals.stats import intervals as stats
from pytest_evals.suites.suite_config import Suite
from pytest_evals.tasks.task_contract import CaseRef
from pytest_evals.worker.prefetch import drive


def pairs_from_counts(tp: int, tn: int, fp: int, fn: int) -> list[tuple[bool, bool]]:
    return [(True, True)] * tp + [(False, False)] * tn + [(False, True)] * fp + [(True, False)] * fn


def value(tree: dict[str, Any], path: str) -> float | None:
    metric = dict(walk(tree))[path]
    return metric.value


# -- binary -------------------------------------------------------------------------------


def test_binary_metrics_by_hand() -> None:
    tree = binary_metrics(pairs_from_counts(tp=6, tn=9, fp=2, fn=3))
    assert value(tree, "accuracy") == pytest.approx(15 / 20)
    assert value(tree, "precision") == pytest.approx(6 / 8)
    assert value(tree, "recall") == pytest.approx(6 / 9)
    # F1 = 2TP / (2TP + FP + FN); F2 = 5TP / (5TP + 4FN + FP)
    assert value(tree, "f1") == pytest.approx(12 / 17)
    assert value(tree, "f2") == pytest.approx(30 / 44)
    assert [value(tree, k) for k in ("tp", "tn", "fp", "fn")] == [6, 9, 2, 3]
    assert dict(walk(tree))["accuracy"].n == 20
    assert dict(walk(tree))["precision"].n == 8
    assert dict(walk(tree))["recall"].n == 9
    assert dict(walk(tree))["tp"].kind == "count"


@pytest.mark.parametrize("counts", [(6, 9, 2, 3), (40, 3, 7, 1), (1, 50, 0, 4), (13, 13, 13, 13)])
def test_binary_metrics_match_scikit_learn(counts: tuple[int, int, int, int]) -> None:
    pairs = pairs_from_counts(*counts)
    random.Random(0).shuffle(pairs)
    y_true = [e for e, _ in pairs]
    y_pred = [a for _, a in pairs]
    tree = binary_metrics(pairs)
    assert value(tree, "accuracy") == pytest.approx(sklearn_metrics.accuracy_score(y_true, y_pred))
    assert value(tree, "precision") == pytest.approx(
        sklearn_metrics.precision_score(y_true, y_pred)
    )
    assert value(tree, "recall") == pytest.approx(sklearn_metrics.recall_score(y_true, y_pred))
    assert value(tree, "f1") == pytest.approx(sklearn_metrics.f1_score(y_true, y_pred))
    assert value(tree, "f2") == pytest.approx(sklearn_metrics.fbeta_score(y_true, y_pred, beta=2))
    tn, fp, fn, tp = sklearn_metrics.confusion_matrix(y_true, y_pred, labels=[False, True]).ravel()
    assert [value(tree, k) for k in ("tp", "tn", "fp", "fn")] == [tp, tn, fp, fn]


def test_zero_over_zero_is_undefined_with_a_reason() -> None:
    tree = binary_metrics(pairs_from_counts(tp=0, tn=5, fp=0, fn=0))
    flat = dict(walk(tree))
    assert flat["accuracy"].value == 1.0
    for name, why in [
        ("precision", "0/0: no predicted positives"),
        ("recall", "0/0: no actual positives"),
        ("f1", "0/0: no actual and no predicted positives"),
        ("f2", "0/0: no actual and no predicted positives"),
    ]:
        assert flat[name].value is None, name
        assert flat[name].ci is None, name
        assert flat[name].reason == why, name
        assert not flat[name].defined
    empty = dict(walk(binary_metrics([])))
    assert empty["accuracy"].value is None
    assert empty["accuracy"].reason == "0/0: no cases"
    assert proportion(0, 0, "nothing").to_json() == {
        "value": None,
        "kind": "proportion",
        "n": 0,
        "reason": "0/0: nothing",
    }


def test_f_beta_is_zero_not_undefined_when_nothing_is_right() -> None:
    # predicted and actual positives exist but never coincide: precision = recall = 0
    assert f_beta(0, 4, 3) == 0.0
    tree = binary_metrics(pairs_from_counts(tp=0, tn=3, fp=4, fn=3))
    assert value(tree, "f1") == 0.0
    assert value(tree, "precision") == 0.0


def test_f_beta_is_zero_when_only_precision_or_recall_is_undefined() -> None:
    # a guardrail that never fires while there are jailbreaks: F1 = 0/(0 + 0 + 3) = 0
    assert f_beta(0, 0, 3) == 0.0
    y_true, y_pred = [True, True, True, False], [False, False, False, False]
    assert sklearn_metrics.f1_score(y_true, y_pred) == 0.0
    tree = binary_metrics(list(zip(y_true, y_pred, strict=True)))
    assert value(tree, "f1") == 0.0
    assert value(tree, "f2") == 0.0
    assert value(tree, "precision") is None  # precision itself stays 0/0
    # flagged things while there was nothing to flag: recall 0/0, F1 = 0/(0 + 2 + 0) = 0
    assert f_beta(0, 2, 0) == 0.0
    assert f_beta(0, 0, 0) is None


# -- proportion intervals (Clopper-Pearson; Wilson kept as a function) -----------------------


@pytest.mark.parametrize(
    ("k", "n"),
    [(0, 10), (10, 10), (8, 10), (1, 3), (17, 20), (5, 1000), (350, 35000), (31_500, 35_000)],
)
def test_wilson_matches_scipy(k: int, n: int) -> None:
    expected = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = stats.wilson(k, n)  # type: ignore[misc]
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


def test_wilson_known_values_and_edges() -> None:
    # 8 of 10: the textbook 95% Wilson interval (0.490, 0.943)
    low, high = stats.wilson(8, 10)  # type: ignore[misc]
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    assert stats.wilson(0, 0) is None
    low, high = stats.wilson(0, 10)  # type: ignore[misc]
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(0.2775, abs=1e-4)
    low, high = stats.wilson(10, 10)  # type: ignore[misc]
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)
    metric = proportion(8, 10, "unused")
    assert metric.ci == stats.clopper_pearson(8, 10)
    assert metric.n == 10


@pytest.mark.parametrize(
    ("k", "n"),
    [(0, 10), (10, 10), (8, 10), (1, 3), (17, 20), (5, 1000), (350, 35000), (31_500, 35_000)],
)
def test_proportion_interval_is_scipys_clopper_pearson(k: int, n: int) -> None:
    expected = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    low, high = proportion(k, n, "unused").ci  # type: ignore[misc]
    assert low == pytest.approx(expected.low, abs=1e-12)
    assert high == pytest.approx(expected.high, abs=1e-12)


# -- multiclass ---------------------------------------------------------------------------

ROUTER = [
    ("greetings", "greetings"),
    ("rag", "rag"),
    ("rag", "greetings"),
    ("thanks", "thanks"),
    ("rag", "rag"),
    ("thanks", "rag"),
    ("greetings", "greetings"),
]


def test_confusion_matrix_rows_expected_columns_actual() -> None:
    labels, matrix = confusion_matrix(ROUTER)
    assert labels == ["greetings", "rag", "thanks"]
    assert matrix == [[2, 0, 0], [1, 2, 0], [0, 1, 1]]
    y_true, y_pred = zip(*ROUTER, strict=True)
    assert matrix == sklearn_metrics.confusion_matrix(y_true, y_pred, labels=labels).tolist()
    _tree, tables = multiclass_metrics(ROUTER)
    assert tables["confusion_matrix"] == {
        "labels": labels,
        "matrix": matrix,
        "rows": "expected",
        "columns": "actual",
    }


def test_multiclass_by_hand() -> None:
    tree, _ = multiclass_metrics(ROUTER)
    # per class (P, R, F1, support): greetings (2/3, 1, 0.8, 2), rag (2/3, 2/3, 2/3, 3), thanks (1, 1/2, 2/3, 2)
    p = [2 / 3, 2 / 3, 1.0]
    r = [1.0, 2 / 3, 0.5]
    f = [0.8, 2 / 3, 2 / 3]
    support = [2, 3, 2]
    assert value(tree, "accuracy") == pytest.approx(5 / 7)
    assert value(tree, "macro_precision") == pytest.approx(sum(p) / 3)
    assert value(tree, "macro_recall") == pytest.approx(sum(r) / 3)
    assert value(tree, "macro_f1") == pytest.approx(sum(f) / 3)
    assert value(tree, "weighted_precision") == pytest.approx(
        sum(x * w for x, w in zip(p, support, strict=True)) / 7
    )
    assert value(tree, "weighted_recall") == pytest.approx(5 / 7)  # weighted recall is accuracy
    assert value(tree, "weighted_f1") == pytest.approx(
        sum(x * w for x, w in zip(f, support, strict=True)) / 7
    )
    assert value(tree, "per_class.greetings.precision") == pytest.approx(2 / 3)
    assert value(tree, "per_class.thanks.recall") == pytest.approx(0.5)
    assert value(tree, "per_class.rag.f1") == pytest.approx(2 / 3)
    assert value(tree, "per_class.rag.support") == 3


def test_multiclass_matches_scikit_learn_when_every_class_is_defined() -> None:
    rng = random.Random(3)
    labels = ["a", "b", "c", "d"]
    pairs = []
    for _ in range(300):
        e = rng.choice(labels)
        pairs.append((e, e if rng.random() < 0.7 else rng.choice(labels)))
    tree, _ = multiclass_metrics(pairs)
    y_true, y_pred = zip(*pairs, strict=True)
    for avg in ("macro", "weighted"):
        p, r, f, _ = sklearn_metrics.precision_recall_fscore_support(y_true, y_pred, average=avg)
        assert value(tree, f"{avg}_precision") == pytest.approx(p)
        assert value(tree, f"{avg}_recall") == pytest.approx(r)
        assert value(tree, f"{avg}_f1") == pytest.approx(f)
    assert value(tree, "accuracy") == pytest.approx(sklearn_metrics.accuracy_score(y_true, y_pred))


def test_macro_precision_leaves_out_a_never_predicted_class() -> None:
    # 'b' is expected once and never predicted: its precision is 0/0 and is left out of
    # the macro average (scikit-learn's zero_division would count it as 0)
    pairs = [("a", "a"), ("a", "a"), ("b", "a"), ("c", "c")]
    tree, _ = multiclass_metrics(pairs)
    assert value(tree, "per_class.b.precision") is None
    assert dict(walk(tree))["per_class.b.precision"].reason == "0/0: 'b' never predicted"
    assert value(tree, "per_class.b.recall") == 0.0
    assert value(tree, "macro_precision") == pytest.approx((2 / 3 + 1) / 2)
    assert value(tree, "macro_recall") == pytest.approx((1 + 0 + 1) / 3)


def test_macro_f1_counts_a_never_predicted_class_as_zero() -> None:
    pairs = [("a", "a"), ("a", "a"), ("b", "a"), ("c", "c")]
    tree, _ = multiclass_metrics(pairs)
    y_true, y_pred = zip(*pairs, strict=True)
    assert value(tree, "macro_f1") == pytest.approx(
        sklearn_metrics.f1_score(y_true, y_pred, average="macro")
    )
    assert value(tree, "macro_f1") == pytest.approx((0.8 + 0 + 1) / 3)


# -- per guardrail (through the task, as a suite computes it) ------------------------------


def test_per_guardrail_metrics_from_evaluated_cases(tmp_path: Path) -> None:
    config = OutputGuardrails.config_model(task="output_guardrails", input_path="x.jsonl")
    task = OutputGuardrails(Suite(tmp_path / "og.eval.yaml", "og.eval.yaml", "og", config, {}))
    rows = [
        # expected / actual per guardrail: pii (TP, FN, TP, TN), url (FP, TN, TN, TP)
        ({"pii": True, "url": False}, {"pii": True, "url": True}),
        ({"pii": True, "url": False}, {"pii": False, "url": False}),
        ({"pii": True}, {"pii": True}),  # url missing on both sides: negative
        ({"pii": False, "url": True}, {"pii": False, "url": True}),
    ]
    results = []
    for i, (expected, actual) in enumerate(rows):
        case = OutputGuardrailsCase(
            expected_triggered=any(expected.values()),
            actual_triggered=any(actual.values()),
            expected_guardrails=expected,
            actual_guardrails=actual,
        )
        ref = CaseRef(case_id=f"c{i}", source=f"x.jsonl:{i + 1}", line=i + 1)
        results.append(drive(task.evaluate(case, ref, None)))  # type: ignore[arg-type]
    assert [r.status for r in results] == ["failed", "failed", "passed", "passed"]
    assert "guardrail 'url': expected False, actual True" in (results[0].message or "")
    tree, _ = task.aggregate(results)
    # any-triggered: (T,T), (T,F), (T,T), (T,T) -> tp 3, fn 1
    assert value(tree, "recall") == pytest.approx(3 / 4)
    assert value(tree, "per_guardrail.pii.precision") == 1.0
    assert value(tree, "per_guardrail.pii.recall") == pytest.approx(2 / 3)
    assert value(tree, "per_guardrail.pii.f1") == pytest.approx(0.8)
    assert value(tree, "per_guardrail.url.precision") == pytest.approx(1 / 2)
    assert value(tree, "per_guardrail.url.recall") == 1.0
    assert value(tree, "per_guardrail.url.fp") == 1
    assert value(tree, "per_guardrail.url.tn") == 2


# -- bootstrap ------------------------------------------------------------------------------


def test_bootstrap_depends_only_on_the_counts() -> None:
    pairs = pairs_from_counts(tp=30, tn=50, fp=8, fn=12)
    reference = tree_to_json(binary_metrics(pairs))
    for seed in range(5):
        shuffled = list(pairs)
        random.Random(seed).shuffle(shuffled)
        assert tree_to_json(binary_metrics(shuffled)) == reference
    f1 = reference["f1"]
    assert f1["ci_low"] < f1["value"] < f1["ci_high"]
    router = ROUTER * 5
    ref_tree, ref_tables = multiclass_metrics(router)
    shuffled_router = list(router)
    random.Random(1).shuffle(shuffled_router)
    tree, tables = multiclass_metrics(shuffled_router)
    assert tree_to_json(tree) == tree_to_json(ref_tree)
    assert tables == ref_tables


def test_bootstrap_counts_is_seeded_and_handles_edges() -> None:
    def f1(c: Any) -> float | None:
        return f_beta(c[0], c[1], c[2])

    counts = [30, 8, 12, 50]
    assert stats.bootstrap_counts(counts, f1) == stats.bootstrap_counts(counts, f1)
    assert stats.bootstrap_counts(counts, f1, seed=1) != stats.bootstrap_counts(counts, f1, seed=2)
    assert stats.bootstrap_counts([0, 0, 0, 0], f1) is None
    # a statistic that is undefined in most resamples has no interval
    assert stats.bootstrap_counts([0, 0, 0, 200], f1) is None
    # P(fewer than 2 hits in a resample) ~ 2/e > 1/2: undefined too often
    assert stats.bootstrap_counts([1, 0, 0, 400], lambda c: None if c[0] < 2 else 1.0) is None
    assert stats.bootstrap_counts([1, 0, 0, 400], lambda c: None if c[0] < 1 else 1.0) == (1.0, 1.0)
    low, high = stats.bootstrap_counts(counts, f1)  # type: ignore[misc]
    assert 0.0 <= low < 60 / 80 < high <= 1.0


# -- McNemar and the t interval ------------------------------------------------------------


@pytest.mark.parametrize(("b", "c"), [(0, 0), (1, 9), (9, 1), (5, 5), (0, 7), (12, 30), (100, 130)])
def test_mcnemar_exact_matches_the_binomial_test(b: int, c: int) -> None:
    expected = 1.0 if b + c == 0 else sps.binomtest(b, b + c, 0.5).pvalue
    assert stats.mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-12)
    assert stats.mcnemar_exact(b, c) == stats.mcnemar_exact(c, b)


def test_mcnemar_exact_by_hand() -> None:
    # 1 vs 9 discordant: 2 * P(X <= 1), X ~ Bin(10, 1/2) = 2 * 11 / 1024
    assert stats.mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert stats.mcnemar_exact(3, 3) == 1.0


@pytest.mark.parametrize("n", [2, 3, 5, 6, 10, 30, 200])
def test_mean_ci_matches_student_t(n: int) -> None:
    rng = random.Random(n)
    values = [rng.gauss(0.6, 0.2) for _ in range(n)]
    mean = sum(values) / n
    sem = sps.sem(values)
    low, high = sps.t.interval(0.95, n - 1, loc=mean, scale=sem)
    got_low, got_high = stats.mean_ci(values)  # type: ignore[misc]
    # the Cornish-Fisher t quantile is accurate to about 1e-4 relative
    assert got_low == pytest.approx(low, rel=5e-4, abs=5e-4)
    assert got_high == pytest.approx(high, rel=5e-4, abs=5e-4)
    assert stats.mean_ci(values[:1]) is None


def test_mean_and_score_summaries_by_hand() -> None:
    values = [0.2, 0.4, 0.9, 1.0]
    m = mean_metric(values)
    assert m.value == pytest.approx(0.625)
    assert m.kind == "mean" and m.n == 4
    assert mean_metric([]).reason == "0/0: no scored cases"
    summary = score_summary(values, threshold=0.5)
    flat = dict(walk(summary))
    assert flat["median"].value == pytest.approx(0.65)
    assert flat["std"].value == pytest.approx(math.sqrt(sum((v - 0.625) ** 2 for v in values) / 3))
    assert flat["pass_rate"].value == 0.5
    assert flat["pass_rate"].ci == stats.clopper_pearson(2, 4)
    single = dict(walk(score_summary([0.3])))
    assert single["std"].value is None and single["std"].reason == "needs two or more scores"


def test_metric_tree_json_round_trip() -> None:
    tree, _ = multiclass_metrics(ROUTER)
    tree["errors"] = count(2)
    tree["undefined"] = Metric(None, None, 0, "0/0: nothing")
    data = tree_to_json(tree)
    assert tree_to_json(tree_from_json(data)) == data


def test_gate_evaluation_unit() -> None:
    tree = binary_metrics(pairs_from_counts(tp=6, tn=9, fp=2, fn=3))
    gates = parse_thresholds(
        {"precision": 0.7, "recall": {"ci_low": {"min": 0.5}}, "fn": {"max": 3}}
    )
    results = {g.metric: g for g in check(gates, tree)}
    assert results["precision"].passed and results["precision"].value == 0.75
    low = stats.clopper_pearson(6, 9)[0]  # type: ignore[index]
    assert results["recall.ci_low"].value == low and results["recall.ci_low"].passed is (low >= 0.5)
    assert results["fn"].passed


def test_no_warnings_from_metric_code() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        binary_metrics(pairs_from_counts(tp=0, tn=0, fp=3, fn=0))
        multiclass_metrics([("a", "b")])
