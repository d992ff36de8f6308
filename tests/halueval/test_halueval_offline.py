"""The offline baseline judges: scores by hand, replies parsed like a model's."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from pytest_evals.families.halueval.items import HaluEvalItem, parse_dialogue
from pytest_evals.families.halueval.offline import (
    THRESHOLDS,
    content_words,
    lexical_support,
    offline_verdict,
    passages,
)
from pytest_evals.families.halueval.parsing import parse_judgement

QA = HaluEvalItem(
    id="qa-1", task_type="qa", question="Which magazine was started first?",
    knowledge="Arthur's Magazine (1844-1846) was an American literary periodical.",
    right_answer="Arthur's Magazine", hallucinated_answer="First for Women was started first.",
)


def test_content_words_drop_function_words() -> None:
    assert content_words("The answer is No, it was Arthur's.") == ["answer", "arthur", "s"]


def test_lexical_support_by_hand() -> None:
    assert lexical_support("Arthur's Magazine", ["Arthur's Magazine (1844-1846)"]) == 1.0
    # "first", "women", "started", "first": "first" and "started" are in the question
    src = [f"{QA.question} {QA.knowledge}"]
    assert lexical_support("First for Women was started first.", src) == pytest.approx(3 / 4)
    assert lexical_support("the and of", ["x"]) == 1.0  # nothing to check


def test_lexical_verdicts_and_reply_parse() -> None:
    right = asyncio.run(offline_verdict(QA, QA.right_answer or ""))
    wrong = asyncio.run(offline_verdict(QA, QA.hallucinated_answer or ""))
    assert (right.score, right.hallucinated) == (1.0, False)
    assert wrong.hallucinated and wrong.threshold == THRESHOLDS["lexical"]["qa"]
    assert wrong.reply.startswith("Yes (offline baseline: lexical grounding")
    assert parse_judgement(wrong.reply).predicted == "yes"
    assert parse_judgement(right.reply).predicted == "no"
    assert not parse_judgement(right.reply).ambiguous


def test_dialogue_grounding_uses_knowledge_and_history() -> None:
    item = HaluEvalItem(
        id="d", task_type="dialogue", knowledge="Nolan directed Inception.",
        dialogue_history=parse_dialogue("[Human]: Who made Inception? [Assistant]: A famous director."),
        question="q", right_answer="Nolan made it.", hallucinated_answer="Spielberg made it.",
    )
    assert asyncio.run(offline_verdict(item, "Nolan made it famous.")).score == 1.0
    assert asyncio.run(offline_verdict(item, "Spielberg made it.")).score == pytest.approx(1 / 2)


class TinyEncoder:
    """A deterministic bag-of-letters encoder: enough to check which passage is used."""

    name = "tiny"

    async def aencode(self, texts: list[str]) -> Any:
        rows = []
        for t in texts:
            v = np.zeros(26)
            for ch in t.lower():
                if "a" <= ch <= "z":
                    v[ord(ch) - 97] += 1
            rows.append(v / (np.linalg.norm(v) or 1.0))
        return np.array(rows)


def test_embedding_rule_takes_the_best_passage() -> None:
    doc = " ".join(["zzz"] * 120) + " " + " ".join(["abc"] * 10)  # passages of 120 words
    assert len(passages(doc)) == 2
    item = HaluEvalItem(id="s", task_type="summarization", context=doc, right_answer="abc", hallucinated_answer="q")
    v = asyncio.run(offline_verdict(item, "abc abc", "embedding", TinyEncoder()))
    assert v.score == pytest.approx(1.0)  # the second passage matches exactly
    assert v.reply.startswith("No (offline baseline: embedding similarity")
    with pytest.raises(ValueError, match="needs an encoder"):
        asyncio.run(offline_verdict(item, "abc", "embedding"))
