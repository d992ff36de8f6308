"""Classification-style evaluations, one package.

Owns the tasks whose cases are scored by comparing an expected and an actual output,
without a judge: the generic ``classification`` task for labels a suite names
(:mod:`.classification_task`, :mod:`.label_set`, :mod:`.label_aggregates`) and GOV.UK
Chat's ``jailbreak_guardrails``, ``output_guardrails`` and ``question_router``
(:mod:`.task`), all specialisations of one label task (:mod:`.label_task`);
``retrieval`` (:mod:`.retrieval`, chunk-level precision/recall per question) and ``topic_tagger`` (:mod:`.topic_tagger`, primary and secondary topics), plus
the GOV.UK-shaped CSV files their runs write (:mod:`.csv_files`) and the suite fields of
GOV.UK Chat's config files (:mod:`.config`). Registered like any family, through ``family.py``.
"""

from __future__ import annotations
