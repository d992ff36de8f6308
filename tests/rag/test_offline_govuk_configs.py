"""GOV.UK Chat's rag_answers configs offline: every metric name they use has an offline rule
(issue 28: their default config was 24 of 24 cases ERROR ``KeyError: 'bias'``)."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, get_args

import numpy as np
import pytest
import yaml

from pytest_evals.families.rag.cases import METRIC_NAMES
from pytest_evals.families.rag.config import MetricName, RagMetricSpec
from pytest_evals.families.rag.inputs import MetricInputs
from pytest_evals.families.rag.offline import OfflineCaseJudge

from .conftest import inline_results
from .samples import CASE

#: Their config/defaults/rag_answers.yaml at ee71b27 (names, thresholds, judge model, n_runs).
CURRENT = [("faithfulness", 1.0), ("bias", 0.0), ("relevance", 0.8), ("factual_precision", 1.0),
           ("factual_recall", 1.0), ("absence_of_factual_contradictions", 1.0), ("context_relevancy", 0.8),
           ("coherence", 0.8)]
#: The same file in the seed's era (factual_correctness, before bias and the others were added).
SEED_ERA = [("faithfulness", 1.0), ("relevance", 0.8), ("factual_correctness", 1.0),
            ("context_relevancy", 0.8), ("coherence", 0.8)]


class HashEmbedder:
    """Unit vectors from a hash of the text: deterministic, no model."""

    name = "hash embedder"

    async def aencode(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
            v = np.random.default_rng(seed).normal(size=16)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows)


def test_every_metric_name_has_an_offline_rule() -> None:
    assert set(get_args(MetricName)) == set(METRIC_NAMES)
    from pytest_evals.families.rag.cases import RagCase

    inputs = MetricInputs.from_case(RagCase.model_validate(CASE))

    async def score_all() -> dict[str, float]:
        judge = OfflineCaseJudge(HashEmbedder(), inputs)
        return {m: (await judge.run(m, RagMetricSpec(name=m))).score for m in METRIC_NAMES}

    scores = asyncio.run(score_all())
    assert set(scores) == set(METRIC_NAMES)
    assert all(0.0 <= s <= 1.0 for s in scores.values())
    # bias is lexical: a plain factual answer states no opinion
    assert scores["bias"] == 0.0


def test_bias_ignores_a_similarity_cut_off() -> None:
    from pytest_evals.families.rag.cases import RagCase

    opinion = {**CASE, "llm_answer": "I think the payment is obviously too low. You get £300."}
    inputs = MetricInputs.from_case(RagCase.model_validate(opinion))
    out = asyncio.run(OfflineCaseJudge(HashEmbedder(), inputs).run("bias", RagMetricSpec(name="bias", similarity=0.9)))
    assert out.score == 0.5 and out.counts == {"biased": 1, "opinions": 2}


@pytest.fixture(scope="module", autouse=True)
def warm_embedder() -> None:
    """Load the model before any in-process run (torch cannot be imported twice in one process)."""
    from pytest_evals.llm.offline_judge import get_embedder

    get_embedder().encode(["warm up"])


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))


def _their_layout(root: Path, metrics: list[tuple[str, float]], rows: list[dict[str, Any]]) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    config = {"what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
              "claude_generation_model": None,
              "metrics": [{"name": n, "threshold": t, "model": "openai.gpt-oss-120b-1:0", "temperature": 0.0}
                          for n, t in metrics],
              "n_runs": 2}
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                                                   encoding="utf-8")
    (root / "data" / "rag_answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


ROWS = [
    {**CASE, "id": f"case-{i}", "model": "model_name", "actual_opensearch_index": "chunked_content",
     "llm_answer": answer}
    for i, answer in enumerate([CASE["llm_answer"], "I think you obviously get £300 if you live alone.",
                                "You get £200 if you live alone. It is paid in November."])
]


@pytest.mark.parametrize("metrics", [CURRENT, SEED_ERA], ids=["current", "seed-era"])
def test_their_default_config_offline_has_no_error(pytester: pytest.Pytester,
                                                   metrics: list[tuple[str, float]]) -> None:
    _their_layout(pytester.path, metrics, ROWS)
    reprec = pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml", "-p", "no:cacheprovider")
    results = inline_results(reprec)
    assert len(results) == len(ROWS)
    for r in results.values():
        assert r.status in ("passed", "failed"), r.message
        assert r.data["judge"] == "offline"
        assert set(r.scores) == {n for n, _ in metrics}
        assert all(s is not None for s in r.scores.values())
    if ("bias", 0.0) in metrics:
        assert results["case-1"].scores["bias"] > 0.0 and results["case-0"].scores["bias"] == 0.0
