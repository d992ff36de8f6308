"""The ``rag_answers`` evaluation: GOV.UK Chat-style answers judged against their contexts.

One module per concept: :mod:`.cases` (the data set's fields, what each metric reads),
:mod:`.config` (the suite's metric list), :mod:`.flatten` and :mod:`.inputs` (contexts
as the judge reads them), :mod:`.prompts` and :mod:`.replies` (what the LLM judge is
asked and must answer), :mod:`.scoring` (verdicts to scores), :mod:`.judged` and
:mod:`.offline` + :mod:`.sentences` (the LLM and embedding versions of every metric),
:mod:`.outcome` (runs of a metric on one case), :mod:`.evaluate` and :mod:`.messages`
(a case's status and failure text), :mod:`.generation` (``generate: true`` outputs),
:mod:`.aggregation` (the suite's metric tree). The task class is
:class:`pytest_evals.rag.task.RagAnswers` (in :mod:`.task`).
"""

from __future__ import annotations
