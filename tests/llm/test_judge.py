"""LLM-as-judge: JSON, verdicts, bounded re-asks and JudgeError with the raw reply."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic import BaseModel

from pytest_evals.llm import Judge, LLMClient, parse_verdict
from pytest_evals.llm.judge import extract_json_object
from pytest_evals.model.errors import JudgeError
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


class Rating(BaseModel):
    score: int
    reason: str


def test_json_reply_parsed(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(
        script=[{"pattern": "rate", "reply": 'Sure! ```json\n{"score": 4, "reason": "clear"}\n```'}]
    )
    client = make_client()
    data, response = run(closing(client, Judge(client).json("rate this answer", schema=Rating)))
    assert data == Rating(score=4, reason="clear")
    assert response.namespace == "judge" and not response.cached


def test_invalid_json_is_reasked_then_accepted(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(
        script=[
            {"pattern": "could not be used", "reply": '{"score": 2, "reason": "fixed"}'},
            {"pattern": "rate", "reply": "I think it deserves a 2."},
        ]
    )
    client = make_client()
    data, _ = run(closing(client, Judge(client).json("rate this", schema=Rating)))
    assert data.score == 2
    log = server.log()
    assert [entry["reply"] for entry in log] == [
        "I think it deserves a 2.",
        '{"score": 2, "reason": "fixed"}',
    ]
    # The re-ask is its own cache entry: a rerun reads both from the cache.
    again = make_client()
    data2, response = run(closing(again, Judge(again).json("rate this", schema=Rating)))
    assert data2 == data and response.cached and server.stats()["answered"] == 2


def test_unusable_reply_raises_judge_error_with_raw_reply(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    server.configure(script=[{"pattern": ".", "reply": "no JSON here, sorry"}])
    client = make_client()
    with pytest.raises(JudgeError) as info:
        run(closing(client, Judge(client, max_attempts=3).json("rate this")))
    assert info.value.raw_reply == "no JSON here, sorry"
    assert "after 3 attempts" in str(info.value) and "no JSON here, sorry" in str(info.value)
    assert server.stats()["answered"] == 3


def test_schema_mismatch_names_the_field(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(script=[{"pattern": ".", "reply": '{"score": "high"}'}])
    client = make_client()
    with pytest.raises(
        JudgeError, match=r"score: Input should be a valid integer.*reason: Field required"
    ):
        run(closing(client, Judge(client, max_attempts=1).json("rate", schema=Rating)))


def test_verdict_strict_and_lenient(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(
        script=[
            {"pattern": "exactly one word", "reply": "No."},
            {"pattern": "unclear", "reply": "Yes and no, it depends."},
            {"pattern": "clear", "reply": "Yes, it is hallucinated."},
        ]
    )
    client = make_client()
    judge = Judge(client)

    async def go() -> tuple[object, object, object]:
        clear, _ = await judge.verdict("a clear case")
        lenient, _ = await judge.verdict("an unclear case", strict=False)
        strict, _ = await judge.verdict("an unclear case")
        return clear, lenient, strict

    assert run(closing(client, go())) == (True, None, False)


def test_sync_helpers_use_an_engine(make_client: MakeClient, server: FakeOpenAI) -> None:
    client = make_client()
    judge = Judge(client)
    assert judge.text_sync("hello")[0] == "hello"
    assert client.complete("again") == "again"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes", True),
        ("no.", False),
        ("#Your Judgement#: Yes", True),
        ("Yes, no", None),
        ("Maybe", None),
        ("Nope", None),
    ],
)
def test_parse_verdict(text: str, expected: bool | None) -> None:
    assert parse_verdict(text) is expected


def test_extract_json_object() -> None:
    assert extract_json_object('{"a": 1}') == {"a": 1}
    assert extract_json_object('Here: {"a": {"b": 2}} done') == {"a": {"b": 2}}
    with pytest.raises(ValueError, match="expected a JSON object, got list"):
        extract_json_object("[1, 2]")
    with pytest.raises(ValueError, match=r"no JSON object|invalid JSON"):
        extract_json_object("nothing")


def test_a_reply_cut_at_the_length_limit_is_a_judge_error_never_reasked(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    """A reply that ran into max_tokens is half a reply: not parsed (a verdict word in it
    is no verdict), not sent back in a re-ask (that can overflow the context)."""
    server.configure(responder=lambda body: {"content": '{"score": 4, "reason": "the ans', "finish_reason": "length"})
    client = make_client()
    with pytest.raises(JudgeError) as info:
        run(closing(client, Judge(client).json("rate this answer", schema=Rating, max_tokens=12)))
    assert "cut at the length limit" in str(info.value) and "max_tokens" in str(info.value)
    assert info.value.raw_reply == '{"score": 4, "reason": "the ans'
    assert server.stats()["received"] == 1

    server.configure(responder=lambda body: {"content": "Yes, because the", "finish_reason": "length"})
    with pytest.raises(JudgeError):
        run(closing(client, Judge(client).verdict("is it?", max_tokens=4)))
    assert server.stats()["received"] == 2
