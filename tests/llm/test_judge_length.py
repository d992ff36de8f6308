"""A judge's max_tokens fits its reply, and a reply cut at it is an error of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from pytest_evals.llm import Judge, LLMClient
from pytest_evals.llm.judge import JSON_MAX_TOKENS, VERDICT_MAX_TOKENS
from pytest_evals.model.errors import ErrorKind, JudgeTruncatedError, error_kind
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run

MakeClient = Callable[..., LLMClient]


class Score(BaseModel):
    score: int


def capture(server: FakeOpenAI, reply: Any) -> list[dict[str, Any]]:
    bodies: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> Any:
        bodies.append(request)
        return reply(request) if callable(reply) else reply

    server.configure(responder=responder)
    return bodies


def test_each_judge_sends_a_cap_that_fits_its_reply(make_client: MakeClient, server: FakeOpenAI) -> None:
    bodies = capture(server, lambda r: '{"score": 3}' if "rate" in str(r["messages"]) else "Yes")
    client = make_client()
    judge = Judge(client)

    async def go() -> None:
        await judge.verdict("is it?")
        await judge.verdict("is it, leniently?", strict=False)
        await judge.json("rate it", schema=Score)
        await judge.verdict("is it, briefly?", max_tokens=3)

    run(closing(client, go()))
    assert [b["max_tokens"] for b in bodies] == [VERDICT_MAX_TOKENS, VERDICT_MAX_TOKENS, JSON_MAX_TOKENS, 3]


def test_the_sessions_max_tokens_wins_over_the_judges_default(make_client: MakeClient, server: FakeOpenAI) -> None:
    bodies = capture(server, "No")
    client = make_client(max_tokens=40)
    run(closing(client, Judge(client).verdict("is it?")))
    assert bodies[0]["max_tokens"] == 40


@pytest.mark.parametrize("ask", ["verdict", "lenient", "json"])
def test_a_cut_reply_is_judge_truncated_never_read_never_re_sent(
    make_client: MakeClient, server: FakeOpenAI, ask: str
) -> None:
    # "No" would be a verdict and '{"score": 1' half an object: neither may be read.
    reply = '{"score": 1' if ask == "json" else "No, the answer is wrong because"
    bodies = capture(server, {"content": reply, "finish_reason": "length"})
    client = make_client()
    judge = Judge(client, max_attempts=3)
    call = {
        "verdict": lambda: judge.verdict("is it?"),
        "lenient": lambda: judge.verdict("is it?", strict=False),
        "json": lambda: judge.json("rate it", schema=Score),
    }[ask]
    with pytest.raises(JudgeTruncatedError) as info:
        run(closing(client, call()))
    assert error_kind(info.value) is ErrorKind.JUDGE_TRUNCATED
    assert "cut at the length limit" in str(info.value) and info.value.raw_reply == reply
    assert len(bodies) == 1  # no re-ask carrying the cut reply


# -- HaluEval: a cut reply is not a "No" --------------------------------------------------

HALUEVAL = """\
task: halueval
data_dir: {data_dir}
tasks: [qa]
sample: 6
seed: 4
parse: {parse}
"""


def cut_judge(request: dict[str, Any]) -> Any:
    # Half the items get a cut reply with a verdict first, half one with no verdict yet.
    text = str(request["messages"][-1]["content"])
    verdictless = sum(map(ord, text)) % 2 == 0
    return {"content": "The answer given here" if verdictless else "No, the answer is", "finish_reason": "length"}


@pytest.mark.parametrize("parse", ["first", "strict"])
def test_halueval_reads_a_cut_reply_only_where_the_cut_cannot_change_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, parse: str
) -> None:
    import json
    from pathlib import Path

    data_dir = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "halueval"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FakeOpenAI(responder=cut_judge) as srv:
        pytester.makefile(".eval.yaml", halueval=HALUEVAL.format(data_dir=data_dir, parse=parse))
        pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", srv.base_url,
                           "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", "out.json")
        answered = srv.stats()["answered"]
    suite = json.loads((pytester.path / "out.json").read_text())["suites"][0]
    results = suite["case_results"]
    cut = [r for r in results if r["status"] == "error"]
    read = [r for r in results if r["status"] != "error"]
    assert answered == 6  # each item asked once, never re-asked
    assert all("cut at the length limit" in r["message"] for r in cut)
    assert suite["cases"]["errors_by_kind"] == {"judge_truncated": len(cut)}
    if parse == "first":
        # "No, the answer is" gave its verdict before the cut; "The answer given here" none.
        assert cut and read and all(r["data"]["predicted"] == "no" for r in read)
        assert all("before it said Yes or No" in r["message"] for r in cut)
    else:
        assert not read and len(cut) == 6  # strict reads the whole reply: a cut one never


def test_halueval_structured_is_not_for_the_official_protocol() -> None:
    from pydantic import ValidationError

    from pytest_evals.families.halueval.task import HaluEvalConfig

    with pytest.raises(ValidationError, match="not with prompts: official"):
        HaluEvalConfig.model_validate({"task": "halueval", "prompts": "official", "structured": True})
    assert HaluEvalConfig.model_validate({"task": "halueval", "structured": True}).structured
