"""Structured output is found per (endpoint, model): two models behind one URL (a gateway,
or a suite's variants) that take different ``response_format`` types are each asked in
their own, and a refusal by one never moves the other down the ladder."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_evals.llm import Judge, LLMClient
from pytest_evals.llm.structured_output import FORMATS
from pytest_evals.testing.fake_openai import FakeOpenAI, format_kind

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]
REPO = Path(__file__).resolve().parents[2]
DATA_DIR = REPO.parent / "shared" / "data" / "halueval"

#: "big" takes OpenAI's json_schema; "small" only llama-cpp-python's json_object + schema.
FORMATS_SPEC = "big=json_schema;small=json_object+schema"


class Score(BaseModel):
    score: int


@pytest.fixture(autouse=True)
def _fresh_memory() -> None:
    FORMATS.forget()


def record(server: FakeOpenAI, reply: str) -> list[dict[str, Any]]:
    """Serve ``reply`` to every accepted request and keep every request body (refused
    ones included: the fake refuses before the responder, so those come from its log)."""
    bodies: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> str:
        bodies.append(request)
        return reply

    server.configure(responder=responder, response_formats=FORMATS_SPEC)
    return bodies


def by_model(bodies: list[dict[str, Any]]) -> dict[str, Counter[str | None]]:
    seen: dict[str, Counter[str | None]] = {}
    for body in bodies:
        seen.setdefault(body["model"], Counter())[format_kind(body)] += 1
    return seen


def test_the_fake_refuses_per_model(make_client: MakeClient, server: FakeOpenAI) -> None:
    """The fake itself: a listed model refuses other types with HTTP 400 naming it."""
    record(server, '{"score": 4}')
    client = make_client(max_retries=0, structured_output="off")

    async def ask(model: str, fmt: dict[str, Any]) -> str:
        try:
            await client.chat("hi", model=model, response_format=fmt)
        except Exception as exc:  # the refusal is what is looked at
            return str(exc)
        return "ok"

    async def both() -> tuple[str, str, str]:
        schema = {"type": "json_schema", "json_schema": {"name": "S", "schema": {"type": "object"}}}
        return await ask("small", schema), await ask("big", schema), await ask("other", schema)

    refused, big, other = run(closing(client, both()))
    assert "'response_format' of type 'json_schema' is not supported with model small" in refused
    assert big == other == "ok"
    assert server.stats()["outcomes"]["format_refused"] == 1


def test_two_models_on_one_endpoint_each_keep_their_own_rung(
    make_client: MakeClient, server: FakeOpenAI, cache_dir: Path
) -> None:
    bodies = record(server, '{"score": 4}')
    client = make_client(max_retries=0)
    judge = Judge(client)

    async def burst() -> None:
        await asyncio.gather(*(
            judge.json(f"rate answer {i} as JSON", schema=Score, model=model)
            for i in range(10) for model in ("big", "small")
        ))

    run(closing(client, burst()))
    # "big" was never refused: every request of it asked for json_schema. "small" was
    # refused json_schema once (by the fake, so not in the responder's bodies) and then
    # used json_object with the schema for all of its ten requests.
    assert by_model(bodies) == {"big": Counter({"json_schema": 10}), "small": Counter({"json_object+schema": 10})}
    assert server.stats()["outcomes"]["format_refused"] == 1
    stored = json.loads((cache_dir / "structured_output.json").read_text())
    assert sorted(stored.values()) == ["json_object_schema", "json_schema"]
    assert "small" not in json.dumps(stored) and server.base_url not in json.dumps(stored)

    # The next run (a fresh process's memory) starts both on their stored rungs: no refusal.
    FORMATS.forget()
    again = make_client(max_retries=0)
    judge = Judge(again)

    async def once() -> None:
        await judge.json("rate a new answer as JSON", schema=Score, model="small")
        await judge.json("rate a new answer as JSON", schema=Score, model="big")

    run(closing(again, once()))
    assert [format_kind(b) for b in bodies[-2:]] == ["json_object+schema", "json_schema"]
    assert server.stats()["outcomes"]["format_refused"] == 1


def test_the_clients_own_model_is_the_key_when_the_request_names_none(
    make_client: MakeClient, server: FakeOpenAI
) -> None:
    bodies = record(server, '{"score": 4}')
    small = make_client(max_retries=0, model="small")
    run(closing(small, Judge(small).json("rate it as JSON", schema=Score)))
    big = make_client(max_retries=0, model="big")
    run(closing(big, Judge(big).json("rate it as JSON", schema=Score)))
    # The refusal "small" got did not move "big" (same endpoint, no model in the call).
    assert [(b["model"], format_kind(b)) for b in bodies] == [("small", "json_object+schema"), ("big", "json_schema")]


SUITE = f"""\
task: halueval
data_dir: {DATA_DIR}
tasks: [qa]
sample: 6
seed: 4
structured: true
thresholds:
  unparseable_rate: {{max: 0.0}}
"""


@pytest.mark.parametrize("workers", [None, "2"])
def test_variants_of_two_models_on_one_endpoint_are_each_asked_in_their_format(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, workers: str | None
) -> None:
    """A suite's variants send two models to one URL, in one run and under -n 2."""
    bodies = record(server, '{"verdict": "No"}')
    pytester.makefile(".eval.yaml", halueval=SUITE)
    out = tmp_path / "out.json"
    extra = ["-n", workers] if workers else []
    result = pytester.runpytest(
        "halueval.eval.yaml", "-p", "no:randomly", "--evals-base-url", server.base_url,
        "--evals-cache-dir", str(tmp_path / "c"), "--evals-model", "big,small",
        "--evals-json", str(out), "--evals-max-retries", "0", *extra,
    )
    text = result.stdout.str()
    assert result.ret == 0, text[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    counts = report["suites"][0]["cases"]
    assert counts["total"] == 12 and counts["errors"] == 0, counts
    seen = by_model(bodies)
    assert seen == {"big": Counter({"json_schema": 6}), "small": Counter({"json_object+schema": 6})}, seen
    # One refusal per process that asked "small" first (each worker finds the rung once
    # when neither has written it yet), never a refusal of "big".
    refused = [e for e in server.log() if e["outcome"] == "format_refused"]
    assert {e["model"] for e in refused} == {"small"} and 1 <= len(refused) <= (2 if workers else 1)
