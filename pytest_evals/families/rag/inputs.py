"""A case reduced to what the metrics read: plain texts, contexts already flattened."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_evals.families.rag.cases import RagCase
from pytest_evals.families.rag.flatten import contexts_block, flatten_contexts


@dataclass(frozen=True)
class MetricInputs:
    question: str
    answer: str
    ideal_answer: str
    #: One flattened text per retrieved chunk, in retrieval order.
    contexts: tuple[str, ...]

    @classmethod
    def from_case(cls, case: RagCase, source: str = "") -> MetricInputs:
        """Flattens the contexts once per case (every metric and run reuses them)."""
        return cls(
            question=case.question.strip(),
            answer=(case.llm_answer or "").strip(),
            ideal_answer=(case.ideal_answer or "").strip(),
            contexts=tuple(flatten_contexts(case.structured_contexts or [], source)),
        )

    @property
    def context(self) -> str:
        return contexts_block(self.contexts)

    def prompt_fields(self) -> dict[str, str]:
        return {
            "question": self.question,
            "answer": self.answer,
            "ideal_answer": self.ideal_answer,
            "context": self.context,
        }
