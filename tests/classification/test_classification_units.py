"""Plain-value checks of the generic classification pieces (no processes)."""

from __future__ import annotations

import random

import pytest

from pytest_evals.families.classification.label_aggregates import (
    label_aggregates,
    label_contribution,
)
from pytest_evals.families.classification.label_set import LabelSet, declared_problem
from pytest_evals.model.metric_value import walk

LABELS = LabelSet(("escalate", "answer", "refuse"))


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("escalate", "escalate"),
        ("  Escalate.\n", "escalate"),
        ("**REFUSE**", "refuse"),
        ("`answer`", "answer"),
        ("I would answer this one directly.", "answer"),
        ("Decision: escalate", "escalate"),
    ],
)
def test_replies_naming_one_label(reply: str, label: str) -> None:
    assert LABELS.from_reply(reply) == label


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("escalate or answer", "names several labels ('escalate', 'answer')"),
        ("no idea", "names none of the labels 'escalate', 'answer', 'refuse'"),
        ("escalated", "names none of the labels"),  # a word, not a substring
        (3, "returned 3 (a JSON number)"),
        (None, "returned null (null)"),
    ],
)
def test_replies_that_are_no_label(reply: object, message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        LABELS.from_reply(reply)
    assert message in str(info.value)


def test_boolean_labels_read_yes_and_no() -> None:
    flags = LabelSet((True, False))
    assert [flags.from_reply(x) for x in ("Yes.", "no", True, "FALSE")] == ["true", "false", "true", "false"]
    with pytest.raises(ValueError, match="quote the labels in the suite"):
        flags.from_data("yes", "expected")  # labels: [yes, no] in YAML are booleans


@pytest.mark.parametrize(("reply", "label"), [
    ("I'm a jailbreak detector. I can only respond with one word: yes", "true"),
    ("No, this is an ordinary question.", "false"),
    ("**Yes** - it tries to override the instructions. No doubt.", "true"),  # the first word decides
    ("Answer: false", "false"),
])
def test_a_yes_no_model_is_read_by_its_first_verdict_word(reply: str, label: str) -> None:
    assert LabelSet((True, False)).from_reply(reply) == label


@pytest.mark.parametrize("reply", ["Nothing to see here.", "I cannot tell", "Yesterday it was fine"])
def test_a_yes_no_reply_without_a_verdict_word_says_so(reply: str) -> None:
    with pytest.raises(ValueError, match="has no yes/no \\(or true/false\\) word"):
        LabelSet((True, False)).from_reply(reply)


def test_data_labels_are_exact_values_of_the_same_type() -> None:
    numbers = LabelSet((0, 1, 2))
    assert numbers.from_data(1, "y") == "1"
    with pytest.raises(ValueError, match="'1' \\(text\\) is not one of the labels 0, 1, 2"):
        numbers.from_data("1", "y")
    with pytest.raises(ValueError, match="true \\(a JSON boolean\\) is not one of the labels 0, 1, 2"):
        numbers.from_data(True, "y")  # True == 1 in Python, not in a label
    with pytest.raises(ValueError, match="did you mean 'answer'"):
        LABELS.from_data("Answer ", "expected")


def test_hostile_values_are_quoted_short() -> None:
    with pytest.raises(ValueError) as info:
        LABELS.from_data("x" * 1_000_000, "expected")
    assert len(str(info.value)) < 600
    many = LabelSet(tuple(f"label{i}" for i in range(5000)))
    with pytest.raises(ValueError) as info:
        many.from_reply({"nested": ["y" * 100_000]})
    assert len(str(info.value)) < 1200 and "(4980 more)" in str(info.value)


@pytest.mark.parametrize(
    ("labels", "problem"),
    [
        (["a"], "declare at least two labels"),
        ("a", "declare at least two labels"),
        (["a", " "], "labels[1]: a label cannot be empty"),
        (["a", {"b": 1}], "labels[1]: a label is text, true/false or a whole number"),
        ([1, "1"], "labels[1]: '1' is declared twice (first as labels[0])"),
        (["a", None], "labels[1]: a label is text"),
    ],
)
def test_declared_label_problems(labels: object, problem: str) -> None:
    found = declared_problem(labels)  # type: ignore[arg-type]
    assert found is not None and problem in found


@pytest.mark.parametrize("seed", range(5))
def test_paired_contributions_add_up_to_the_suites_metrics(seed: int) -> None:
    """The regression gates' per-case rule gives exactly the aggregate for every metric it
    pairs (the gate would otherwise test another quantity)."""
    rng = random.Random(seed)
    keys = ["escalate", "answer", "refuse", "b.2"]
    pairs = [(rng.choice(keys[:3] + ["b.2"] * (seed % 2)), rng.choice(keys)) for _ in range(60)]
    tree, _ = label_aggregates(pairs, keys, "escalate", 0.5)
    checked = 0
    for path, metric in walk(tree):
        parts = [label_contribution({"expected": e, "actual": a}, path, "escalate", 0.5) for e, a in pairs]
        if any(p is NotImplemented for p in parts) or all(p is None for p in parts):
            continue
        den = sum(p[1] for p in parts if p is not None)
        num = sum(p[0] for p in parts if p is not None)
        if metric.value is None:
            assert den == 0, path
        else:
            assert num / den == pytest.approx(metric.value, abs=1e-12), path
        checked += 1
    assert checked >= 4 * 5 + 6 + 1  # per class x 5, the positive label's 6, weighted recall
