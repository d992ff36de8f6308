"""Every aggregate of ``task: classification`` against scikit-learn, plain and under -n 2.

The figures are computed here, independently, from the case file the suite reads:
accuracy_score, precision_recall_fscore_support (per class, macro, weighted; undefined
classes left out with ``zero_division=np.nan``, as the suite's averages do),
confusion_matrix and DummyClassifier for the majority baseline.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier
from sklearn.metrics import (
    accuracy_score,
    confusion_matrix,
    f1_score,
    fbeta_score,
    precision_recall_fscore_support,
)

from .support_data import LABELS, leaf, summary, support_cases, write_cases, write_suite

WORKERS = [pytest.param([], id="plain"), pytest.param(["-n", "2"], id="xdist")]


def close(got: dict[str, Any], want: float, name: str) -> None:
    """The suite's metric equals scikit-learn's (nan: undefined, with a reason), and a
    defined one has an interval containing it."""
    if math.isnan(want):
        assert got["value"] is None and got.get("reason"), (name, got)
        return
    assert got["value"] == pytest.approx(want, abs=1e-12), name
    if got["kind"] != "count" and "baseline" not in name:
        assert got["ci_low"] <= got["value"] <= got["ci_high"], (name, got)


def prf(y_true: list[str], y_pred: list[str], labels: list[str], beta: float, average: str | None) -> Any:
    return precision_recall_fscore_support(y_true, y_pred, labels=labels, beta=beta, average=average,
                                           zero_division=np.nan)


def check_multiclass(suite: dict[str, Any], y_true: list[str], y_pred: list[str], labels: list[str],
                     beta: float | None, positive: str | None) -> None:
    m = suite["metrics"]
    close(m["accuracy"], accuracy_score(y_true, y_pred), "accuracy")
    for b, name in [(1.0, "f1"), (2.0, "f2")] + ([(beta, "fbeta")] if beta else []):
        p, r, f, support = prf(y_true, y_pred, labels, b, None)
        for i, label in enumerate(labels):
            close(leaf(m, f"per_class.{label}.precision"), p[i], f"{label} precision")
            close(leaf(m, f"per_class.{label}.recall"), r[i], f"{label} recall")
            close(leaf(m, f"per_class.{label}.{name}"), f[i], f"{label} {name}")
            assert leaf(m, f"per_class.{label}.support")["value"] == support[i]
        for average in ("macro", "weighted"):
            p_avg, r_avg, f_avg, _ = prf(y_true, y_pred, labels, b, average)
            close(m[f"{average}_precision"], p_avg, f"{average} precision")
            close(m[f"{average}_recall"], r_avg, f"{average} recall")
            close(m[f"{average}_{name}"], f_avg, f"{average} {name}")
    table = suite["tables"]["confusion_matrix"]
    assert table["labels"] == labels  # the declared order, a label never seen included
    assert table["matrix"] == confusion_matrix(y_true, y_pred, labels=labels).tolist()
    assert (table["rows"], table["columns"]) == ("expected", "actual")
    # Majority baseline: scikit-learn's most_frequent dummy on the same cases.
    dummy = DummyClassifier(strategy="most_frequent").fit([[0]] * len(y_true), y_true)
    guessed = list(dummy.predict([[0]] * len(y_true)))
    close(m["baselines"]["majority"]["accuracy"], accuracy_score(y_true, guessed), "majority accuracy")
    assert m["baselines"]["majority"]["accuracy"]["ci_low"] is not None
    close(m["baselines"]["majority"]["macro_f1"],
          f1_score(y_true, guessed, labels=labels, average="macro", zero_division=np.nan), "baseline majority macro f1")
    close(m["baselines"]["majority"]["weighted_f1"],
          f1_score(y_true, guessed, labels=labels, average="weighted", zero_division=np.nan), "baseline majority weighted f1")
    assert suite["tables"]["baselines"]["majority"] == guessed[0]
    if positive:
        close(m["baselines"]["majority"]["f1"], f1_score([y == positive for y in y_true],
                                                         [y == positive for y in guessed], zero_division=np.nan),
              "baseline majority f1")


def check_positive(suite: dict[str, Any], y_true: list[str], y_pred: list[str], positive: str,
                   beta: float | None) -> None:
    """The positive label's scores: scikit-learn on the one-against-the-rest labels."""
    m = suite["metrics"]
    t = [y == positive for y in y_true]
    p = [y == positive for y in y_pred]
    tn, fp, fn, tp = confusion_matrix(t, p, labels=[False, True]).ravel()
    assert [m[k]["value"] for k in ("tp", "tn", "fp", "fn")] == [tp, tn, fp, fn]
    for b, name in [(1.0, "f1"), (2.0, "f2")] + ([(beta, "fbeta")] if beta else []):
        prec, rec, f, _ = precision_recall_fscore_support(t, p, beta=b, average="binary", pos_label=True,
                                                          zero_division=np.nan)
        close(m["precision"], prec, "precision")
        close(m["recall"], rec, "recall")
        close(m[name], f, name)
    spec = precision_recall_fscore_support(t, p, average="binary", pos_label=False, zero_division=np.nan)[1]
    close(m["specificity"], spec, "specificity")
    always = [True] * len(t)
    close(m["baselines"]["always_positive"]["accuracy"], accuracy_score(t, always), "baseline always accuracy")
    close(m["baselines"]["always_positive"]["f1"], f1_score(t, always, zero_division=np.nan), "baseline always f1")
    always_p, always_r, _, _ = precision_recall_fscore_support(t, always, average="binary", zero_division=np.nan)
    close(m["baselines"]["always_positive"]["precision"], always_p, "always precision")
    close(m["baselines"]["always_positive"]["recall"], always_r, "always recall")


@pytest.mark.parametrize("workers", WORKERS)
def test_multiclass_support_bot_matches_scikit_learn(pytester: pytest.Pytester, workers: list[str]) -> None:
    # 'refuse' is never the bot's decision: its precision is 0/0 (undefined, left out of
    # the averages); a fourth declared label, 'billing', never occurs at all.
    rows = support_cases(90, never="refuse")
    labels = [*LABELS, "billing"]
    write_cases(pytester.path, "data/escalation.jsonl", rows)
    write_suite(pytester.path, "support", input_path="data/escalation.jsonl", labels=labels,
                positive_label="escalate", beta=0.5, thresholds={"accuracy": {"min": 0.5}})
    result = pytester.runpytest("--evals-json", "summary.json", "-p", "no:cacheprovider", *workers)
    assert result.ret == 0, result.stdout.str()
    (suite,) = summary(pytester.path)["suites"]
    y_true = [r["expected"] for r in rows]
    y_pred = [r["actual"] for r in rows]
    assert "refuse" not in y_pred and "billing" not in y_true + y_pred
    check_multiclass(suite, y_true, y_pred, labels, 0.5, "escalate")
    check_positive(suite, y_true, y_pred, "escalate", 0.5)
    assert leaf(suite["metrics"], "per_class.refuse.precision")["reason"] == "0/0: 'refuse' never predicted"
    assert suite["cases"]["passed"] == sum(t == p for t, p in zip(y_true, y_pred, strict=True))
    # The F-beta the suite asked for, by name and by scikit-learn's own function.
    assert suite["metrics"]["fbeta"]["value"] == pytest.approx(
        fbeta_score([y == "escalate" for y in y_true], [y == "escalate" for y in y_pred], beta=0.5))


@pytest.mark.parametrize("workers", WORKERS)
def test_binary_with_own_field_names_matches_scikit_learn(pytester: pytest.Pytester, workers: list[str]) -> None:
    rows = [
        {"message": r["question"], "gold": "escalate" if r["expected"] == "escalate" else "self_serve",
         "bot": "escalate" if r["actual"] == "escalate" else "self_serve"}
        for r in support_cases(70, seed=3, miss_rate=0.3)
    ]
    write_cases(pytester.path, "data/binary.jsonl", rows)
    write_suite(pytester.path, "handoff", input_path="data/binary.jsonl", labels=["escalate", "self_serve"],
                positive_label="escalate", fields={"expected": "gold", "actual": "bot", "input": "message"},
                thresholds={"f1": {"min": 0.3}})
    result = pytester.runpytest("--evals-json", "summary.json", "-p", "no:cacheprovider", *workers)
    assert result.ret == 0, result.stdout.str()
    (suite,) = summary(pytester.path)["suites"]
    y_true = [r["gold"] for r in rows]
    y_pred = [r["bot"] for r in rows]
    check_multiclass(suite, y_true, y_pred, ["escalate", "self_serve"], None, "escalate")
    check_positive(suite, y_true, y_pred, "escalate", None)
    assert "fbeta" not in suite["metrics"]  # only when the suite gives a beta


@pytest.mark.parametrize("workers", WORKERS)
def test_boolean_labels_match_scikit_learn(pytester: pytest.Pytester, workers: list[str]) -> None:
    # JSON booleans as labels: true is the positive label without being named.
    # true is also the majority: the majority baseline's F1 is the positive label's.
    pattern = [(True, True)] * 12 + [(True, False)] * 4 + [(False, False)] * 10 + [(False, True)] * 4
    rows = [{"id": f"b{i}", "question": f"message {i}", "needs_human": e, "bot_escalated": a}
            for i, (e, a) in enumerate(pattern)]
    write_cases(pytester.path, "data/flags.jsonl", rows)
    write_suite(pytester.path, "flags", input_path="data/flags.jsonl", labels=[True, False],
                expected_field="needs_human", actual_field="bot_escalated", thresholds={"recall": {"min": 0.7}})
    result = pytester.runpytest("--evals-json", "summary.json", "-p", "no:cacheprovider", *workers)
    assert result.ret == 0, result.stdout.str()
    (suite,) = summary(pytester.path)["suites"]
    y_true = [json_key(e) for e, _ in pattern]
    y_pred = [json_key(a) for _, a in pattern]
    check_multiclass(suite, y_true, y_pred, ["true", "false"], None, "true")
    check_positive(suite, y_true, y_pred, "true", None)
    result.stdout.fnmatch_lines(["*false negative: expected true, got false*"])


def json_key(value: bool) -> str:
    return "true" if value else "false"
