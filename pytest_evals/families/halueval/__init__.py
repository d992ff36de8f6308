"""HaluEval: the 35,000-item hallucination benchmark (Li et al., EMNLP 2023) as a suite.

This package owns the whole family: the ``task: halueval`` class (``task``), its
``pytest-evals halueval`` sub-commands (``cli``) and everything below them. Modules,
one concept each: ``items`` (the item model), ``layout`` (official file
names), ``records`` (raw record -> item), ``index`` (lazy byte-offset refs), ``hf``
(Hugging Face datasets source), ``sampling`` (stratified sample, seeded choice),
``prompts``, ``parsing`` (Yes/No), ``offline`` (embedding baseline judge),
``metrics`` (confusion, baselines), ``outcomes`` (paired outcomes for comparisons),
``download`` (fetch the official files).
"""

from __future__ import annotations

__all__: list[str] = []
