"""GOV.UK Chat's rag_answers metrics: our run of their config equals DeepEval's own run (issue 28).

A seeded set of 100 cases in their layout (``config/defaults/rag_answers.yaml``, their
JSONL fields) is scored twice with a deterministic judge answering by the same rules
(:mod:`.deepeval_script`): once by our run, through the real client and the loopback
server, with our metric names mapped to the DeepEval classes their config builds; once
by DeepEval alone, each class built as their config builds it and ``metric.measure``
called on the test case their code builds (its retrieval context written out here from
their ``to_flattened_string``). Every per-case score, reason and verdict, and every
aggregate, must be equal; the run's settings name the mapping used.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import JudgeServer, inline_results
from .deepeval_script import step_of, stub_model

try:
    import deepeval  # noqa: F401
except ImportError:
    # The dev extra installs DeepEval: in CI its absence is a broken install, not a skip.
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise
    pytest.skip("DeepEval is not installed (the 'deepeval' extra)", allow_module_level=True)

#: Their config's metric name -> (DeepEval class, threshold, options their config passes).
THEIR_METRICS: dict[str, tuple[str, float, dict[str, Any]]] = {
    "faithfulness": ("FaithfulnessMetric", 1.0, {"penalize_ambiguous_claims": True}),
    "bias": ("BiasMetric", 0.0, {}),
    "relevance": ("AnswerRelevancyMetric", 0.8, {}),
}
N_CASES = 100


def _chunk(rng: random.Random, days: int, fee: int) -> dict[str, Any]:
    heading = rng.choice([[], ["Refunds"], ["Billing", "Refunds"], ["Billing", "", "Card payments"]])
    return {
        "title": rng.choice(["Refunds", "Getting your money back", "Card payments"]),
        "heading_hierarchy": heading,
        "description": rng.choice([None, "How refunds work", ""]),
        "html_content": rng.choice([
            f"<p>Refunds reach your card within {days} working days.</p>",
            f"<h2>Fees</h2>\n<p>A late fee of &pound;{fee} applies.</p><ul><li>{days} working days</li></ul>",
            f"<p>You&#39;ll get an email. Refunds take {days} working days &amp; cost &pound;{fee}.</p>",
        ]),
        "exact_path": f"/refunds#{rng.randrange(1000)}",
        "base_path": "/refunds",
    }


def _answer(rng: random.Random, days: int, fee: int) -> str:
    parts = []
    for _ in range(rng.randint(1, 4)):
        parts.append(rng.choice([
            f"Refunds reach your card within {days} working days.",
            f"Refunds reach your card within {days + rng.randint(1, 9)} working days.",
            f"The late fee is £{fee}.",
            f"The late fee is £{fee * 2}.",
            "Acme Premium refunds are faster.",
            "I think the fee is fair.",
            "I think Premium is obviously worth it.",
            "You get an email when it is done.",
        ]))
    return " ".join(parts)


def seeded_cases(seed: int = 2811) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows = []
    for i in range(N_CASES):
        days, fee = rng.randint(2, 30), rng.randint(5, 90)
        rows.append({
            "id": f"case-{i:03d}",
            "question": rng.choice(["How long does a refund take?", "Is there a late fee?", "Should I buy Premium?"]),
            "ideal_answer": f"Refunds take {days} working days.",
            "llm_answer": _answer(rng, days, fee),
            "structured_contexts": [_chunk(rng, days, fee) for _ in range(rng.randint(1, 3))],
            "expected_opensearch_index": "chunked_content",
            "actual_opensearch_index": "chunked_content",
            "model": "model_name",
        })
    return rows


def their_flattened(chunk: dict[str, Any]) -> str:
    """Their ``StructuredContext.to_flattened_string``, written out: raw HTML, ``str()`` of
    the description (``None`` for null), the headings joined with `` > ``."""
    return (f"{chunk['title']}\n{' > '.join(chunk['heading_hierarchy'])}\n{chunk['description']}\n\n"
            f"{chunk['html_content']}")


def deepeval_alone(row: dict[str, Any], name: str) -> Any:
    """One metric measured by DeepEval itself, as their config builds it."""
    import deepeval.metrics
    from deepeval.test_case import LLMTestCase

    cls_name, threshold, options = THEIR_METRICS[name]
    metric = getattr(deepeval.metrics, cls_name)(threshold=threshold, model=stub_model(), **options)
    test_case = LLMTestCase(input=row["question"], name=row["id"], expected_output=row["ideal_answer"],
                            actual_output=row["llm_answer"],
                            retrieval_context=[their_flattened(c) for c in row["structured_contexts"]])
    metric.measure(test_case, _show_indicator=False)
    return metric


def _their_layout(root: Path, rows: list[dict[str, Any]]) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    config = {"what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
              "claude_generation_model": None,
              "metrics": [{"name": n, "threshold": t, "model": "openai.gpt-oss-120b-1:0", "temperature": 0.0}
                          for n, (_, t, _) in THEIR_METRICS.items()],
              "n_runs": 1}
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                                                   encoding="utf-8")
    (root / "data" / "rag_answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_seeded_cases_cover_every_rule() -> None:
    rows = seeded_cases()
    assert len(rows) == N_CASES and len({r["id"] for r in rows}) == N_CASES
    assert seeded_cases() == rows
    answers = " ".join(r["llm_answer"] for r in rows)
    assert "Premium" in answers and "obviously" in answers and "I think the fee" in answers
    chunks = [c for r in rows for c in r["structured_contexts"]]
    assert any(c["description"] is None for c in chunks) and any(c["heading_hierarchy"] == [] for c in chunks)


@pytest.mark.slow
def test_their_config_through_our_run_equals_deepeval_alone(pytester: pytest.Pytester,
                                                           judge_server: JudgeServer) -> None:
    rows = seeded_cases()
    _their_layout(pytester.path, rows)
    results = inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                                 "-p", "no:cacheprovider", "--evals-json", "out.json"))
    suite = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["suites"][0]
    assert suite["cases"]["errors"] == 0 and suite["cases"]["total"] == N_CASES
    # every request was one of DeepEval's prompts, naming their judge model
    requests = judge_server.judge.requests
    assert requests and all(step_of(r["messages"][-1]["content"]) for r in requests)
    assert {r["model"] for r in requests} == {"openai.gpt-oss-120b-1:0"}

    written = {c["case_id"]: c for c in suite["case_results"]}
    assert set(written) == set(results) == {r["id"] for r in rows}
    alone: dict[str, dict[str, Any]] = {name: {} for name in THEIR_METRICS}
    for row in rows:
        ours = results[row["id"]]
        for name in THEIR_METRICS:
            metric = deepeval_alone(row, name)
            alone[name][row["id"]] = metric
            assert ours.scores[name] == written[row["id"]]["scores"][name] == metric.score, (row["id"], name)
            run = ours.details["metrics"][name]["runs"][0]
            assert run["reason"] == metric.reason
            evidence = run["verdicts"]
            assert evidence["deepeval"]["class"] == f"deepeval.metrics:{THEIR_METRICS[name][0]}"
            assert evidence["deepeval"]["success"] is metric.success
            assert evidence["verdicts"] == [v.model_dump(mode="json") for v in metric.verdicts]
        all_pass = all(alone[n][row["id"]].success for n in THEIR_METRICS)
        assert ours.status == written[row["id"]]["status"] == ("passed" if all_pass else "failed"), row["id"]

    # the judge read exactly what DeepEval alone asks: the same prompts (the context text
    # built as their code builds it), as many of them (repeats answered by our cache)
    theirs = [p for by_case in alone.values() for m in by_case.values() for p in m.model.prompts]
    assert {r["messages"][0]["content"] for r in requests} == set(theirs)
    assert all(len(r["messages"]) == 1 for r in requests)
    asked = sum(results[i].details["metrics"][n]["runs"][0]["verdicts"]["deepeval"]["requests"]
                for i in results for n in THEIR_METRICS)
    assert asked == len(theirs) > len(requests)

    # the rules give a spread: neither all passing nor all failing, for every metric
    for name in THEIR_METRICS:
        scores = [m.score for m in alone[name].values()]
        successes = [m.success for m in alone[name].values()]
        assert len(set(scores)) > 2 and any(successes) and not all(successes), name
        aggregate = suite["metrics"][name]
        assert aggregate["mean"]["value"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)
        assert aggregate["mean"]["n"] == N_CASES
        assert aggregate["pass_rate"]["value"] == pytest.approx(sum(successes) / len(successes), abs=1e-12)

    # the run's settings say which mapping scored their names
    assert suite["settings"]["deepeval_metrics"] == {
        "mode": "auto", "mapping": "govuk", "deepeval": "4.1.8",
        "classes": {n: f"deepeval.metrics:{c}" for n, (c, _, _) in THEIR_METRICS.items()},
    }
    # and that no system message went with DeepEval's prompts (GOV.UK's wording is ours)
    for name in THEIR_METRICS:
        judge = suite["settings"]["judges"][name]
        assert judge["persona"] is None and judge["system_sha256"] is None
        assert judge["deepeval"] == f"deepeval.metrics:{THEIR_METRICS[name][0]}"
