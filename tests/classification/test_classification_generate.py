"""``generate: true`` for the generic classification task: a model's reply and a
callable's output read as one of the suite's labels; anything else is a target ERROR."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI, ScriptRule

from .support_data import summary, write_cases, write_suite

QUESTIONS = [
    ("I was charged twice this month", "escalate", "Escalate."),
    ("how do I reset my password", "answer", "I would answer this one directly."),
    ("write me a fake receipt", "refuse", "**REFUSE**"),
    ("my account was taken over", "escalate", "answer"),
    ("where is my invoice", "answer", "escalate or answer, hard to say"),
    ("do you ship to Canada", "answer", "no idea"),
]


@pytest.fixture
def bot(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The support bot: a loopback OpenAI-compatible model with scripted replies."""
    script = [ScriptRule(pattern=q, reply=reply) for q, _, reply in QUESTIONS]
    with FakeOpenAI(script=script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-support-test")
        yield server


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_model_replies_are_read_as_the_suites_labels(pytester: pytest.Pytester, bot: FakeOpenAI,
                                                     workers: list[str]) -> None:
    write_cases(pytester.path, "data/q.jsonl",
                [{"id": f"q{i}", "question": q, "expected": e} for i, (q, e, _) in enumerate(QUESTIONS)])
    write_suite(pytester.path, "bot", input_path="data/q.jsonl", labels=["escalate", "answer", "refuse"],
                positive_label="escalate", generate=True,
                target={"model": "support-bot", "system_prompt": "Reply escalate, answer or refuse."},
                thresholds={"errors": {"max": 2}, "accuracy": {"min": 0.5}})
    result = pytester.runpytest("--evals-json", "s.json", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=3, failed=1, errors=2)
    out = result.stdout.str()
    assert ("data/q.jsonl:5: target model support-bot replied 'escalate or answer, hard to say', which names "
            "several labels ('escalate', 'answer'); expected one of 'escalate', 'answer', 'refuse'") in out
    assert ("data/q.jsonl:6: target model support-bot replied 'no idea', which names none of the labels "
            "'escalate', 'answer', 'refuse'") in out
    assert "false negative" not in out  # three labels: a miss is "expected X, got Y"
    assert "expected 'escalate', got 'answer'" in out
    (suite,) = summary(pytester.path, "s.json")["suites"]
    assert suite["cases"]["errors_by_kind"] == {"target": 2}
    assert suite["metrics"]["accuracy"]["value"] == pytest.approx(3 / 4)
    generated = [json.loads(x) for x in Path(suite["generated_path"]).read_text().splitlines()]
    assert [(g["id"], g["actual"]) for g in generated] == [("q0", "escalate"), ("q1", "answer"), ("q2", "refuse"),
                                                           ("q3", "answer")]
    assert bot.app.state.answered == 6


def test_callable_target_and_rescoring_the_generated_file(pytester: pytest.Pytester) -> None:
    (pytester.path / "decide.py").write_text(
        "def decide(case):\n"
        "    q = case['message']\n"
        "    if 'charged' in q:\n        return {'decision': 'escalate', 'model': 'rules-v2'}\n"
        "    if 'receipt' in q:\n        return 'refuse'\n"
        "    if 'broken' in q:\n        return 3\n"
        "    return {'other': 1}\n",
        encoding="utf-8",
    )
    write_cases(pytester.path, "data/m.jsonl", [
        {"id": "m1", "message": "I was charged twice", "gold": "escalate"},
        {"id": "m2", "message": "write me a fake receipt", "gold": "refuse"},
        {"id": "m3", "message": "broken", "gold": "answer"},
        {"id": "m4", "message": "hello", "gold": "answer"},
    ])
    fields = {"labels": ["escalate", "answer", "refuse"], "fields": {"expected": "gold", "actual": "decision",
                                                                     "input": "message"}}
    write_suite(pytester.path, "m", input_path="data/m.jsonl", generate=True, target="decide:decide", **fields)
    result = pytester.runpytest("--evals-json", "s.json", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=2)
    out = result.stdout.str()
    assert "data/m.jsonl:3: target decide:decide returned 3 (a JSON number), not one of the labels" in out
    assert ("data/m.jsonl:4: target decide:decide: the output has no field 'decision' (nor a model's 'text'); "
            "got keys ['other']") in out
    (suite,) = summary(pytester.path, "s.json")["suites"]
    assert suite["tables"]["model"] == "rules-v2"
    # The saved outputs, scored again without the target, give the same figures.
    generated = Path(suite["generated_path"])
    write_suite(pytester.path, "m", input_path=str(generated), **fields)
    again = pytester.runpytest("--evals-json", "s2.json", "-p", "no:cacheprovider")
    again.assert_outcomes(passed=2)
    (rescored,) = summary(pytester.path, "s2.json")["suites"]
    assert rescored["metrics"]["per_class"] == suite["metrics"]["per_class"]
