"""A small evaluation project for the report tests, and readers of the reports it produces.

The project has a binary suite (jailbreak_guardrails), a multiclass suite
(question_router) and a suite of a probe task registered in its conftest that scores
cases on a 0-1 scale with judge prompts, replies and reasoning, per-group accuracies and
baselines (the shapes of the RAG and HaluEval results). Evaluation data carries XSS
payloads in questions, answers, judge replies, labels and case ids: a report that lets
any of them run sets ``window.__xss``.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.reports.detail_store import decode

XSS = (
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=1">',
    "</script><script>window.__xss=1</script>",
    "<svg onload=window.__xss=1>",
    "--><img src=x onerror=window.__xss=1>",
)
#: A case id that survives node-id sanitising (no whitespace) and is still markup.
XSS_ID = "<img/src=x/onerror=window.__xss=1>"

PROBE_CONFTEST = '''
from pytest_evals.model.metric_value import proportion, score_summary
from pytest_evals.model.errors import JudgeError
from pytest_evals.tasks import register_task
from pytest_evals.tasks.task_contract import Task


class ScoredProbe(Task):
    """Judge-style scores in [0, 1] with a per-case threshold (like rag_answers)."""

    name = "scored_probe"

    def validate_case(self, data, ref):
        return data

    async def evaluate(self, case, ref, ctx):
        if case.get("judge_error"):
            raise JudgeError("judge reply is not JSON", raw_reply=case["judge_error"])
        score = float(case["score"])
        result = self.new_result(ref)
        result.scores = {"faithfulness": score, "relevance": float(case["relevance"])}
        result.data = {
            "group": case["group"],
            "correct": score >= 0.5,
            "metrics": {"faithfulness": {"score": score, "threshold": 0.5, "passed": score >= 0.5}},
        }
        result.details = {
            "question": case["question"],
            "llm_answer": case["answer"],
            "judge_prompt": [
                {"role": "system", "content": "You judge faithfulness."},
                {"role": "user", "content": "Question: " + case["question"] + "\\nAnswer: " + case["answer"]},
            ],
            "judge_reply": case["reply"],
            "reasoning": case["reasoning"],
        }
        if score < 0.5:
            result.status = "failed"
            result.message = "faithfulness " + str(score) + " below 0.5: " + case["reasoning"]
        return result

    def aggregate(self, results):
        groups = sorted({r.data["group"] for r in results})
        tree = {"overall": {"accuracy": proportion(sum(r.data["correct"] for r in results), len(results), "no cases")}}
        for g in groups:
            members = [r for r in results if r.data["group"] == g]
            tree[g] = {"accuracy": proportion(sum(r.data["correct"] for r in members), len(members), "no cases")}
        tree["faithfulness"] = score_summary([r.scores["faithfulness"] for r in results], 0.5)
        tree["baselines"] = {
            "always_pass": {
                g: {"accuracy": proportion(sum(r.data["correct"] for r in results if g == "overall" or r.data["group"] == g),
                                           sum(1 for r in results if g == "overall" or r.data["group"] == g), "no cases")}
                for g in ["overall", *groups]
            }
        }
        return tree, {}


register_task("scored_probe", ScoredProbe)
'''


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def make_project(pytester: pytest.Pytester, *, scored_cases: int = 12, long_text: int = 0) -> None:
    """Write the three suites; ``scored_cases``/``long_text`` make the probe suite large."""
    root = pytester.path
    pytester.makeconftest(PROBE_CONFTEST)
    # An ordinary test whose node id is markup (pytest-html does not escape test ids).
    pytester.makepyfile(
        test_plain=f"""
        import pytest

        @pytest.mark.parametrize("value", [{XSS[1]!r}])
        def test_plain(value):
            assert value
        """
    )
    jb = [
        {"id": "jb-1", "question": XSS[0], "expected_outcome": True, "actual_outcome": True},
        {"id": "jb-2", "question": XSS[1], "expected_outcome": True, "actual_outcome": False},
        {"id": XSS_ID, "question": XSS[2], "expected_outcome": False, "actual_outcome": True},
        {"id": "jb-4", "question": "How do I renew my passport?", "expected_outcome": False, "actual_outcome": False},
        {"id": "jb-5", "question": XSS[3], "expected_outcome": True, "actual_outcome": True},
        {"id": "jb-6", "question": "What is the minimum wage?", "expected_outcome": False, "actual_outcome": False},
    ]
    _jsonl(root / "data" / "jb.jsonl", jb)
    (root / "jb.eval.yaml").write_text(
        "task: jailbreak_guardrails\nwhat: guardrail <b>flags</b> jailbreaks\ninput_path: data/jb.jsonl\n"
        "thresholds:\n  recall: {min: 0.5}\n  precision: {min: 0.9}\n",
        encoding="utf-8",
    )
    router = [
        {"id": f"qr-{i}", "question": q, "expected_outcome": e, "actual_outcome": a}
        for i, (q, e, a) in enumerate(
            [
                ("hi", "greetings", "greetings"),
                ("thanks", "gratitude", "greetings"),
                ("renew passport", "genuine_rag", "genuine_rag"),
                (XSS[4], "<b onmouseover=window.__xss=1>label</b>", "genuine_rag"),
                ("tax", "genuine_rag", "genuine_rag"),
                ("hello", "greetings", "greetings"),
            ]
        )
    ]
    _jsonl(root / "data" / "router.jsonl", router)
    (root / "router.eval.yaml").write_text(
        "task: question_router\ninput_path: data/router.jsonl\nthresholds:\n  accuracy: {min: 0.5}\n",
        encoding="utf-8",
    )
    pad = "lorem ipsum dolor sit amet " * (long_text // 27 + 1) if long_text else ""
    scored = []
    for i in range(scored_cases):
        score = round((i * 37 % 100) / 100, 2)
        scored.append(
            {
                "id": f"sc-{i:04d}",
                "group": ("qa", "dialogue", "summarization")[i % 3],
                "score": score,
                "relevance": round(1 - score / 2, 2),
                "question": (XSS[i % len(XSS)] if i < 5 else f"question {i}") + pad[: long_text],
                "answer": f"answer {i} " + XSS[(i + 1) % len(XSS)],
                "reply": json.dumps({"verdict": "no", "reason": XSS[(i + 2) % len(XSS)]}),
                "reasoning": f"reasoning {i}: the answer says {XSS[(i + 3) % len(XSS)]}",
            }
        )
    scored.append({"id": "sc-judge-error", "group": "qa", "judge_error": "not json " + XSS[0]})
    _jsonl(root / "data" / "scored.jsonl", scored)
    (root / "scored.eval.yaml").write_text(
        "task: scored_probe\ninput_path: data/scored.jsonl\nthresholds:\n  overall:\n    accuracy: {min: 0.3}\n"
        "  errors: {max: 1}\n",
        encoding="utf-8",
    )


# -- reading a report without a browser ----------------------------------------------------

_BLOB = re.compile(r'<div id="data-container" data-jsonblob="(.*?)"></div>', re.S)
_STORE = re.compile(r'<script type="application/json" id="evals-case-data" data-encoding="([\w-]+)"[^>]*>(.*?)</script>', re.S)
_SUMMARY = re.compile(r"<div id=evals-summary.*?</section></div>", re.S)


def table_data(page: str) -> dict[str, Any]:
    """pytest-html's data blob (every row's cells, logs and extras)."""
    match = _BLOB.search(page)
    assert match, "no pytest-html data blob in the report"
    return json.loads(html.unescape(match.group(1)))


def store_entries(page: str) -> list[dict[str, Any]]:
    match = _STORE.search(page)
    assert match, "no case store in the report"
    return decode(match.group(1), match.group(2))


def store_encoding(page: str) -> str:
    match = _STORE.search(page)
    assert match
    return match.group(1)


def summary_html(page: str) -> str:
    match = _SUMMARY.search(page)
    assert match, "no evaluation summary in the report"
    return match.group(0)


def normalised_rows(page: str) -> dict[str, list[str]]:
    """Row cells by test id, without what legitimately differs between runs."""
    rows = {}
    for test_id, reports in table_data(page)["tests"].items():
        for r in reports:
            cells = [c for c in r["resultsTableRow"] if "col-duration" not in c]
            rows[test_id] = [re.sub(r"data-k=\d+", "data-k=#", c) for c in cells]
    return rows
