"""The ``rag_answers`` family: GOV.UK Chat-style answers judged against their contexts.

Owns the task (:mod:`.task`, registered as ``rag_answers``), its eight metrics
(faithfulness, bias, relevance, factual_precision/factual_correctness, factual_recall,
absence_of_factual_contradictions, context_relevancy, coherence), their prompts, the
LLM and offline judges, and the suite's aggregates. One module per concept: :mod:`.cases` (the data set's fields, what each metric reads),
:mod:`.config` (the suite's metric list), :mod:`.flatten` and :mod:`.inputs` (contexts
as the judge reads them), :mod:`.prompts` and :mod:`.replies` (what the LLM judge is
asked and must answer), :mod:`.scoring` (verdicts to scores), :mod:`.judged` and
:mod:`.offline` + :mod:`.sentences` (the LLM and embedding versions of every metric),
:mod:`.outcome` (runs of a metric on one case), :mod:`.evaluate` and :mod:`.messages`
(a case's status and failure text), :mod:`.generation` (``generate: true`` outputs),
:mod:`.aggregation` (the suite's metric tree); :mod:`.judge_block` (the ``judge:`` block:
the judge in the suite author's words), :mod:`.govuk_shape` and :mod:`.govuk_context`
(GOV.UK Chat's suites, their judge wording and context text), :mod:`.deepeval_model` and
:mod:`.deepeval_metric` (DeepEval metric classes run with our client). Docs: docs/rag.md,
docs/govuk.md.
"""

from __future__ import annotations
