"""The embedded offline judge: every metric from sentence embeddings, no endpoint needed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import inline_results, write_suite
from .samples import CASE

EVAL_SUITES = Path(__file__).resolve().parents[2] / "eval_suites"
METRICS = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness", "factual_recall"]
OFF_TOPIC = {
    **CASE,
    "id": "off-topic",
    "llm_answer": "The Houses of Parliament were rebuilt after a fire in 1834. "
                  "Spain has a warm and sunny climate most of the year.",
}


@pytest.fixture(scope="module", autouse=True)
def warm_embedder() -> None:
    """Load the model before any in-process run: pytester restores ``sys.modules`` after
    each run, and torch cannot be imported twice in one process."""
    from pytest_evals.llm.offline_judge import get_embedder

    get_embedder().encode(["warm up"])


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))


def test_offline_baselines_score_every_metric(pytester: pytest.Pytester) -> None:
    write_suite(pytester, [CASE, OFF_TOPIC], metrics=[{"name": m, "threshold": 0.5} for m in METRICS], n_runs=3)
    results = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    good, bad = results["wfp"], results["off-topic"]
    for r in (good, bad):
        assert r.data["judge"] == "offline"
        assert r.details["judge"] == "offline embedding baseline: all-MiniLM-L6-v2 (embedded offline judge)"
        assert r.details["n_runs"] == 1  # deterministic: repeating would only fake a spread
        for m in METRICS:
            entry = r.data["metrics"][m]
            assert 0.0 <= entry["score"] <= 1.0 and len(entry["runs"]) == 1 and entry["std"] is None
            (run,) = r.details["metrics"][m]["runs"]
            assert run["reason"].startswith("offline embedding baseline, all-MiniLM-L6-v2: ")
    assert good.status == "passed", good.message
    assert good.scores["relevance"] == 1.0 and good.scores["faithfulness"] == 1.0
    assert good.scores["factual_correctness"] == 1.0 and good.scores["factual_recall"] == 1.0
    # an answer about something else: no sentence is on the question or backed by the page
    assert bad.status == "failed"
    assert bad.scores["relevance"] == 0.0 and bad.scores["faithfulness"] == 0.0
    assert bad.scores["factual_correctness"] == 0.0
    # context_relevancy does not read the answer: the same context serves both cases
    assert bad.scores["context_relevancy"] == good.scores["context_relevancy"]
    claims = bad.details["metrics"]["faithfulness"]["runs"][0]["verdicts"]["claims"]
    assert [c["verdict"] for c in claims] == ["no", "no"]
    assert all(c["similarity"] < 0.6 and c["closest_context"] for c in claims)
    # same inputs, same scores
    again = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert {k: r.scores for k, r in again.items()} == {k: r.scores for k, r in results.items()}


@pytest.mark.slow
def test_example_suites_offline_plain_and_two_workers(pytester: pytest.Pytester) -> None:
    """``pytest eval_suites/`` scores the example RAG suites with no network, identically under -n 2."""
    for name in ("rag_answers.eval.yaml", "rag_answers_generate.eval.yaml"):
        shutil.copy(EVAL_SUITES / name, pytester.path / name)
    shutil.copytree(EVAL_SUITES / "data", pytester.path / "data")
    shutil.copytree(EVAL_SUITES / "targets", pytester.path / "targets")
    # in-process for the plain run (the model is already loaded), two fresh workers for -n 2
    plain = pytester.runpytest("-p", "no:cacheprovider", "--evals-json", "plain.json")
    two = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--evals-json", "two.json")
    assert plain.ret == two.ret == 0, plain.stdout.str()[-2000:]
    a = json.loads((pytester.path / "plain.json").read_text())["suites"]
    b = json.loads((pytester.path / "two.json").read_text())["suites"]
    assert [s["metrics"] for s in a] == [s["metrics"] for s in b]
    assert [s["cases"] for s in a] == [s["cases"] for s in b]
    assert all(s["passed"] and s["tables"]["judge"] == "offline" for s in a)
    assert {s["name"]: s["cases"]["errors"] for s in a} == {"rag_answers": 0, "rag_answers_generate": 0}
