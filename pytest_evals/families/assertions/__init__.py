"""The ``assertions`` task: typed, weighted checks of each answer, written in YAML.

A suite's ``assert:`` list applies to every case, a case's own ``assert`` list to it
alone; each assertion is deterministic (contains, regex, json_schema...), compares with
the case's reference (BLEU, ROUGE, ``similar``...), asks a judge (``llm_rubric``,
``g_eval``, ``factuality``, ``answer_relevance``) or bounds a generated case's latency
and cost. ``docs/assertions.md`` lists every type.
"""
