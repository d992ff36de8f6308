"""The classification family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

_PKG = "pytest_evals.families.classification"

TASKS = {
    "classification": f"{_PKG}.classification_task:Classification",
    "jailbreak_guardrails": f"{_PKG}.task:JailbreakGuardrails",
    "output_guardrails": f"{_PKG}.task:OutputGuardrails",
    "question_router": f"{_PKG}.task:QuestionRouter",
    "retrieval": f"{_PKG}.retrieval:Retrieval",
    "topic_tagger": f"{_PKG}.topic_tagger:TopicTagger",
}
#: results.csv / aggregate.csv / miscategorised_cases.csv shaped like GOV.UK's tool;
#: ``target: govuk_chat`` (their rake tasks as the generate step).
#: --evals-govuk-outputs (their files, their layout).
#: GOV.UK config notes (unknown fields) in the terminal and JSON summaries.
PLUGINS = (f"{_PKG}.plugin", f"{_PKG}.govuk_generate", f"{_PKG}.govuk_outputs", f"{_PKG}.config_checks")
#: GOV.UK Chat's positive labels: a caught jailbreak, a triggered guardrail.
LABEL_WORDS = ("jailbreak", "triggered")
#: ``pytest-evals compare`` groups a classification suite's cases by their expected label.
GROUP_FIELDS = {"classification": "expected"}
