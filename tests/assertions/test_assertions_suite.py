"""An offline assertions suite run as a user runs it (plain and ``-n 2``), every
aggregate against an independent computation: jsonschema, sacreBLEU, rouge-score and
the embedded model loaded by sentence-transformers itself."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scipy.stats import beta

from .conftest import read_json, suite_summary, write_suite

SCHEMA = {"type": "object", "required": ["ticket"], "properties": {"ticket": {"type": "string", "pattern": "^T-\\d+$"}}}

CASES: list[dict[str, Any]] = [
    {"id": "c1", "question": "Can I return shoes?", "output": "Yes, you can return shoes within 30 days for a refund.",
     "reference": "You can return shoes within 30 days and get a refund."},
    {"id": "c2", "question": "How long is delivery?", "output": "Delivery takes 3 to 5 working days.",
     "reference": "Delivery usually takes 3 to 5 working days."},
    {"id": "c3", "question": "Do you sell gift cards?", "output": "I am not sure about that, sorry.",
     "reference": "Yes, gift cards from 10 to 200 euros are sold on the Gifts page."},
    {"id": "c4", "question": "Open a ticket", "output": '{"ticket": "T-88"}', "references": ['{"ticket": "T-88"}'],
     "assert": [{"type": "json_schema", "schema": SCHEMA, "name": "ticket_schema"}]},
    {"id": "c5", "question": "Open a ticket", "output": '{"ticket": "88"}', "references": ['{"ticket": "T-89"}'],
     "assert": [{"type": "json_schema", "schema": SCHEMA, "name": "ticket_schema"}]},
    {"id": "c6", "question": "Is there a refund for late delivery?", "output": "Yes, a refund of the delivery fee is given when a parcel is late.",
     "references": ["Late parcels get their delivery fee refunded.", "If the parcel is late, we refund the delivery fee."]},
]

SUITE_ASSERT = [
    {"type": "sacrebleu", "threshold": 20},
    {"type": "chrf", "threshold": 40},
    {"type": "rouge", "rouge_types": ["rougeL"], "threshold": 0.4},
    {"type": "similar", "threshold": 0.7, "weight": 2},
    {"type": "not_icontains", "value": "not sure"},
]


def cp(k: int, n: int) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
    return lo, hi


@pytest.fixture(scope="module")
def embed() -> Any:
    from sentence_transformers import SentenceTransformer

    from pytest_evals.metrics.reference.bertscore import embedded_model_path

    model = SentenceTransformer(str(embedded_model_path()), device="cpu")
    return lambda texts: model.encode(texts, normalize_embeddings=True)


def independent(embed: Any) -> dict[str, dict[str, tuple[bool, float]]]:
    """case id -> assertion name -> (passed, value), from the libraries themselves."""
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU, CHRF

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    out: dict[str, dict[str, tuple[bool, float]]] = {}
    for case in CASES:
        refs = case.get("references") or [case["reference"]]
        hyp = case["output"]
        bleu = BLEU(effective_order=True).sentence_score(hyp, refs).score
        chrf = CHRF().sentence_score(hyp, refs).score
        rouge = scorer.score_multi(refs, hyp)["rougeL"].fmeasure
        vecs = embed([hyp, *refs])
        sim = max(float(vecs[0] @ vecs[i]) for i in range(1, len(refs) + 1))
        got = {
            "sacrebleu": (bleu >= 20, bleu),
            "chrf": (chrf >= 40, chrf),
            "rouge": (rouge >= 0.4, rouge),
            "similar": (sim >= 0.7, sim),
            "not_icontains": ("not sure" not in hyp.lower(), float("not sure" not in hyp.lower())),
        }
        if "assert" in case:
            try:
                jsonschema.validate(json.loads(hyp), SCHEMA)
                ok = True
            except jsonschema.ValidationError:
                ok = False
            got["ticket_schema"] = (ok, float(ok))
        out[case["id"]] = got
    return out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_aggregates_equal_the_libraries(pytester: pytest.Pytester, embed: Any, workers: list[str]) -> None:
    write_suite(pytester.path, CASES, asserts=SUITE_ASSERT,
                thresholds={"per_assertion": {"similar": {"pass_rate": {"min": 0.5}}}})
    result = pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    truth = independent(embed)
    metrics = suite["metrics"]
    per = metrics["per_assertion"]
    weights = {"similar": 2.0}
    for name in ["sacrebleu", "chrf", "rouge", "similar", "not_icontains", "ticket_schema"]:
        rows = [truth[c][name] for c in truth if name in truth[c]]
        k, n = sum(p for p, _ in rows), len(rows)
        assert per[name]["pass_rate"]["value"] == pytest.approx(k / n), name
        assert (per[name]["pass_rate"]["ci_low"], per[name]["pass_rate"]["ci_high"]) == pytest.approx(cp(k, n)), name
        assert per[name]["mean"]["value"] == pytest.approx(sum(v for _, v in rows) / n, abs=1e-6), name
    passed = [all(p for p, _ in truth[c].values()) for c in truth]
    assert metrics["pass_rate"]["value"] == pytest.approx(sum(passed) / len(passed))
    assert (metrics["pass_rate"]["ci_low"], metrics["pass_rate"]["ci_high"]) == pytest.approx(cp(sum(passed), len(passed)))
    # The weighted score: BLEU and chrF on their 0-100 scale, similar counting twice.
    scores = []
    for c in truth:
        parts = {n: (v / 100 if n in ("sacrebleu", "chrf") else float(p) if n in ("not_icontains", "ticket_schema")
                     else v) for n, (p, v) in truth[c].items()}
        w = sum(weights.get(n, 1.0) for n in parts)
        scores.append(sum(weights.get(n, 1.0) * min(max(s, 0.0), 1.0) for n, s in parts.items()) / w)
    assert metrics["score"]["mean"]["value"] == pytest.approx(sum(scores) / len(scores), abs=1e-6)
    statuses = {r["case_id"]: r["status"] for r in suite["case_results"]}
    assert statuses == {c: ("passed" if ok else "failed") for c, ok in zip(truth, passed, strict=True)}
    # The gate on one assertion's pass rate decides the exit status.
    gate_ok = sum(truth[c]["similar"][0] for c in truth) / len(truth) >= 0.5
    assert suite["passed"] is gate_ok
    assert result.ret == (0 if gate_ok else 1)
    assert not re.search(r"jailbreak|GOV\.UK|government", result.stdout.str(), re.IGNORECASE)


def test_weighted_pass_rule_uses_the_suite_threshold(pytester: pytest.Pytester) -> None:
    cases = [{"id": "a", "output": "alpha beta"}, {"id": "b", "output": "alpha"}, {"id": "c", "output": "gamma"}]
    asserts = [{"type": "contains", "value": "alpha", "weight": 3}, {"type": "contains", "value": "beta"}]
    write_suite(pytester.path, cases, asserts=asserts, threshold=0.7)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    by_id = {r["case_id"]: r for r in suite["case_results"]}
    # a: 4/4, b: 3/4 = 0.75 >= 0.7 passes although 'beta' is missing, c: 0.
    assert {k: r["status"] for k, r in by_id.items()} == {"a": "passed", "b": "passed", "c": "failed"}
    assert [by_id[k]["scores"]["score"] for k in "abc"] == pytest.approx([1.0, 0.75, 0.0])
    assert "weighted score 0 < 0.7" in by_id["c"]["message"]
    # The same suite under "all": b fails.
    write_suite(pytester.path, cases, asserts=asserts, threshold=0.7, pass_rule="all")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"))
    assert {r["case_id"]: r["status"] for r in suite["case_results"]}["b"] == "failed"
    assert suite["metrics"]["pass_rate"]["value"] == pytest.approx(1 / 3)


def test_the_support_example_passes_offline(pytester: pytest.Pytester) -> None:
    root = Path(__file__).resolve().parents[2] / "eval_suites"
    suite_text = (root / "support_answers.eval.yaml").read_text(encoding="utf-8")
    assert len(suite_text.strip().splitlines()) <= 15
    (pytester.path / "data" / "support").mkdir(parents=True)
    (pytester.path / "data" / "support" / "answers.jsonl").write_text(
        (root / "data" / "support" / "answers.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (pytester.path / "support_answers.eval.yaml").write_text(suite_text, encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "s.json")
    suite = suite_summary(read_json(pytester.path / "s.json"), "support_answers")
    assert result.ret == 0 and suite["passed"] is True
    assert suite["cases"]["total"] == 30 and suite["cases"]["errors"] == 0
    out = result.stdout.str()
    assert not re.search(r"jailbreak|GOV\.UK|government", out, re.IGNORECASE)
