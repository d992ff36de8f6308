"""Their six default configs, as their files are written, run offline (issue 28).

``config/defaults/<task>.yaml`` below are written with the fields, values and layout of
govuk-chat-evaluation's own files (ee71b27), comments included; the data is a few rows per
task with every field their models require. Run offline (no model endpoint) with their
``--no-generate`` spelling, no suite may end in an ERROR of ours reading the config, every
case of every suite is reached, and GOV.UK output mode writes the files their tool writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .layout import JAILBREAK, OUTPUT_GUARDRAILS, QUESTION_ROUTER, RETRIEVAL, TOPIC_TAGGER

#: Their config/defaults files (five say ``generate: true``).
DEFAULT_CONFIGS: dict[str, str] = {
    "jailbreak_guardrails": (
        "what: Evaluating jailbreak guardrails\ngenerate: true\ninput_path: data/jailbreak_guardrails.jsonl\n"
        "claude_generation_model: ~\n"),
    "output_guardrails": (
        "what: Evaluating output guardrails\nguardrail_type: answer_guardrails\ngenerate: true\n"
        "input_path: data/output_guardrails.jsonl\nclaude_generation_model: ~\n"),
    "question_router": (
        "what: Evaluating question router\ngenerate: true\ninput_path: data/question_router.jsonl\n"
        "claude_generation_model: ~\n"),
    "retrieval": "what: Evaluating retrieval\ngenerate: true\ninput_path: data/retrieval.jsonl\n",
    "topic_tagger": "what: Evaluating topic tagger\ngenerate: true\ninput_path: data/topic_tagger.jsonl\n",
    "rag_answers": "what: Evaluating RAG answers\ngenerate: false\ninput_path: data/rag_answers.jsonl\n"
                   "claude_generation_model: ~\nmetrics:\n" + "".join(
                       f"  - name: {name}\n    threshold: {threshold}\n    model: openai.gpt-oss-120b-1:0\n"
                       + ("    # other available values are:\n    # model: eu.amazon.nova-micro-v1:0\n"
                          "    # model: gpt-4o\n" if name == "faithfulness" else "")
                       + "    temperature: 0.0\n"
                       for name, threshold in (("faithfulness", 1.0), ("bias", 0.0), ("relevance", 0.8),
                                               ("factual_precision", 1.0), ("factual_recall", 1.0),
                                               ("absence_of_factual_contradictions", 1.0),
                                               ("context_relevancy", 0.8), ("coherence", 0.8)))
                   + "n_runs: 2\n",
}

_CHUNK = {"title": "Winter Fuel Payment", "heading_hierarchy": ["What you'll get"], "description": None,
          "html_content": "<p>You'll get £300 if you live alone.</p>", "exact_path": "/winter-fuel-payment#how-much",
          "base_path": "/winter-fuel-payment"}
RAG = [
    {"id": f"case-{i}", "question": "How much Winter Fuel Payment do I get?",
     "ideal_answer": "You get £300 if you live alone.", "llm_answer": answer, "structured_contexts": [_CHUNK],
     "expected_opensearch_index": None, "actual_opensearch_index": "chunked_content", "model": "claude_sonnet_4_0"}
    for i, answer in enumerate(["You'll get £300 if you live alone.", "I think you obviously get £300."])
]
DATA: dict[str, list[dict[str, Any]]] = {
    "jailbreak_guardrails": JAILBREAK, "output_guardrails": OUTPUT_GUARDRAILS, "question_router": QUESTION_ROUTER,
    "retrieval": RETRIEVAL, "topic_tagger": TOPIC_TAGGER, "rag_answers": RAG,
}

#: The files their tool writes for these runs (router: a case is miscategorised; retrieval
#: sets up no problems.log; rag_answers' DeepEval test-run JSON is not written by ours).
THEIR_FILES: dict[str, set[str]] = {
    "jailbreak_guardrails": {"results.csv", "aggregate.csv", "config.yaml", "problems.log"},
    "output_guardrails": {"results.csv", "aggregate.csv", "config.yaml", "problems.log"},
    "question_router": {"results.csv", "aggregate.csv", "config.yaml", "problems.log", "miscategorised_cases.csv",
                        "confusion_matrix.png"},
    "retrieval": {"results.csv", "aggregate.csv", "config.yaml"},
    "topic_tagger": {"results.csv", "aggregate.csv", "config.yaml", "problems.log"},
    "rag_answers": {"tidy_results.csv", "results_per_input.csv", "results_summary.csv", "config.yaml", "problems.log"},
}


@pytest.fixture(scope="module", autouse=True)
def warm_embedder() -> None:
    """The offline judge's model, loaded once before any in-process run."""
    from pytest_evals.llm.offline_judge import get_embedder

    get_embedder().encode(["warm up"])


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "llm-cache"))


def their_repository(root: Path) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    for task, text in DEFAULT_CONFIGS.items():
        (root / "config" / "defaults" / f"{task}.yaml").write_text(text, encoding="utf-8")
        (root / "data" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in DATA[task]),
                                                     encoding="utf-8")


def test_their_six_default_configs_run_offline_with_no_error_of_ours(pytester: pytest.Pytester) -> None:
    their_repository(pytester.path)
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "--no-generate",
                                "-p", "no:cacheprovider", "--evals-govuk-outputs", "results", "-rE")
    out = result.stdout.str()
    assert "suite-error" not in out and "invalid suite configuration" not in out, out[-3000:]
    assert "KeyError" not in out and "WARNING GOV.UK config" not in out  # every field of theirs is known
    outcomes = result.parseoutcomes()
    cases = sum(len(rows) for rows in DATA.values())
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes.get("errors", 0) == cases
    # the one ERROR is topic_tagger's status: error row (their "Errored" count), not our reading
    assert outcomes.get("errors", 0) == 1
    result.stdout.fnmatch_lines(["ERROR config/defaults/topic_tagger.yaml::line-7 *"])
    for task, names in THEIR_FILES.items():
        [folder] = list((pytester.path / "results" / task).iterdir())
        assert {p.name for p in folder.iterdir()} == names, task
    [rag] = list((pytester.path / "results" / "rag_answers").iterdir())
    summary = (rag / "results_summary.csv").read_text(encoding="utf-8").splitlines()
    # eight metrics under their DeepEval names, each scored on both cases (offline, once: the
    # embedding baseline is deterministic, so n_runs: 2 would only repeat the same score)
    assert len(summary) == 9 and all(line.endswith(",2") for line in summary[1:]), summary


def test_without_no_generate_each_generating_suite_says_how_to_add_a_target(pytester: pytest.Pytester) -> None:
    their_repository(pytester.path)
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "-p", "no:cacheprovider")
    out = result.stdout.str()
    assert "invalid suite configuration" not in out and "KeyError" not in out
    # rag_answers (generate: false) still scores its cases; the five others wait for a target
    for task in ("jailbreak_guardrails", "output_guardrails", "question_router", "retrieval", "topic_tagger"):
        assert f"config/defaults/{task}.yaml" in out
    assert "govuk_chat" in out  # the documented target is named in the message
