"""JSON judges ask for structured output where the endpoint takes it, find the endpoint's
rung once (a refusal steps down, is remembered and written beside the cache) and fall back
to parsing plain replies; reply schemas reject a template's placeholders."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from pytest_evals.families.rag.replies import FactsReply, RelevanceReply
from pytest_evals.llm import Judge, LLMClient
from pytest_evals.llm.call_errors import ContextLengthError, LLMError
from pytest_evals.llm.reply_placeholders import is_placeholder
from pytest_evals.llm.structured_output import FORMATS, is_refusal
from pytest_evals.model.errors import JudgeError
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


class Score(BaseModel):
    score: int


@pytest.fixture(autouse=True)
def _fresh_memory() -> None:
    FORMATS.forget()


def serve(server: FakeOpenAI, accepts: set[str | None]) -> list[dict[str, Any]]:
    """A server taking only the response_format types in ``accepts`` (None: no format);
    any other is refused as llama-cpp-python refuses it: HTTP 500 naming response_format."""
    bodies: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> str:
        bodies.append(request)
        fmt = request.get("response_format")
        kind = None if fmt is None else (fmt["type"] + ("+schema" if "schema" in fmt else ""))
        if kind not in accepts:
            raise ValueError(f"response_format.type: Input should be one of {sorted(map(str, accepts))}")
        return '{"score": 4}'

    server.configure(responder=responder)
    return bodies


def kinds(bodies: list[dict[str, Any]]) -> list[str | None]:
    return [
        None if "response_format" not in b else b["response_format"]["type"] + ("+schema" if "schema" in b["response_format"] else "")
        for b in bodies
    ]


def test_a_json_judge_asks_for_its_schema(make_client: MakeClient, server: FakeOpenAI) -> None:
    bodies = serve(server, {"json_schema"})
    client = make_client()
    data, _ = run(closing(client, Judge(client).json("rate it as JSON", schema=Score)))
    assert data == Score(score=4)
    fmt = bodies[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Score"
    assert fmt["json_schema"]["schema"]["required"] == ["score"]


def test_a_refusal_steps_down_once_per_endpoint_even_in_a_burst(
    make_client: MakeClient, server: FakeOpenAI, cache_dir: Path
) -> None:
    bodies = serve(server, {"json_object+schema"})
    client = make_client(max_retries=0)
    judge = Judge(client)

    async def burst() -> None:
        await asyncio.gather(*(judge.json(f"rate answer {i} as JSON", schema=Score) for i in range(20)))

    run(closing(client, burst()))
    # One request found the rung: one refusal of json_schema, then every request at the
    # rung that answered (llama-cpp-python's json_object with a schema).
    assert kinds(bodies).count("json_schema") == 1
    assert kinds(bodies).count("json_object+schema") == 20
    stored = json.loads((cache_dir / "structured_output.json").read_text())
    assert list(stored.values()) == ["json_object_schema"]
    assert server.base_url not in json.dumps(stored)  # the endpoint is hashed

    # The next run (a new process forgets its memory) starts on the stored rung.
    FORMATS.forget()
    again = make_client(max_retries=0)
    run(closing(again, Judge(again).json("rate a new answer as JSON", schema=Score)))
    assert kinds(bodies)[-1] == "json_object+schema" and len(bodies) == 22


def test_a_refusal_is_not_retried_but_a_server_failure_is(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    # llama-cpp-python refuses json_schema with HTTP 500: with retries on, that answer
    # was sent again max_retries times (with backoff) before the step down.
    bodies = serve(server, {"json_object+schema"})
    client = make_client(max_retries=3)
    data, _ = run(closing(client, Judge(client).json("rate it as JSON", schema=Score)))
    assert data == Score(score=4)
    assert kinds(bodies) == ["json_schema", "json_object+schema"]
    assert client.stats.retries == 0

    # A 500 that is not about the format is still a failing server: retried, at the
    # same rung (the one stored beside the cache by the first client).
    failures = iter([True, True])

    def flaky(request: dict[str, Any]) -> str:
        bodies.append(request)
        if next(failures, False):
            raise ValueError("out of memory")
        return '{"score": 4}'

    server.configure(responder=flaky)
    del bodies[:]
    again = make_client(max_retries=3)
    data, _ = run(closing(again, Judge(again).json("rate another as JSON", schema=Score)))
    assert data == Score(score=4)
    assert kinds(bodies) == ["json_object+schema"] * 3
    assert again.stats.retries == 2


def test_an_endpoint_without_structured_output_falls_back_to_parsing(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    bodies = serve(server, {None})
    client = make_client(max_retries=0)
    data, _ = run(closing(client, Judge(client).json("rate it as JSON", schema=Score)))
    assert data == Score(score=4)
    assert kinds(bodies) == ["json_schema", "json_object+schema", "json_object", None]


def test_structured_output_off_sends_no_format(make_client: MakeClient, server: FakeOpenAI) -> None:
    bodies = serve(server, {None})
    client = make_client(structured_output="off")
    run(closing(client, Judge(client).json("rate it as JSON", schema=Score)))
    assert kinds(bodies) == [None]


def test_other_failures_are_not_refusals() -> None:
    assert is_refusal(LLMError("x", cause="HTTP 400: 'response_format' of type 'json_schema' is not supported", status=400))
    assert is_refusal(LLMError("x", cause="HTTP 422: body.response_format.type: literal_error", status=422))
    assert not is_refusal(LLMError("x", cause="HTTP 400: invalid model name", status=400))
    assert not is_refusal(LLMError("x", cause="HTTP 500: out of memory", status=500))
    assert not is_refusal(LLMError("x", cause="connection refused", status=None))
    assert not is_refusal(ContextLengthError("x", prompt_tokens=9000, limit=2048, cause="json context"))


@pytest.mark.parametrize("value", ["...", "…", " ... ", "", "<claim>", "[statement]", "string", "TODO", "N/A", "--"])
def test_placeholders_are_not_content(value: str) -> None:
    assert is_placeholder(value)


@pytest.mark.parametrize("value", ["x", "Paris is in France.", "No", "3 ... 4", "n/a means missing"])
def test_content_is_not_a_placeholder(value: str) -> None:
    assert not is_placeholder(value)


def test_reply_schemas_reject_the_template_itself() -> None:
    with pytest.raises(ValidationError, match="placeholder"):
        FactsReply.model_validate({"TP": ["...", "..."], "FP": [], "FN": []})
    with pytest.raises(ValidationError, match="placeholder"):
        RelevanceReply.model_validate({"statements": [{"statement": "<statement>", "verdict": "yes"}]})
    assert FactsReply.model_validate({"TP": ["Paris is in France"], "FP": [], "FN": []}).tp == ["Paris is in France"]


def test_a_placeholder_reply_is_re_asked_then_a_judge_error(make_client: MakeClient, server: FakeOpenAI) -> None:
    server.configure(script=[{"pattern": ".", "reply": '{"TP": ["...", "..."], "FP": [], "FN": []}'}])
    client = make_client()
    with pytest.raises(JudgeError, match="placeholder"):
        run(closing(client, Judge(client, max_attempts=2).json("classify as JSON", schema=FactsReply)))
    assert server.stats()["answered"] == 2
