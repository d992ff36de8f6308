"""The HaluEval item: one test case, whatever file or dataset it came from.

The three paired tasks (qa, dialogue, summarization) have a ground-truth output and a
hallucinated one; the judge is shown one of them. The general task is different in
kind: each record is a single ChatGPT response with a human yes/no hallucination
label, so it is modelled as ``response`` + ``label`` rather than as a fake pair.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TaskType = Literal["qa", "dialogue", "summarization", "general"]
TASK_TYPES: tuple[TaskType, ...] = ("qa", "dialogue", "summarization", "general")
PAIRED_TASKS: tuple[TaskType, ...] = ("qa", "dialogue", "summarization")

#: Speaker markers of the dialogue file's history string and the roles they map to.
SPEAKERS: dict[str, str] = {"Human": "user", "Assistant": "assistant"}
_SPEAKER = re.compile(r"\[(Human|Assistant)\]:")

#: Fields that must be present and non-empty, per task (the seed's validation table;
#: summarization and general have no question of their own in the data, see below).
REQUIRED: dict[str, tuple[str, ...]] = {
    "qa": ("question", "knowledge", "right_answer", "hallucinated_answer"),
    "dialogue": ("question", "dialogue_history", "right_answer", "hallucinated_answer"),
    "summarization": ("context", "right_answer", "hallucinated_answer"),
    "general": ("question", "response", "label"),
}


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)


def parse_dialogue(history: str) -> list[Turn]:
    """Split "[Human]: ... [Assistant]: ..." into turns; ValueError when it has none.

    The official file is not strictly alternating (a few histories start with the
    assistant or repeat a speaker), so the order is kept as written.
    """
    parts = _SPEAKER.split(history)
    if parts[0].strip():
        raise ValueError(
            f"text before the first [Human]:/[Assistant]: marker: {parts[0].strip()[:60]!r}"
        )
    turns = []
    for speaker, content in zip(parts[1::2], parts[2::2], strict=True):
        text = content.strip()
        if not text:
            raise ValueError(f"empty [{speaker}] turn")
        turns.append(Turn(role=SPEAKERS[speaker], content=text))  # type: ignore[arg-type]
    if not turns:
        raise ValueError("no [Human]: or [Assistant]: turns")
    return turns


def render_dialogue(turns: list[Turn]) -> str:
    """Turns given as a list (Hub or seed-format data) in the official string format."""
    names = {v: k for k, v in SPEAKERS.items()}
    return " ".join(f"[{names[t.role]}]: {t.content}" for t in turns)


class HaluEvalItem(BaseModel):
    """One HaluEval case (the seed's fields, validated per task type).

    - qa: ``question``, ``knowledge``, the answer pair.
    - dialogue: ``dialogue_history`` (turns), ``question`` = the last user turn,
      ``knowledge``, the response pair.
    - summarization: ``context`` = the document, the summary pair; ``question`` is
      None because the data has none (inventing one would misstate the data).
    - general: ``question`` = the user query, ``response`` and its human ``label``
      ("yes" = contains a hallucination), ``hallucination_spans`` when given.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    task_type: TaskType
    question: str | None = None
    knowledge: str | None = None
    context: str | None = None
    dialogue_history: list[Turn] | None = None
    #: The history exactly as the record wrote it (the official file's one string, with
    #: its spacing): prompts show this, the turns are for validation and ``question``.
    dialogue_history_raw: str | None = None
    right_answer: str | None = None
    hallucinated_answer: str | None = None
    response: str | None = None
    label: Literal["yes", "no"] | None = None
    hallucination_spans: list[str] | None = None
    #: Where the record came from ("qa_data.json:17", "hf:pminervini/HaluEval/qa#16").
    source: str | None = None

    @field_validator(
        "question", "knowledge", "context", "right_answer", "hallucinated_answer", "response"
    )
    @classmethod
    def _non_empty(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must be a non-empty string")
        return value

    @model_validator(mode="after")
    def _per_task(self) -> HaluEvalItem:
        missing = [name for name in REQUIRED[self.task_type] if not getattr(self, name)]
        if missing:
            raise ValueError(
                f"{', '.join(missing)} required for {self.task_type} items"
            )
        paired = self.task_type in PAIRED_TASKS
        stray = (
            [n for n in ("response", "label") if getattr(self, n) is not None]
            if paired
            else [n for n in ("right_answer", "hallucinated_answer") if getattr(self, n) is not None]
        )
        if stray:
            kind = "paired" if paired else "general (single labelled response)"
            raise ValueError(f"{', '.join(stray)} not allowed on {kind} items")
        return self

    @property
    def paired(self) -> bool:
        return self.task_type in PAIRED_TASKS

    def history_text(self) -> str:
        """The dialogue history as prompts show it: the record's own string when it had one."""
        if self.dialogue_history_raw is not None:
            return self.dialogue_history_raw
        return render_dialogue(self.dialogue_history or [])
