"""The HarpIA family's registration (entry point group ``pytest_evals.families``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SUFFIX = ".harpia.json"

TASKS = {"harpia": "pytest_evals.families.harpia.task:Harpia"}
#: --evals-harpia-output / --evals-harpia-log (and their deprecated unprefixed aliases).
PLUGINS = ("pytest_evals.families.harpia.plugin",)
#: A HarpIA input file is a suite by its name alone.
SUITE_FILES = {f"*{SUFFIX}": "pytest_evals.families.harpia.family:implicit_suite"}
#: The reference metrics' libraries (pytest_evals.metrics.reference): the 'harpia' extra.
# sentence-transformers: semantic_similarity with a model directory of the user's (the
# embedded model runs on the offline judge's torch encoder); transformers: bert_score's.
EXTRAS = {"nltk": "harpia", "sacrebleu": "harpia", "rouge_score": "harpia", "bert_score": "harpia",
          "sentence_transformers": "harpia", "transformers": "harpia"}


def implicit_suite(path: Path) -> dict[str, Any]:
    return {"task": "harpia", "input_path": path.name, "name": path.name[: -len(SUFFIX)]}
