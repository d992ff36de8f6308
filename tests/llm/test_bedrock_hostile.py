"""The Bedrock provider against a hostile runtime endpoint (tests/llm/bedrock_raw_server.py):
batch mode refused, the body cap on a chunked reply, text blocks and usage counts of the
wrong type or size, bodies that are not objects, and a region that is no region name."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
import yaml

from pytest_evals.llm import LLMClient, LLMError, LLMSettings
from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.transport.bedrock_converse import completion_from_converse
from pytest_evals.llm.transport.http_transport import completion_from_json

from .bedrock_fixtures import seal_aws
from .bedrock_raw_server import RawServer

MODEL = "eu.amazon.nova-pro-v1:0"
OPENAI_KEY = "sk-hostile-openai-key-0123456789abcdef"


def converse_reply(text: Any, usage: dict[str, Any] | None = None, stop: Any = "end_turn") -> bytes:
    return json.dumps({
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": stop,
        "usage": usage if usage is not None else {"inputTokens": 3, "outputTokens": 1},
    }).encode()


def write_suite(pytester: pytest.Pytester, n: int = 3) -> None:
    rows = [{"id": f"c{i}", "question": f"q{i}", "expected": "escalate"} for i in range(n)]
    (pytester.path / "cases.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    suite = {"task": "classification", "generate": True, "input_path": "cases.jsonl",
             "labels": ["escalate", "answer"], "positive_label": "escalate",
             "target": {"model": MODEL, "system_prompt": "Say escalate or answer", "input_field": "question"},
             "thresholds": {"accuracy": {"min": 0.5}}}
    (pytester.path / "b.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")


def run(pytester: pytest.Pytester, url: str, *extra: str, timeout: float = 90) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--evals-provider", "bedrock", "--evals-aws-region", "eu-west-1",
        "--evals-base-url", url, "--evals-max-retries", "0", "--evals-cache-dir", "cache",
        "--evals-json=summary.json", *extra, timeout=timeout)


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seal_aws(monkeypatch, tmp_path)


def test_bedrock_with_batch_is_a_usage_error_and_sends_no_openai_key(
        pytester: pytest.Pytester, sealed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    write_suite(pytester)
    with RawServer(b'{"message": "no"}', status=501) as server:
        try:
            result = run(pytester, server.url, "--evals-batch", timeout=40)
            ret = result.ret
        except pytest.fail.Exception:  # pytester's timeout: the run never ended
            ret = None
        carried_key = [r for r in server.requests if OPENAI_KEY in str(r["authorization"])]
    assert not carried_key, f"OpenAI key sent to the Bedrock endpoint: {carried_key[:2]}"
    assert ret == pytest.ExitCode.USAGE_ERROR


def test_bedrock_chunked_reply_over_the_cap_is_refused(pytester: pytest.Pytester, sealed: None) -> None:
    write_suite(pytester, n=1)
    pytester.makeini("[pytest]\nevals_max_response_bytes = 100000\n")
    body = converse_reply("escalate " + "x" * 2_000_000)
    with RawServer(body, chunked=True) as server:
        result = run(pytester, server.url)
    out = result.stdout.str()
    assert "larger than 100000 bytes" in out, out[-2000:]


def test_bedrock_text_block_of_wrong_type_is_malformed(pytester: pytest.Pytester, sealed: None) -> None:
    write_suite(pytester)
    with RawServer(converse_reply({"label": "escalate"})) as server:
        result = run(pytester, server.url)
    assert result.parseoutcomes().get("passed", 0) == 0, result.stdout.str()[-2000:]
    assert result.ret != 0


def test_bedrock_negative_usage_is_not_counted(pytester: pytest.Pytester, sealed: None) -> None:
    write_suite(pytester)
    with RawServer(converse_reply("escalate", usage={"inputTokens": -500, "outputTokens": -7})) as server:
        run(pytester, server.url, "--evals-price", f"{MODEL}=1,1")
    llm = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))["llm"]
    assert llm["prompt_tokens"] >= 0 and llm["completion_tokens"] >= 0 and llm["cost_usd"] >= 0, llm


# -- the same defects, each form, through the client (no pytest run) ------------------------

@pytest.fixture
def client_for(sealed: None, tmp_path: Path) -> Iterator[Callable[..., LLMClient]]:
    clients: list[LLMClient] = []

    def make(url: str, **overrides: Any) -> LLMClient:
        client = LLMClient(LLMSettings(**{
            "provider": "bedrock", "aws_region": "eu-west-1", "configured_base_url": url,
            "model": MODEL, "cache_dir": tmp_path / "cache", "timeout": 5.0, "max_retries": 0,
            **overrides}))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_a_chunked_reply_under_the_cap_is_read_whole(client_for: Callable[..., LLMClient]) -> None:
    text = "escalate " + "y" * 300_000
    with RawServer(converse_reply(text), chunked=True) as server:
        assert client_for(server.url, max_body_bytes=400_000).chat_sync("q").text == text


def test_a_chunked_reply_over_the_cap_is_refused_and_not_retried(client_for: Callable[..., LLMClient]) -> None:
    with RawServer(converse_reply("x" * 2_000_000), chunked=True) as server:
        client = client_for(server.url, max_body_bytes=100_000, max_retries=2)
        with pytest.raises(LLMError, match=r"larger than 100000 bytes \(evals_max_response_bytes\)"):
            client.chat_sync("q")
        assert len(server.requests) == 1


@pytest.mark.parametrize("text", [{"label": "escalate"}, 123, ["escalate"], True])
def test_a_text_block_that_is_not_a_string_is_malformed(client_for: Callable[..., LLMClient], text: Any) -> None:
    with RawServer(converse_reply(text)) as server, \
            pytest.raises(LLMError, match=r"malformed response body: output\.message\.content\[0\]\.text is a"):
        client_for(server.url).chat_sync("q")
    with pytest.raises(AttemptError, match=r"output\.message\.content\[1\]\.text is a"):
        completion_from_converse({"output": {"message": {"content": [{"text": "ok"}, {"text": text}]}}}, MODEL)


def test_a_null_text_block_is_malformed(client_for: Callable[..., LLMClient]) -> None:
    # botocore's parser refuses it first (a ContentBlock with no member set)
    with RawServer(converse_reply(None)) as server, pytest.raises(LLMError, match=r"malformed response body: "):
        client_for(server.url).chat_sync("q")


# botocore's parser reads an integer member through int() ("12", 1.5 and true arrive
# as 12, 1, 1: the direct tests below see them); what int() refuses is malformed too.
@pytest.mark.parametrize("count", [-500, 10**30, "abc", "NaN", "1e400", "-1e400"])
def test_a_usage_count_that_is_no_token_count_is_malformed(client_for: Callable[..., LLMClient], count: Any) -> None:
    body = converse_reply("escalate", usage={"inputTokens": 3, "outputTokens": 1})
    # NaN and 1e400 as JSON numbers (json.dumps cannot write them): Python reads nan, inf.
    raw = body.replace(b'"outputTokens": 1', b'"outputTokens": ' + (
        count.encode() if count in ("NaN", "1e400", "-1e400") else json.dumps(count).encode()))
    with RawServer(raw) as server:
        client = client_for(server.url)
        with pytest.raises(LLMError, match=r"failed after 1 attempt: malformed response body: "):
            client.chat_sync("q")
        assert (client.stats.prompt_tokens, client.stats.completion_tokens) == (0, 0)


@pytest.mark.parametrize("count", [-500, -1, 10**12 + 1, 10**30, "12", "abc", 1.5, True, float("nan"),
                                   float("inf"), [3], {"n": 3}])
def test_a_bad_token_count_is_malformed_for_both_providers(count: Any) -> None:
    converse = {"output": {"message": {"content": [{"text": "ok"}]}},
                "usage": {"inputTokens": count, "outputTokens": 1}}
    with pytest.raises(AttemptError, match=r"malformed response body: usage\.inputTokens: expected a token count") as info:
        completion_from_converse(converse, MODEL)
    assert info.value.retryable
    chat = {"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 1, "completion_tokens": count}}
    with pytest.raises(AttemptError, match=r"usage\.completion_tokens: expected a token count"):
        completion_from_json(chat, MODEL)


def test_absent_or_null_usage_is_zero_and_whole_floats_count() -> None:
    chat: dict[str, Any] = {"choices": [{"message": {"content": "ok"}}]}
    assert completion_from_json(chat, MODEL).prompt_tokens == 0
    chat["usage"] = {"prompt_tokens": None, "completion_tokens": 7.0}
    completion = completion_from_json(chat, MODEL)
    assert (completion.prompt_tokens, completion.completion_tokens) == (0, 7)
    assert isinstance(completion.completion_tokens, int)


def test_usage_counts_in_range_are_counted(client_for: Callable[..., LLMClient]) -> None:
    body = converse_reply("escalate", usage={"inputTokens": 10**12, "outputTokens": 2.0})
    with RawServer(body) as server:
        client = client_for(server.url)
        assert client.chat_sync("q").text == "escalate"
        assert (client.stats.prompt_tokens, client.stats.completion_tokens) == (10**12, 2)


@pytest.mark.parametrize("body", [b"null", b"[1, 2]", b'"text"', b"42"])
def test_a_body_that_is_no_object_is_malformed(client_for: Callable[..., LLMClient], body: bytes) -> None:
    with RawServer(body) as server, pytest.raises(LLMError) as info:
        client_for(server.url).chat_sync("q")
    message = str(info.value)
    assert "malformed response body: expected a Converse response object, got JSON " in message, message
    assert "TypeError" not in message and "AttributeError" not in message, message


@pytest.mark.parametrize("region", ["eu west/1", "eu-west-1.evil.com", "EU-WEST-1", "eu-", "eu-west-1?x=1"])
def test_an_invalid_region_is_a_usage_error_naming_the_option(
        pytester: pytest.Pytester, sealed: None, region: str) -> None:
    write_suite(pytester, n=1)
    with RawServer(converse_reply("escalate")) as server:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "--evals-provider", "bedrock", "--evals-aws-region", region,
            "--evals-base-url", server.url, "--evals-cache-dir", "cache")
        assert not server.requests
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--evals-aws-region: {region!r}*is not an AWS region name*"])


def test_an_invalid_region_from_the_environment_names_the_variable(
        pytester: pytest.Pytester, sealed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu west 1")
    write_suite(pytester, n=1)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-provider", "bedrock",
                                           "--evals-base-url", "http://127.0.0.1:9", "--evals-cache-dir", "cache")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-aws-region: 'eu west 1' from the environment variable AWS_REGION*"])


def test_batch_refusal_names_both_options_and_holds_for_the_ini_key(
        pytester: pytest.Pytester, sealed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    write_suite(pytester, n=1)
    pytester.makeini("[pytest]\nevals_batch = true\n")
    with RawServer(converse_reply("escalate")) as server:
        result = run(pytester, server.url)
        assert not server.requests
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-batch (ini evals_batch) cannot be used with --evals-provider bedrock*"])


def test_a_suite_asking_for_batch_is_sent_interactively_through_bedrock(
        pytester: pytest.Pytester, sealed: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    write_suite(pytester, n=2)
    suite = yaml.safe_load((pytester.path / "b.eval.yaml").read_text(encoding="utf-8"))
    (pytester.path / "b.eval.yaml").write_text(yaml.safe_dump({**suite, "batch": True}), encoding="utf-8")
    with RawServer(converse_reply("escalate")) as server:
        result = run(pytester, server.url)
        paths = {unquote(r["path"]) for r in server.requests}
        carried_key = [r for r in server.requests if OPENAI_KEY in str(r["authorization"])]
    assert not carried_key
    assert paths == {f"/model/{MODEL}/converse"}, paths
    result.stdout.fnmatch_lines(["*suites' 'batch: true' ignored: --evals-provider bedrock*"])
    assert result.ret == 0, result.stdout.str()[-2000:]


def test_the_batch_service_refuses_a_bedrock_provider() -> None:
    from pytest_evals.llm.batch.service import BatchService

    with pytest.raises(LLMError, match="the Batch API is OpenAI's only"):
        BatchService(LLMSettings(provider="bedrock", aws_region="eu-west-1"))


@pytest.mark.parametrize(("status", "attempts"), [(400, 1), (503, 3)])
def test_an_error_reply_that_is_no_object_keeps_its_status(
        client_for: Callable[..., LLMClient], status: int, attempts: int) -> None:
    with RawServer(b"null", status=status) as server:
        client = client_for(server.url, max_retries=2)
        with pytest.raises(LLMError, match=rf"HTTP {status}: UnknownError: error body is JSON null, not an object"):
            client.chat_sync("q")
        assert len(server.requests) == attempts  # a 400 is not retried, a 503 is
