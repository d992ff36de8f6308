"""Prompts: the seed templates, the official instruction files, the knowledge variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evals.families.halueval.items import HaluEvalItem, parse_dialogue
from pytest_evals.families.halueval.prompts import SEED_TEMPLATES, PromptSet
from pytest_evals.model.errors import CaseInputError

QA = HaluEvalItem(
    id="qa-1", task_type="qa", question="Who wrote {it}?", knowledge="K facts.",
    right_answer="A", hallucinated_answer="B",
)
DIALOGUE = HaluEvalItem(
    id="dialogue-1", task_type="dialogue", question="Who directed it?", knowledge="Nolan directed it.",
    dialogue_history=parse_dialogue("[Human]: Seen Inception? [Assistant]: Yes. [Human]: Who directed it?"),
    right_answer="Nolan.", hallucinated_answer="Spielberg.",
)
SUMMARY = HaluEvalItem(
    id="summarization-1", task_type="summarization", context="word " * 1000,
    right_answer="S", hallucinated_answer="T",
)
GENERAL = HaluEvalItem(id="general-1", task_type="general", question="Q", response="R", label="no")


def test_seed_qa_prompt_is_the_seed_template_verbatim() -> None:
    messages = PromptSet.load("seed", False, Path("."), ["qa"]).messages(QA, "An answer")
    assert messages[0]["role"] == "system" and '"Yes"' in messages[0]["content"]
    assert messages[1] == {
        "role": "user",
        "content": SEED_TEMPLATES["qa"].replace("{question}", "Who wrote {it}?").replace("{answer}", "An answer"),
    }
    assert messages[1]["content"].startswith("I want you to act as an answer judge.")
    assert messages[1]["content"].endswith("#Question#: Who wrote {it}?\n#Answer#: An answer\n#Your Judgement#: ")
    assert "K facts" not in messages[1]["content"]  # the official setting: no knowledge


def test_seed_dialogue_summary_general() -> None:
    ps = PromptSet.load("seed", False, Path("."), ["dialogue", "summarization", "general"])
    d = ps.messages(DIALOGUE, "Nolan.")[1]["content"]
    assert "#Dialogue History#: [Human]: Seen Inception? [Assistant]: Yes. [Human]: Who directed it?\n#Response#: Nolan.\n" in d
    assert "1. Replacing a true entity with a highly similar entity" in d
    s = ps.messages(SUMMARY, "S")[1]["content"]
    assert s.endswith("#Summary#: S\n#Your Judgement#: ")
    assert len(s) > 5000
    g = ps.messages(GENERAL, "R")[1]["content"]
    assert "based on world knowledge.\n\n#Question#: Q\n#Answer#: R\n" in g


def test_report_copy_truncates_long_documents_and_says_so() -> None:
    ps = PromptSet.load("seed", False, Path("."), ["summarization"])
    short = ps.messages(SUMMARY, "S", document_limit=2000)[1]["content"]
    assert "[... 3,000 more characters of the document were sent to the judge" in short
    assert short.endswith("#Summary#: S\n#Your Judgement#: ")
    assert len(short) < 3000


def test_with_knowledge_adds_the_knowledge_line_before_the_item() -> None:
    ps = PromptSet.load("seed", True, Path("."), ["qa", "dialogue", "general"])
    qa = ps.messages(QA, "A")[1]["content"]
    assert "intention.\n\n#Knowledge#: K facts.\n#Question#: Who wrote {it}?" in qa
    d = ps.messages(DIALOGUE, "x")[1]["content"]
    assert "#Knowledge#: Nolan directed it.\n#Dialogue History#:" in d
    assert "#Knowledge#" not in ps.messages(GENERAL, "R")[1]["content"]


def test_official_prompts_load_the_instruction_files(data_dir: Path) -> None:
    ps = PromptSet.load("official", False, data_dir, ["qa", "dialogue", "summarization", "general"])
    instruction = (data_dir / "prompts" / "qa_evaluation_instruction.txt").read_text(encoding="utf-8")
    qa = ps.messages(QA, "A")[1]["content"]
    assert qa.startswith(instruction.rstrip("\n"))
    assert qa.endswith("\n\n#Question#: Who wrote {it}?\n#Answer#: A\n#Your Judgement#: ")
    # the official examples contain the same markers; the knowledge goes before the item's
    ps_k = PromptSet.load("official", True, data_dir, ["qa"])
    qa_k = ps_k.messages(QA, "A")[1]["content"]
    assert qa_k.endswith("\n\n#Knowledge#: K facts.\n#Question#: Who wrote {it}?\n#Answer#: A\n#Your Judgement#: ")
    # no official instruction exists for general: the seed template is used
    assert ps.messages(GENERAL, "R")[1]["content"] == SEED_TEMPLATES["general"].format(question="Q", answer="R")


def test_official_prompts_missing_say_how_to_get_them(tmp_path: Path) -> None:
    with pytest.raises(CaseInputError, match=r"prompts: official needs .*qa_evaluation_instruction.txt; get the official files with `pytest-evals halueval download"):
        PromptSet.load("official", False, tmp_path, ["qa"])
