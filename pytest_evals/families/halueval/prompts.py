"""Judge prompts: the seed's four templates (default) or the official protocol.

``prompts: seed`` uses the templates of seed 003 verbatim, with our one system message.

``prompts: official`` is the chat request of the official ``evaluation/evaluate.py``
byte for byte, for the three tasks it covers: its per-task system message (as written
there, "huallucination" included) and, as the user message, the text of
``<data_dir>/prompts/<task>_evaluation_instruction.txt`` (read as the script reads it:
UTF-8, universal newlines, nothing stripped) followed by the item block the script
appends, with the item's fields as they are in the data (the dialogue history is the
record's raw string). The official script has no general task, so general items keep
the seed's general template and our system message in both styles.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pytest_evals.families.halueval.items import HaluEvalItem
from pytest_evals.families.halueval.layout import HOW_TO_GET_DATA, prompt_file
from pytest_evals.model.errors import CaseInputError

PromptStyle = Literal["seed", "official"]

QA_TEMPLATE = """I want you to act as an answer judge. Given a question and an answer, your objective is to determine if the provided answer contains non-factual or hallucinated information. You SHOULD give your judgement based on the following hallucination types and the world knowledge.

You are trying to determine if the answer misunderstands the question context and intention.

#Question#: {question}
#Answer#: {answer}
#Your Judgement#: """

DIALOGUE_TEMPLATE = """I want you to act as a response judge. Given a dialogue history and a response, your objective is to determine if the provided response contains non-factual or hallucinated information. You SHOULD give your judgement based on the following hallucination types and the world knowledge.

You are trying to determine if the response contains hallucination about factual information:
1. Replacing a true entity with a highly similar entity
2. Replacing a true entity with a dissimilar entity
3. Replacing a true entity with a dissimilar entity of a different type

#Dialogue History#: {dialogue_history}
#Response#: {response}
#Your Judgement#: """

SUMMARIZATION_TEMPLATE = """I want you to act as a summary judge. Given a document and a summary, your objective is to determine if the provided summary contains non-factual or hallucinated information. You SHOULD give your judgement based on the following hallucination types and the world knowledge.

You are trying to determine if the summary contains:
1. Information not directly inferrable from the document
2. Incorrect information
3. Contradictions with the document

#Document#: {document}
#Summary#: {summary}
#Your Judgement#: """

GENERAL_TEMPLATE = """I want you to act as an answer judge. Given a question and an answer, your objective is to determine if the provided answer contains non-factual or hallucinated information based on world knowledge.

#Question#: {question}
#Answer#: {answer}
#Your Judgement#: """

SEED_TEMPLATES: dict[str, str] = {
    "qa": QA_TEMPLATE,
    "dialogue": DIALOGUE_TEMPLATE,
    "summarization": SUMMARIZATION_TEMPLATE,
    "general": GENERAL_TEMPLATE,
}

#: The official script's system message per task, exactly as it is written there.
OFFICIAL_SYSTEM: dict[str, str] = {
    "qa": (
        "You are a huallucination detector. You MUST determine if the provided answer "
        "contains hallucination or not for the question based on the world knowledge. "
        'The answer you provided MUST be "Yes" or "No"'
    ),
    "dialogue": (
        "You are a response judge. You MUST determine if the provided response contains "
        'non-factual or hallucinated information. The answer you give MUST be "Yes" or "No"'
    ),
    "summarization": (
        "You are a summary judge. You MUST determine if the provided summary contains "
        'non-factual or hallucinated information. The answer you give MUST be "Yes" or "No"'
    ),
}

#: What the official script puts between the instruction text and the item block.
OFFICIAL_SEPARATOR = "\n\n"

#: The item block the official script appends to the instruction (its chat request).
OFFICIAL_BLOCKS: dict[str, str] = {
    "qa": "#Question#: {question}\n#Answer#: {answer}\n#Your Judgement#: ",
    "dialogue": "#Dialogue History#: {dialogue_history}\n#Response#: {response}\n#Your Judgement#: ",
    "summarization": "#Document#: {document}\n#Summary#: {summary}\n#Your Judgement#: ",
}

#: Where the item's own fields start in a seed template (the knowledge line goes there).
ITEM_MARKER: dict[str, str] = {
    "qa": "#Question#:",
    "dialogue": "#Dialogue History#:",
    "summarization": "#Document#:",
    "general": "#Question#:",
}

#: What the judged text is called in each task (used in the system message).
OUTPUT_NOUN: dict[str, str] = {
    "qa": "answer",
    "dialogue": "response",
    "summarization": "summary",
    "general": "answer",
}

SYSTEM_PROMPT = (
    "You are a hallucination detector. Reply \"Yes\" if the {noun} contains non-factual "
    "or hallucinated information and \"No\" if it does not. Reply with one word: Yes or No."
)

#: The optional ``with_knowledge`` line, placed before the item (qa and dialogue only:
#: summarization already shows its document and general items have no knowledge).
KNOWLEDGE_LINE = "#Knowledge#: {knowledge}\n"

#: Documents longer than this are cut in the copy of the prompt kept for the report.
REPORT_DOCUMENT_CHARS = 2000


@dataclass(frozen=True)
class PromptSet:
    """The per-task prompt text of one suite (official instructions loaded once)."""

    style: PromptStyle
    with_knowledge: bool
    instructions: dict[str, str]

    @classmethod
    def load(
        cls, style: PromptStyle, with_knowledge: bool, data_dir: Path, tasks: list[str]
    ) -> PromptSet:
        instructions: dict[str, str] = {}
        if style == "official":
            for task in tasks:
                if task not in OFFICIAL_BLOCKS:
                    continue
                path = prompt_file(data_dir, task)
                try:
                    instructions[task] = path.read_text(encoding="utf-8")
                except FileNotFoundError:
                    raise CaseInputError(
                        f"prompts: official needs {path}; {HOW_TO_GET_DATA.format(dest=data_dir)}"
                    ) from None
                except UnicodeDecodeError as exc:
                    raise CaseInputError(f"{path}: not UTF-8 text ({exc.reason})") from None
        return cls(style, with_knowledge, instructions)

    def messages(
        self, item: HaluEvalItem, output: str, document_limit: int | None = None
    ) -> list[dict[str, str]]:
        """The chat messages asking whether ``output`` (the shown text) hallucinates."""
        task = item.task_type
        document = item.context or ""
        if document_limit is not None and len(document) > document_limit:
            cut = len(document) - document_limit
            document = (
                document[:document_limit]
                + f" [... {cut:,} more characters of the document were sent to the judge but are not shown in this report]"
            )
        fields = {
            "question": item.question or "",
            "answer": output,
            "response": output,
            "summary": output,
            "document": document,
            "dialogue_history": item.history_text(),
        }
        official = task in self.instructions
        if official:
            # No rstrip: the script concatenates the file's text as read.
            head, block = self.instructions[task] + OFFICIAL_SEPARATOR, OFFICIAL_BLOCKS[task]
        else:
            template = SEED_TEMPLATES[task]
            at = template.index(ITEM_MARKER[task])
            head, block = template[:at], template[at:]
        if self.with_knowledge and item.knowledge and task in ("qa", "dialogue"):
            head += KNOWLEDGE_LINE.format(knowledge=item.knowledge)
        # Only the item block is formatted: the instruction text is used as written.
        body = head + block.format(**fields)
        system = OFFICIAL_SYSTEM[task] if official else SYSTEM_PROMPT.format(noun=OUTPUT_NOUN[task])
        return [{"role": "system", "content": system}, {"role": "user", "content": body}]
