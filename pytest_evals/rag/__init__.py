"""The ``rag_answers`` evaluation: GOV.UK Chat-style answers judged against their contexts.

One module per concept: :mod:`.cases` (the data set's fields and what each metric
needs), :mod:`.config` (the suite's metric list), :mod:`.flatten` (contexts as the
judge reads them), :mod:`.prompts` and :mod:`.replies` (what the LLM judge is asked and
must answer), :mod:`.scoring` (verdicts to scores), :mod:`.judged` and :mod:`.offline`
(the LLM and embedding versions of every metric), :mod:`.outcome` (runs of a metric on
one case), :mod:`.aggregation` (the suite's metric tree).
"""

from __future__ import annotations
