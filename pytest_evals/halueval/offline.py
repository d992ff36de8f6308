"""The offline judge: an embedding-similarity baseline, not a hallucination detector.

Without a model endpoint, each output is embedded with the embedded sentence model
and compared with the text it should be grounded in: the question and knowledge (qa),
the knowledge and dialogue (dialogue), the best-matching passage of the document
(summarization), the user query (general). An output less similar than a per-task
threshold is called hallucinated. The thresholds were fitted once on a fixed
calibration split of the official data (``bench/calibrate_halueval_offline.py``
prints how, and the split's and a held-out split's accuracy); they are constants here
so every run judges the same way. Reports name this judge explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pytest_evals.halueval.items import HaluEvalItem, render_dialogue

#: Cosine similarity below which the output is called hallucinated, per task.
#: Fitted by bench/calibrate_halueval_offline.py (see docs/halueval.md for its figures).
THRESHOLDS: dict[str, float] = {
    "qa": 0.5,
    "dialogue": 0.5,
    "summarization": 0.5,
    "general": 0.5,
}

#: Words per document passage (the sentence model reads at most 256 word pieces).
PASSAGE_WORDS = 120
#: Passages compared per document: enough for the articles in the data, bounded cost.
MAX_PASSAGES = 16

JUDGE_NAME = "offline baseline: embedding similarity"


class Encoder(Protocol):
    name: str

    async def aencode(self, texts: list[str]) -> Any: ...


def passages(text: str, words: int = PASSAGE_WORDS, limit: int = MAX_PASSAGES) -> list[str]:
    tokens = text.split()
    chunks = [" ".join(tokens[i : i + words]) for i in range(0, len(tokens), words)]
    return chunks[:limit] or [text]


def grounding(item: HaluEvalItem) -> list[str]:
    """The texts an output of this item should agree with."""
    if item.task_type == "qa":
        return [f"{item.question} {item.knowledge}"]
    if item.task_type == "dialogue":
        history = render_dialogue((item.dialogue_history or [])[-2:])
        return [f"{item.knowledge or ''} {history}".strip()]
    if item.task_type == "summarization":
        return passages(item.context or "")
    return [item.question or ""]


@dataclass(frozen=True)
class OfflineVerdict:
    similarity: float
    threshold: float

    @property
    def hallucinated(self) -> bool:
        return self.similarity < self.threshold

    @property
    def reply(self) -> str:
        """A reply in the judge's vocabulary, so it is parsed like a model's."""
        word = "Yes" if self.hallucinated else "No"
        rel = "<" if self.hallucinated else ">="
        return f"{word} ({JUDGE_NAME}: similarity {self.similarity:.3f} {rel} threshold {self.threshold:.3f})"


def similarity(vectors: Any) -> float:
    """Max cosine similarity of row 0 with the other rows (rows are L2-normalised)."""
    return float((vectors[1:] @ vectors[0]).max())


async def offline_verdict(item: HaluEvalItem, output: str, encoder: Encoder) -> OfflineVerdict:
    vectors = await encoder.aencode([output, *grounding(item)])
    return OfflineVerdict(similarity(vectors), THRESHOLDS[item.task_type])
