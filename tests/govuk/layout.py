"""GOV.UK Chat's repository layout, rebuilt in a pytester directory.

``config/defaults/<task>.yaml`` carry the fields their configs carry (no ``task:``,
``claude_generation_model``, ``guardrail_type``, ``input_path`` from the repository root,
``generate: true``); ``data/<task>.jsonl`` hold the tables their own tests use, shaped as
their ``data/README.md`` describes. The expected figures are the ones their tests assert.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

JUDGE_MODEL = "openai.gpt-oss-120b-1:0"

RAG_METRICS: list[tuple[str, float]] = [
    ("faithfulness", 1.0),
    ("bias", 0.0),
    ("relevance", 0.8),
    ("factual_precision", 1.0),
    ("factual_recall", 1.0),
    ("absence_of_factual_contradictions", 1.0),
    ("context_relevancy", 0.8),
    ("coherence", 0.8),
]


def configs(judge_model: str = JUDGE_MODEL) -> dict[str, dict[str, Any]]:
    base = {"generate": True, "claude_generation_model": None}
    return {
        "jailbreak_guardrails": {"what": "Evaluating jailbreak guardrails", **base,
                                 "input_path": "data/jailbreak_guardrails.jsonl"},
        "output_guardrails": {"what": "Evaluating output guardrails", "guardrail_type": "answer_guardrails", **base,
                              "input_path": "data/output_guardrails.jsonl"},
        "question_router": {"what": "Evaluating question router", **base, "input_path": "data/question_router.jsonl"},
        "rag_answers": {
            "what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
            "claude_generation_model": None,
            "metrics": [{"name": n, "threshold": t, "model": judge_model, "temperature": 0.0} for n, t in RAG_METRICS],
            "n_runs": 2,
            # our judge prompts (the scripted judge's), whether or not DeepEval is installed:
            # these tests are about their files and config rules (DeepEval's: tests/rag)
            "deepeval_metrics": "never",
        },
        "retrieval": {"what": "Evaluating retrieval", "generate": True, "input_path": "data/retrieval.jsonl"},
        "topic_tagger": {"what": "Evaluating topic tagger", "generate": True, "input_path": "data/topic_tagger.jsonl"},
    }


def _jb(q: str, e: bool, a: bool) -> dict[str, Any]:
    return {"question": q, "expected_outcome": e, "actual_outcome": a, "model": "model_name"}


#: 4 TP, 3 TN, 1 FP, 1 FN: precision 0.8, recall 0.8.
JAILBREAK = [_jb("Q1", True, True), _jb("Q2", True, True), _jb("Q3", True, True), _jb("Q4", True, True),
             _jb("Q5", False, False), _jb("Q6", False, False), _jb("Q7", False, False),
             _jb("Q8", False, True), _jb("Q9", True, False)]


def _og(msg: str, e: bool, a: bool, eg: list[int], ag: list[int]) -> dict[str, Any]:
    names = ("g1", "g2", "g3")
    return {"message": msg, "expected_triggered": e, "actual_triggered": a,
            "expected_guardrails": {n: bool(v) for n, v in zip(names, eg, strict=True)},
            "actual_guardrails": {n: bool(v) for n, v in zip(names, ag, strict=True)}, "model": "model_name"}


OUTPUT_GUARDRAILS = [
    _og("Answer 1", True, True, [1, 0, 1], [1, 0, 1]),
    _og("Answer 2", True, True, [1, 0, 0], [1, 1, 0]),
    _og("Answer 3", True, True, [1, 1, 1], [1, 1, 0]),
    _og("Answer 4", False, False, [0, 0, 0], [0, 0, 0]),
    _og("Answer 5", False, True, [0, 0, 0], [1, 0, 0]),
    _og("Answer 6", True, False, [0, 1, 0], [0, 0, 0]),
]


def _qr(q: str, e: str, a: str, c: float, ans: str | None) -> dict[str, Any]:
    return {"question": q, "expected_outcome": e, "actual_outcome": a, "confidence_score": c, "answer": ans,
            "model": "model_name"}


QUESTION_ROUTER = [
    _qr("Q1", "genuine_rag", "genuine_rag", 0.95, None),
    _qr("Q2", "about_mps", "about_mps", 0.9, "This is an about mps answer"),
    _qr("Q3", "character_fun", "genuine_rag", 0.5, "This is a character fun answer"),
    _qr("Q4", "character_fun", "about_mps", 0.3, "This is a character fun answer"),
    _qr("Q5", "genuine_rag", "genuine_rag", 0.5, None),
]


def _hit(n: int, w: float = 0.9) -> dict[str, Any]:
    return {"exact_path": f"/path{n}", "chunk_uid": f"uid{n}", "weighted_score": w, "semantic_score": w}


def _rt(q: str, expected: list[int], actual: list[int]) -> dict[str, Any]:
    return {"question": q, "expected_exact_paths": [f"/path{n}" for n in expected],
            "expected_chunk_uids": [f"uid{n}" for n in expected], "expected_opensearch_index": None,
            "actual_opensearch_index": "test-index", "actual_search_results": [_hit(n) for n in actual]}


RETRIEVAL = [_rt("Q1", [1, 2], [1, 2]), _rt("Q2", [1], [3]), _rt("Q3", [1, 2], [1]),
             _rt("Q4", [1], [1, 2, 3]), _rt("Q5", [1, 2], [1, 2, 3])]


def _tt(q: str, ep: str, ap: str | None, es: str | None, as_: str | None, status: str = "success") -> dict[str, Any]:
    row = {"question": q, "status": status, "expected_primary_topic": ep, "actual_primary_topic": ap,
           "expected_secondary_topic": es, "actual_secondary_topic": as_,
           "error_message": None, "model": "model_name" if status == "success" else None}
    if status == "error":
        row["error_message"] = "An error occurred while processing the question"
    return row


TOPIC_TAGGER = [
    _tt("Q1", "benefits", "benefits", "tax", "tax"),
    _tt("Q2", "benefits", "tax", "tax", "benefits"),
    _tt("Q3", "benefits", "benefits", "tax", None),
    _tt("Q4", "tax", "childcare", "benefits", "tax"),
    _tt("Q5", "benefits", "tax", "tax", None),
    _tt("Q6", "benefits", "tax", None, "driving"),
    _tt("Q7", "benefits", None, None, None, status="error"),
]

_CONTEXT = {
    "exact_path": "/child-benefit/how-to-claim",
    "title": "Child Benefit",
    "heading_hierarchy": ["How to claim"],
    "description": "How to claim Child Benefit",
    "html_content": "<p>You can claim Child Benefit online. Claims can be backdated by up to 3 months.</p>",
    "base_path": "/child-benefit",
}

RAG_ANSWERS = [
    {"question": "How do I claim Child Benefit?",
     "ideal_answer": "You can claim Child Benefit online. Claims can be backdated by up to 3 months.",
     "llm_answer": "You can claim Child Benefit online. Your claim can be backdated by up to 3 months.",
     "structured_contexts": [_CONTEXT], "actual_opensearch_index": "chunked_content", "model": "model_name"},
    {"question": "Can I backdate a Child Benefit claim?",
     "ideal_answer": "Yes, by up to 3 months.",
     "llm_answer": "Yes, a claim can be backdated by up to 6 months.",
     "structured_contexts": [_CONTEXT], "actual_opensearch_index": "chunked_content", "model": "model_name"},
]

DATA: dict[str, list[dict[str, Any]]] = {
    "jailbreak_guardrails": JAILBREAK,
    "output_guardrails": OUTPUT_GUARDRAILS,
    "question_router": QUESTION_ROUTER,
    "rag_answers": RAG_ANSWERS,
    "retrieval": RETRIEVAL,
    "topic_tagger": TOPIC_TAGGER,
}


def build(root: Path, judge_model: str = JUDGE_MODEL) -> None:
    """Write config/defaults/*.yaml and data/*.jsonl under ``root``."""
    (root / "config" / "defaults").mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    for task, cfg in configs(judge_model).items():
        (root / "config" / "defaults" / f"{task}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    for task, rows in DATA.items():
        (root / "data" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def metric(summary: dict[str, Any], suite: str, path: str) -> Any:
    """A metric value (``path`` dotted) of the suite named ``suite`` in a JSON summary."""
    found = [s for s in summary["suites"] if s["name"] == suite]
    assert found, f"no suite {suite!r} in {[s['name'] for s in summary['suites']]}"
    node: Any = found[0]["metrics"]
    for part in path.split("."):
        node = node[part]
    return node["value"]


def suite_of(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in summary["suites"] if s["name"] == name)
