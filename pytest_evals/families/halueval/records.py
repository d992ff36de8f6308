"""Turn one raw record (a JSON line or a datasets row) into a :class:`HaluEvalItem`.

Each task's file names its fields differently (``right_answer`` in qa,
``right_response`` in dialogue, ``right_summary`` in summarization, ``hallucination``
or ``hallucination_label`` in the two general versions). Every problem is reported
against the record's source (file:line) and the field as it is named in the record.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from pytest_evals.families.halueval.items import HaluEvalItem, Turn, parse_dialogue
from pytest_evals.model.errors import CaseInputError

#: item field -> accepted record field names, first present wins. The first name is
#: the official one; the others accept data already in the seed's item format.
FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "qa": {
        "question": ("question",),
        "knowledge": ("knowledge",),
        "right_answer": ("right_answer",),
        "hallucinated_answer": ("hallucinated_answer",),
    },
    "dialogue": {
        "knowledge": ("knowledge",),
        "dialogue_history": ("dialogue_history",),
        "right_answer": ("right_response", "right_answer"),
        "hallucinated_answer": ("hallucinated_response", "hallucinated_answer"),
    },
    "summarization": {
        "context": ("document", "context"),
        "right_answer": ("right_summary", "right_answer"),
        "hallucinated_answer": ("hallucinated_summary", "hallucinated_answer"),
    },
    "general": {
        "question": ("user_query", "question"),
        "response": ("chatgpt_response", "response"),
        "label": ("hallucination", "hallucination_label", "label"),
        "hallucination_spans": ("hallucination_spans",),
    },
}

#: Item fields a task can do without (the rest of FIELDS[task] is required).
OPTIONAL: dict[str, frozenset[str]] = {
    "qa": frozenset(),
    "dialogue": frozenset({"knowledge"}),
    "summarization": frozenset(),
    "general": frozenset({"hallucination_spans"}),
}


def _pick(record: dict[str, Any], names: tuple[str, ...]) -> tuple[str, Any]:
    for name in names:
        if name in record and record[name] is not None:
            return name, record[name]
    return names[0], None


def _text(value: Any, source: str, field: str) -> str:
    if not isinstance(value, str):
        raise CaseInputError(
            f"{source}: field {field!r}: expected a string, got {type(value).__name__}"
        )
    if not value.strip():
        raise CaseInputError(f"{source}: field {field!r}: must be a non-empty string")
    return value


def _history(value: Any, source: str, field: str) -> list[Turn]:
    if isinstance(value, str):
        try:
            return parse_dialogue(value)
        except ValueError as exc:
            raise CaseInputError(f"{source}: field {field!r}: {exc}") from None
    if isinstance(value, list):
        turns = []
        for i, turn in enumerate(value):
            try:
                turns.append(Turn.model_validate(turn))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in (i, *first["loc"]))
                raise CaseInputError(f"{source}: field {field!r}: turn {where}: {first['msg']}") from None
        if turns:
            return turns
    raise CaseInputError(
        f"{source}: field {field!r}: expected a \"[Human]: ... [Assistant]: ...\" string "
        f"or a list of {{role, content}} turns, got {type(value).__name__}"
    )


def _label(value: Any, source: str, field: str) -> str:
    if isinstance(value, str) and value.strip().lower() in ("yes", "no"):
        return value.strip().lower()
    raise CaseInputError(f"{source}: field {field!r}: expected \"yes\" or \"no\", got {value!r}")


def _spans(value: Any, source: str, field: str) -> list[str]:
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return list(value)
    raise CaseInputError(f"{source}: field {field!r}: expected a list of strings")


def to_item(record: Any, task: str, case_id: str, source: str) -> HaluEvalItem:
    """Validate ``record`` as a ``task`` item; CaseInputError names source and field."""
    if not isinstance(record, dict):
        raise CaseInputError(f"{source}: a record must be a JSON object, got {type(record).__name__}")
    declared = record.get("task_type")
    if declared is not None and declared != task:
        raise CaseInputError(
            f"{source}: field 'task_type': record says {declared!r} but it is in the {task} data"
        )
    values: dict[str, Any] = {}
    for item_field, names in FIELDS[task].items():
        name, value = _pick(record, names)
        if value is None:
            if item_field in OPTIONAL[task]:
                continue
            accepted = " or ".join(repr(n) for n in names)
            raise CaseInputError(f"{source}: field {name!r}: missing (expected {accepted})")
        if item_field == "dialogue_history":
            values[item_field] = _history(value, source, name)
            if isinstance(value, str):
                # Kept byte for byte: the official prompt shows this string, not the turns.
                values["dialogue_history_raw"] = value
        elif item_field == "label":
            values[item_field] = _label(value, source, name)
        elif item_field == "hallucination_spans":
            values[item_field] = _spans(value, source, name)
        else:
            values[item_field] = _text(value, source, name)
    if task == "dialogue":
        turns: list[Turn] = values["dialogue_history"]
        users = [t for t in turns if t.role == "user"]
        # The response answers the last thing the user said.
        values["question"] = (users or turns)[-1].content
    try:
        return HaluEvalItem(id=case_id, task_type=task, source=source, **values)  # type: ignore[arg-type]
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(record)"
            parts.append(f"field {loc!r}: {err['msg']}")
        raise CaseInputError(f"{source}: " + "; ".join(parts)) from None
