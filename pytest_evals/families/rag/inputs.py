"""A case reduced to what the metrics read: plain texts, contexts already flattened."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_evals.families.rag.cases import RagCase
from pytest_evals.families.rag.flatten import contexts_block, flatten_contexts
from pytest_evals.families.rag.govuk_context import govuk_context_content, govuk_flattened

#: The metric whose GOV.UK version reads the labelled chunk layout.
LABELLED_LAYOUT_METRICS: frozenset[str] = frozenset({"context_relevancy"})


@dataclass(frozen=True)
class MetricInputs:
    question: str
    answer: str
    ideal_answer: str
    #: One flattened text per retrieved chunk, in retrieval order (rendered HTML: what the
    #: offline judge and the reports read).
    contexts: tuple[str, ...]
    #: GOV.UK-shaped suites: each chunk as their judge reads it (raw HTML, "None" for a
    #: null description), in their two layouts (:mod:`.govuk_context`); None otherwise.
    judge_contexts: tuple[str, ...] | None = None
    labelled_contexts: tuple[str, ...] | None = None

    @classmethod
    def from_case(cls, case: RagCase, source: str = "", govuk: bool = False) -> MetricInputs:
        """Flattens the contexts once per case (every metric and run reuses them)."""
        chunks = case.structured_contexts or []
        return cls(
            question=case.question.strip(),
            answer=(case.llm_answer or "").strip(),
            ideal_answer=(case.ideal_answer or "").strip(),
            contexts=tuple(flatten_contexts(chunks, source)),
            judge_contexts=tuple(govuk_flattened(c) for c in chunks) if govuk else None,
            labelled_contexts=tuple(govuk_context_content(c) for c in chunks) if govuk else None,
        )

    def contexts_for(self, metric: str) -> tuple[str, ...]:
        """The chunk texts the LLM judge of ``metric`` reads."""
        if metric in LABELLED_LAYOUT_METRICS and self.labelled_contexts is not None:
            return self.labelled_contexts
        if self.judge_contexts is not None:
            return self.judge_contexts
        return self.contexts

    @property
    def context(self) -> str:
        return contexts_block(self.contexts)

    def prompt_fields(self, metric: str | None = None) -> dict[str, str]:
        return {
            "question": self.question,
            "answer": self.answer,
            "ideal_answer": self.ideal_answer,
            "context": contexts_block(self.contexts_for(metric)) if metric else self.context,
        }
