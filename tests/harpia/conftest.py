"""Fixtures for the HarpIA tests.

pytester restores ``sys.modules`` after every in-process run, and torch, numpy and
transformers cannot be imported twice in one process. Import the metric libraries (and
our metric modules, whose model caches should outlive one inner run) here, before
pytester takes its snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy  # noqa: F401
import pytest

import pytest_evals.families.harpia.scores
import pytest_evals.families.harpia.task
import pytest_evals.families.harpia.writers
import pytest_evals.metrics.reference.bertscore
import pytest_evals.metrics.reference.bleu
import pytest_evals.metrics.reference.edit
import pytest_evals.metrics.reference.exact
import pytest_evals.metrics.reference.judged_metric
import pytest_evals.metrics.reference.meteor
import pytest_evals.metrics.reference.rouge
import pytest_evals.metrics.reference.sacre
import pytest_evals.metrics.reference.semantic
from pytest_evals.metrics.reference.bertscore import embedded_model_path
from pytest_evals.metrics.reference.wordnet import SYSTEM_WORDNET

HERE = Path(__file__).parent
SCHEMAS = Path(pytest_evals.families.harpia.writers.__file__).parent / "schemas"


def _preload() -> None:
    import bert_score  # noqa: F401
    import nltk.translate.bleu_score
    import nltk.translate.meteor_score  # noqa: F401
    import rouge_score.rouge_scorer  # noqa: F401
    import sacrebleu  # noqa: F401
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401

    # transformers loads this lazily; loaded first inside an in-process run it would be
    # dropped afterwards while the cached BERTScore tokenizer keeps the old class, and
    # bert_score's idf pool then cannot pickle it (depends on which tests ran before)
    import transformers.models.bert.tokenization_bert  # noqa: F401


_preload()


def has_wordnet() -> bool:
    try:
        from pytest_evals.metrics.reference.wordnet import load_wordnet

        load_wordnet()
    except Exception:
        return False
    return True


needs_wordnet = pytest.mark.skipif(
    not has_wordnet(),
    reason=f"no WordNet data: `python -m nltk.downloader wordnet` or `apt-get install wordnet-base` ({SYSTEM_WORDNET})",
)


@pytest.fixture(scope="session")
def model_path() -> str:
    return str(embedded_model_path())


#: A small Portuguese -> English set with one or two references per instance.
INSTANCES: list[dict[str, Any]] = [
    {"id": "a1", "input": "Traduza: O gato dorme.", "expected-output": ["The cat sleeps.", "The cat is sleeping."],
     "actual-output": "The cat is sleeping."},
    {"id": "a2", "input": "Traduza: Vai chover amanhã.", "expected-output": ["It will rain tomorrow."],
     "actual-output": "Tomorrow it will rain."},
    {"id": "a3", "input": "Traduza: Eu gosto de ler livros.", "expected-output": ["I like reading books.", "I enjoy reading books."],
     "actual-output": "I like to read books."},
    {"id": "a4", "input": "Traduza: Onde fica a estação?", "expected-output": ["Where is the station?"],
     "actual-output": "Where is the train station?"},
    {"id": "a5", "input": "Traduza: A reunião foi adiada.", "expected-output": ["The meeting was postponed.", "The meeting has been delayed."],
     "actual-output": "The meeting was delayed."},
    {"id": "a6", "input": "Traduza: Ela mora em Lisboa.", "expected-output": ["She lives in Lisbon."],
     "actual-output": "She lives in Lisbon."},
]


def harpia_doc(metrics: list[dict[str, Any]], instances: list[Any] | None = None) -> dict[str, Any]:
    return {"instances": INSTANCES if instances is None else instances, "metrics": metrics}


@pytest.fixture
def write_harpia(pytester: pytest.Pytester) -> Callable[..., Path]:
    """``write_harpia(metrics, instances=None, name="t")`` -> ``<name>.harpia.json`` in pytester's dir."""

    def write(metrics: list[dict[str, Any]], instances: list[Any] | None = None, name: str = "t") -> Path:
        path = pytester.path / f"{name}.harpia.json"
        path.write_text(json.dumps(harpia_doc(metrics, instances), ensure_ascii=False, indent=1), encoding="utf-8")
        return path

    return write


def read_output(path: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def validate_schema(data: Any, schema_name: str) -> None:
    import jsonschema

    schema = json.loads((SCHEMAS / schema_name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
