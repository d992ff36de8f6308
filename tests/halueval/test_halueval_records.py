"""Item model, dialogue parsing and the errors bad records produce (file, line, field)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from pytest_evals.families.halueval.index import file_refs, read_record
from pytest_evals.families.halueval.items import HaluEvalItem, Turn, parse_dialogue, render_dialogue
from pytest_evals.families.halueval.records import to_item
from pytest_evals.model.errors import CaseInputError


def test_dialogue_history_is_parsed_into_turns() -> None:
    turns = parse_dialogue(
        "[Human]: Do you like Iron Man [Assistant]: Sure do! Robert Downey Jr. is a favorite. "
        "[Human]: Yes i like him too. "
    )
    assert turns == [
        Turn(role="user", content="Do you like Iron Man"),
        Turn(role="assistant", content="Sure do! Robert Downey Jr. is a favorite."),
        Turn(role="user", content="Yes i like him too."),
    ]
    assert render_dialogue(turns) == (
        "[Human]: Do you like Iron Man [Assistant]: Sure do! Robert Downey Jr. is a favorite. "
        "[Human]: Yes i like him too."
    )


def test_dialogue_keeps_non_alternating_order() -> None:
    turns = parse_dialogue("[Assistant]: Hello. [Assistant]: Anyone? [Human]: Hi")
    assert [t.role for t in turns] == ["assistant", "assistant", "user"]


@pytest.mark.parametrize(
    ("history", "problem"),
    [
        ("no markers at all", "text before the first"),
        ("", "no [Human]: or [Assistant]: turns"),
        ("[Human]: hi [Assistant]:   ", "empty [Assistant] turn"),
    ],
)
def test_bad_dialogue_history(history: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_dialogue(history)


def write_jsonl(path: Path, records: list[object], newline: str = "\n") -> Path:
    path.write_bytes(
        "".join(
            (r if isinstance(r, str) else json.dumps(r)) + newline for r in records
        ).encode("utf-8")
    )
    return path


def load_all(path: Path, task: str) -> list[HaluEvalItem]:
    return [to_item(read_record(r), task, r.case_id, r.source) for r in file_refs(path, task)]


GOOD_QA = {"knowledge": "k", "question": "q?", "right_answer": "a", "hallucinated_answer": "b"}


@pytest.mark.parametrize(
    ("task", "record", "field", "problem"),
    [
        ("qa", {**GOOD_QA, "right_answer": ""}, "right_answer", "must be a non-empty string"),
        ("qa", {k: v for k, v in GOOD_QA.items() if k != "knowledge"}, "knowledge", "missing"),
        ("qa", {**GOOD_QA, "question": 3}, "question", "expected a string, got int"),
        (
            "dialogue",
            {"knowledge": "k", "dialogue_history": "hello", "right_response": "a", "hallucinated_response": "b"},
            "dialogue_history",
            "text before the first",
        ),
        (
            "dialogue",
            {"knowledge": "k", "dialogue_history": "[Human]: hi", "right_response": "a"},
            "hallucinated_response",
            "missing",
        ),
        ("summarization", {"document": "  ", "right_summary": "a", "hallucinated_summary": "b"}, "document", "non-empty"),
        (
            "general",
            {"ID": "1", "user_query": "q", "chatgpt_response": "r", "hallucination": "maybe"},
            "hallucination",
            'expected "yes" or "no"',
        ),
        (
            "general",
            {"ID": "1", "user_query": "q", "chatgpt_response": "r"},
            "hallucination",
            "missing",
        ),
        ("qa", {**GOOD_QA, "task_type": "dialogue"}, "task_type", "record says 'dialogue'"),
    ],
)
def test_bad_record_error_names_file_line_and_field(
    tmp_path: Path, task: str, record: dict[str, object], field: str, problem: str
) -> None:
    path = write_jsonl(tmp_path / f"{task}_data.json", [GOOD_QA if task == "qa" else record, record])
    refs = list(file_refs(path, task))
    with pytest.raises(CaseInputError) as info:
        to_item(read_record(refs[1]), task, refs[1].case_id, refs[1].source)
    message = str(info.value)
    assert message.startswith(f"{path}:2: field {field!r}: "), message
    assert problem in message


def test_invalid_json_line_names_file_and_line_and_others_still_load(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "qa_data.json", [GOOD_QA, '{"knowledge": "k", "question"', GOOD_QA])
    refs = list(file_refs(path, "qa"))
    assert [r.case_id for r in refs] == ["qa-1", "qa-2", "qa-3"]
    with pytest.raises(CaseInputError, match=rf"^{path}:2: invalid JSON"):
        read_record(refs[1])
    assert to_item(read_record(refs[2]), "qa", "qa-3", refs[2].source).question == "q?"


def test_not_an_object(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "qa_data.json", ['["a", "b"]'])
    ref = next(iter(file_refs(path, "qa")))
    with pytest.raises(CaseInputError, match=r"qa_data.json:1: a record must be a JSON object, got list"):
        to_item(read_record(ref), "qa", ref.case_id, ref.source)


def test_blank_lines_are_skipped_and_line_numbers_kept(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "qa_data.json", [GOOD_QA, "", "   ", GOOD_QA], newline="\r\n")
    refs = list(file_refs(path, "qa"))
    assert [r.case_id for r in refs] == ["qa-1", "qa-4"]
    assert load_all(path, "qa")[1].source == f"{path}:4"


@pytest.mark.parametrize("task", ["qa", "general"])
def test_only_ascii_whitespace_lines_are_blank(tmp_path: Path, task: str) -> None:
    # Blank is what bytes.strip() empties (space, tab, CR, VT, FF); a line of other
    # whitespace (a no-break space) is a record, and a broken one is its case's error.
    good = json.dumps({**GOOD_QA, "ID": "a"} if task == "general" else GOOD_QA).encode()
    lines = [good, b" \t", b"\x0b\x0c \r", good, "\u00a0".encode(), b"", good]
    path = tmp_path / f"{task}_data.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    refs = list(file_refs(path, task))
    assert [r.line for r in refs] == [1, 4, 5, 7]
    if task == "qa":
        assert [r.case_id for r in refs] == ["qa-1", "qa-4", "qa-5", "qa-7"]
    else:  # "a" three times: every one by its line; the no-break space has no ID
        assert [r.case_id for r in refs] == ["general-line1", "general-line4", "general-line5", "general-line7"]
    with pytest.raises(CaseInputError, match=rf"{task}_data.json:5"):
        to_item(read_record(refs[2]), task, refs[2].case_id, refs[2].source)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "qa_data.json"
    path.write_bytes(b"\n\n")
    with pytest.raises(CaseInputError, match="no records"):
        list(file_refs(path, "qa"))


def test_general_ids_blank_and_repeated(tmp_path: Path) -> None:
    rec = {"user_query": "q", "chatgpt_response": "r", "hallucination": "no"}
    path = write_jsonl(
        tmp_path / "general_data.json",
        [{**rec, "ID": "1"}, {**rec, "ID": ""}, {**rec, "ID": "7"}, {**rec, "ID": "7"}, {**rec, "ID": 9}, rec],
        newline="\r\n",
    )
    assert [r.case_id for r in file_refs(path, "general")] == [
        "general-1",
        "general-line2",
        "general-line3",
        "general-line4",
        "general-9",
        "general-line6",
    ]


def test_seed_format_records_are_accepted(tmp_path: Path) -> None:
    """Data already in the seed's item format (list-of-turns history, seed field names)."""
    record = {
        "task_type": "dialogue",
        "knowledge": "k",
        "dialogue_history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
        "right_answer": "a",
        "hallucinated_answer": "b",
    }
    item = to_item(record, "dialogue", "dialogue-1", "x:1")
    assert item.question == "hi" and item.right_answer == "a"
    bad = {**record, "dialogue_history": [{"role": "narrator", "content": "x"}]}
    with pytest.raises(CaseInputError, match=r"x:1: field 'dialogue_history': turn 0\.role"):
        to_item(bad, "dialogue", "dialogue-1", "x:1")


def test_item_model_validates_per_task() -> None:
    with pytest.raises(ValidationError, match="context required for summarization items"):
        HaluEvalItem(id="s", task_type="summarization", right_answer="a", hallucinated_answer="b")
    with pytest.raises(ValidationError, match="dialogue_history required for dialogue items"):
        HaluEvalItem(id="d", task_type="dialogue", question="q", right_answer="a", hallucinated_answer="b")
    with pytest.raises(ValidationError, match="not allowed on general"):
        HaluEvalItem(id="g", task_type="general", question="q", response="r", label="no", right_answer="a")
    with pytest.raises(ValidationError, match="task_type"):
        HaluEvalItem(id="x", task_type="poetry", question="q")  # type: ignore[arg-type]
    ok = HaluEvalItem(id="g", task_type="general", question="q", response="r", label="yes")
    assert not ok.paired
