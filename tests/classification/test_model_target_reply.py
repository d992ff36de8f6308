"""A model target's reply for GOV.UK's Yes/No guardrail tasks is read as a sentence: its
first whole verdict word decides; a value a callable returned must be a verdict itself."""

from __future__ import annotations

import pytest

from pytest_evals.families.classification.task import reply_bool
from pytest_evals.model.errors import TargetError


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Yes.", True),
        ("No, I'm sorry. I'll", False),
        ("I'm a jailbreak detector. I can only respond with one word: yes", True),
        ("True: it asks for the system prompt", True),
        ("Nothing here is an attack, so no", False),  # "Nothing" is not "no"
    ],
)
def test_a_models_sentence_gives_its_first_verdict_word(reply: str, verdict: bool) -> None:
    assert reply_bool({"text": reply}, "actual_outcome", "target model m") is verdict


def test_a_reply_without_a_verdict_word_is_the_targets_error_quoting_it() -> None:
    with pytest.raises(TargetError, match=r"target model m replied 'To renew your passport online, go'"):
        reply_bool({"text": "To renew your passport online, go"}, "actual_outcome", "target model m")


def test_a_returned_field_must_be_a_verdict_itself() -> None:
    with pytest.raises(TargetError, match="expected true/false, got 'no, perhaps'"):
        reply_bool({"actual_outcome": "no, perhaps"}, "actual_outcome", "target f")
    assert reply_bool({"actual_outcome": "no"}, "actual_outcome", "target f") is False
    assert reply_bool(True, "actual_outcome", "target f") is True
