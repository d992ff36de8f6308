"""The classification family's registration (entry point ``pytest_evals.registry.family_registry``)."""

from __future__ import annotations

# The class's home after the family move first, then its former path.
TASKS: dict[str, tuple[str, ...]] = {
    name: (f"pytest_evals.families.classification.task:{cls}", f"pytest_evals.tasks.classification:{cls}")
    for name, cls in (
        ("jailbreak_guardrails", "JailbreakGuardrails"),
        ("output_guardrails", "OutputGuardrails"),
        ("question_router", "QuestionRouter"),
    )
}
TASKS["retrieval"] = ("pytest_evals.families.classification.retrieval:Retrieval",)
TASKS["topic_tagger"] = ("pytest_evals.families.classification.topic_tagger:TopicTagger",)
#: results.csv / aggregate.csv / miscategorised_cases.csv shaped like GOV.UK's tool.
PLUGINS = ("pytest_evals.families.classification.plugin",)
