"""The RAG family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

TASKS = {"rag_answers": "pytest_evals.families.rag.task:RagAnswers"}
#: DeepEval's telemetry off before its own pytest plugin starts reporting.
PLUGINS = ("pytest_evals.families.rag.plugin",)
#: HTML contexts are rendered to text by inscriptis (lxml underneath): the 'rag' extra.
#: DeepEval metric classes (``deepeval:`` in a metric entry): the 'deepeval' extra.
EXTRAS = {"inscriptis": "rag", "lxml": "rag", "deepeval": "deepeval"}
