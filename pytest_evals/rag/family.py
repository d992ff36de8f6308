"""The RAG family's registration (entry point ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"rag_answers": ("pytest_evals.rag.task:RagAnswers", "pytest_evals.tasks.rag:RagAnswers")}
