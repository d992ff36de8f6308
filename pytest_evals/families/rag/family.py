"""The RAG family's registration (entry point ``pytest_evals.registry.family_registry``)."""

from __future__ import annotations

TASKS = {"rag_answers": ("pytest_evals.families.rag.task:RagAnswers", "pytest_evals.tasks.rag:RagAnswers")}
