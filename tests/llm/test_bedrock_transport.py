"""The Bedrock provider: the Converse mapping, and the client through botocore against
the loopback fake of the Converse API (real SigV4-signed HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.hardening import redaction
from pytest_evals.llm import LLMClient, LLMError, LLMSettings
from pytest_evals.llm.bedrock_models import parse_model_aliases
from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.retry import AttemptError
from pytest_evals.llm.transport.bedrock_converse import (
    UnsupportedRequest,
    attempt_error,
    completion_from_converse,
    converse_request,
)
from pytest_evals.testing.fake_bedrock import FakeBedrock

from .bedrock_fixtures import (
    ACCESS_KEY,
    CREDENTIALS,
    MODEL,
    SECRET_KEY,
    SESSION_TOKEN,
    aws_env,
    bedrock,
)

__all__ = ["aws_env", "bedrock"]  # fixtures used by name below


# -- the mapping ---------------------------------------------------------------------------
def test_request_maps_system_messages_and_inference_config() -> None:
    body = {
        "model": MODEL,
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "one"},
            {"role": "user", "content": [{"type": "text", "text": "two"}]},
            {"role": "assistant", "content": "ok"},
            {"role": "developer", "content": "And exact."},
            {"role": "user", "content": "three"},
        ],
        "temperature": 0.0,
        "max_tokens": 15000,
        "top_p": 0.9,
        "stop": "END",
        "seed": 7,
        "response_format": {"type": "json_object"},
        "top_k": 40,
    }
    kwargs = converse_request(body)
    assert kwargs == {
        "modelId": MODEL,
        "system": [{"text": "Be terse."}, {"text": "And exact."}],
        # Consecutive user messages become one turn: Converse wants roles to alternate.
        "messages": [
            {"role": "user", "content": [{"text": "one"}, {"text": "two"}]},
            {"role": "assistant", "content": [{"text": "ok"}]},
            {"role": "user", "content": [{"text": "three"}]},
        ],
        "inferenceConfig": {"temperature": 0.0, "maxTokens": 15000, "topP": 0.9, "stopSequences": ["END"]},
        "additionalModelRequestFields": {"top_k": 40},
    }


GOVUK_KEYS = {"claude_sonnet_4_0": "eu.anthropic.claude-sonnet-4-20250514-v1:0"}


def test_model_keys_become_bedrock_ids() -> None:
    kwargs = converse_request({"model": "claude_sonnet_4_0", "messages": [{"role": "user", "content": "x"}]}, GOVUK_KEYS)
    assert kwargs["modelId"] == "eu.anthropic.claude-sonnet-4-20250514-v1:0"
    # GOV.UK's judge models are ids already and go as they are
    for judge in ("eu.amazon.nova-micro-v1:0", "openai.gpt-oss-120b-1:0"):
        assert converse_request({"model": judge, "messages": []}, GOVUK_KEYS)["modelId"] == judge


@pytest.mark.parametrize("line", ["claude_sonnet_4_0", "=id", "key=", "key = "])
def test_a_bad_model_key_line_names_the_ini_key(line: str) -> None:
    with pytest.raises(ValueError, match=r"evals_bedrock_models .*expected KEY=MODEL_ID"):
        parse_model_aliases([line])
    assert parse_model_aliases(["# GOV.UK Chat's keys", "", " a = b:0 "]) == {"a": "b:0"}


@pytest.mark.parametrize(
    "message, expected",
    [
        ({"role": "tool", "content": "x"}, "role 'tool'"),
        ({"role": "user", "content": [{"type": "image_url", "image_url": {}}]}, "'image_url' part"),
    ],
)
def test_request_converse_cannot_carry_is_refused(message: dict[str, Any], expected: str) -> None:
    with pytest.raises(UnsupportedRequest, match=expected) as info:
        converse_request({"model": MODEL, "messages": [message]})
    assert info.value.retryable is False


def test_reply_text_usage_and_stop_reason() -> None:
    data = {
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "thinking..."}}},
            {"text": "Yes"}, {"text": ", it is."},
        ]}},
        "stopReason": "max_tokens",
        "usage": {"inputTokens": 120, "outputTokens": 7, "totalTokens": 127},
    }
    completion = completion_from_converse(data, MODEL)
    assert completion.text == "Yes, it is."  # reasoning blocks are not the answer
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 7)
    assert completion.finish_reason == "length"
    assert completion.model == MODEL
    assert completion_from_converse({**data, "stopReason": "end_turn"}, MODEL).finish_reason == "stop"
    assert completion_from_converse({**data, "stopReason": "content_filtered"}, MODEL).finish_reason == "content_filter"
    assert completion_from_converse({**data, "stopReason": "new_reason"}, MODEL).finish_reason == "new_reason"


@pytest.mark.parametrize("data", [[], {"output": {}}, {"output": {"message": {"content": "text"}}}])
def test_malformed_reply_is_retryable(data: Any) -> None:
    with pytest.raises(AttemptError, match="malformed") as info:
        completion_from_converse(data, MODEL)
    assert info.value.retryable is True


def test_error_codes_take_the_statuses_of_the_retry_rules() -> None:
    throttled = attempt_error("ThrottlingException", "Too many requests", 429, MODEL)
    assert (throttled.status, throttled.retryable, throttled.throttled) == (429, True, True)
    unavailable = attempt_error("ServiceUnavailableException", "busy", 503, MODEL)
    assert (unavailable.status, unavailable.retryable, unavailable.throttled) == (503, True, True)
    timeout = attempt_error("ModelTimeoutException", "slow", 408, MODEL)
    assert (timeout.retryable, timeout.throttled) == (True, False)
    invalid = attempt_error("ValidationException", "The provided model identifier is invalid.", 400, "gpt-4o-mini")
    assert invalid.retryable is False and "--evals-model" in invalid.cause and "'gpt-4o-mini'" in invalid.cause
    denied = attempt_error("UnrecognizedClientException", "The security token included in the request is invalid.", 403, MODEL)
    assert denied.retryable is False and "credentials" in denied.cause
    unknown = attempt_error("SomethingNewException", "?", 502, MODEL)
    assert unknown.retryable is True  # an unknown code follows its HTTP status


# -- the client through botocore ------------------------------------------------------------
@pytest.fixture
def make_bedrock_client(bedrock: FakeBedrock, tmp_path: Path) -> Iterator[Callable[..., LLMClient]]:
    clients: list[LLMClient] = []

    def make(**overrides: Any) -> LLMClient:
        fields: dict[str, Any] = {
            "provider": "bedrock",
            "aws_region": "eu-west-1",
            "configured_base_url": bedrock.endpoint_url,
            "model": MODEL,
            "cache_dir": tmp_path / "cache",
            "timeout": 5.0,
            "max_retries": 3,
            **overrides,
        }
        client = LLMClient(LLMSettings(**fields))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_answers_are_signed_counted_and_cached(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    client = make_bedrock_client()
    first = client.chat_sync([{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}], max_tokens=64)
    assert first.text == f"[{MODEL}] hello" and not first.cached
    stats = bedrock.stats()
    assert stats["signed"] == stats["received"] == 1
    assert (first.prompt_tokens, first.completion_tokens) == (stats["input_tokens"], stats["output_tokens"])
    assert client.stats.prompt_tokens == stats["input_tokens"] > 0
    again = make_bedrock_client().chat_sync([{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}], max_tokens=64)
    assert again.cached and again.text == first.text
    assert bedrock.stats()["received"] == 1  # the second client asked nothing


def test_the_cache_key_tells_bedrock_from_an_openai_endpoint_at_the_same_url(
    make_bedrock_client: Callable[..., LLMClient], bedrock: FakeBedrock, tmp_path: Path
) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}]}
    ours = make_bedrock_client().key_for(body)
    openai_path = LLMClient(LLMSettings(configured_base_url=bedrock.endpoint_url, cache=False)).key_for(body)
    assert ours != openai_path
    other_region = make_bedrock_client(configured_base_url=None, aws_region="us-east-1").key_for(body)
    assert other_region != make_bedrock_client(configured_base_url=None).key_for(body)
    # a model key is keyed with the id it stands for: a changed table asks again
    keyed = {"model": "judge", "messages": body["messages"]}
    nova = make_bedrock_client(bedrock_models={"judge": MODEL}).key_for(keyed)
    micro = make_bedrock_client(bedrock_models={"judge": "eu.amazon.nova-micro-v1:0"}).key_for(keyed)
    assert nova != micro


def test_a_model_key_is_sent_as_its_id(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    bedrock.configure(known_models=[MODEL])
    reply = make_bedrock_client(model="judge", bedrock_models={"judge": MODEL}).chat_sync("hi")
    assert reply.text == f"[{MODEL}] hi"
    assert [e["model"] for e in bedrock.log()] == [MODEL]


def test_throttling_and_unavailable_are_retried_and_shrink_concurrency(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    bedrock.configure(throttle_first=2, unavailable_first=1)
    client = make_bedrock_client()
    reply = client.chat_sync("retry me")
    assert reply.text == f"[{MODEL}] retry me"
    assert bedrock.stats()["outcomes"] == {"throttled": 2, "unavailable": 1, "ok": 1}
    s = client.stats
    assert (s.attempts, s.retries, s.throttled, s.requests, s.errors) == (4, 3, 3, 1, 0)
    assert s.lowest_concurrency < client.settings.concurrency


def test_throttling_past_the_retries_is_an_error_naming_the_code(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    bedrock.configure(throttle_first=10)
    client = make_bedrock_client(max_retries=2)
    with pytest.raises(LLMError, match=r"failed after 3 attempts: HTTP 429: ThrottlingException"):
        client.chat_sync("always throttled")
    assert bedrock.stats()["received"] == 3
    assert client.cache is not None and client.stats.errors == 1


def test_unknown_model_is_one_attempt_and_names_the_setting(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    bedrock.configure(known_models=[MODEL])
    client = make_bedrock_client(model="gpt-4o-mini")
    with pytest.raises(LLMError) as info:
        client.chat_sync("which model?")
    message = str(info.value)
    assert "ValidationException: The provided model identifier is invalid." in message
    assert "--evals-model" in message and "'gpt-4o-mini'" in message
    assert bedrock.stats()["received"] == 1  # not retried


def test_a_rejected_key_is_not_retried_and_never_shown(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    bedrock.configure(require_access_key="AKIAANOTHERKEY000000")
    client = make_bedrock_client()
    with pytest.raises(LLMError, match="UnrecognizedClientException") as info:
        client.chat_sync("who am I?")
    assert bedrock.stats()["received"] == 1
    assert not any(value in str(info.value) for value in CREDENTIALS)


def test_a_too_long_prompt_is_a_context_length_error(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    # what Bedrock's Anthropic models say of a prompt over their context
    bedrock.configure(fail_first=5, fail_code="ValidationException",
                      fail_message="Input is too long for requested model.")
    with pytest.raises(ContextLengthError, match="longer than the model's context"):
        make_bedrock_client().chat_sync("x " * 100)
    assert bedrock.stats()["received"] == 1


def test_the_deadline_ends_a_slow_attempt(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    bedrock.configure(latency=3.0)
    client = make_bedrock_client(timeout=0.5, max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"no complete reply within 0\.5s"):
        client.chat_sync("slow")
    assert time.monotonic() - started < 2.9
    assert client.stats.attempts == 2


def test_requests_run_concurrently(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    bedrock.configure(latency=0.3)
    client = make_bedrock_client(concurrency=8)

    async def many() -> list[str]:
        try:
            replies = await asyncio.gather(*(client.chat(f"q{i}") for i in range(8)))
        finally:
            await client.aclose()
        return [r.text for r in replies]

    started = time.monotonic()
    texts = asyncio.run(many())
    assert texts == [f"[{MODEL}] q{i}" for i in range(8)]
    assert time.monotonic() - started < 8 * 0.3  # not one after the other
    assert client.stats.peak_in_flight > 1


def test_credentials_are_registered_for_redaction(make_bedrock_client: Callable[..., LLMClient]) -> None:
    make_bedrock_client().chat_sync("register")
    for value in CREDENTIALS:
        assert redaction.redact(f"said {value}!") == "said ***!"
    for value in (SECRET_KEY, SESSION_TOKEN):
        encoded = base64.b64encode(f"prefix {value} suffix".encode()).decode()
        assert "***" in redaction.redact(encoded)  # base64 inside a longer text too
    assert SESSION_TOKEN not in redaction.redact(json.dumps({"token": SESSION_TOKEN}))


def test_the_fake_refuses_unsigned_requests(bedrock: FakeBedrock) -> None:
    request = urllib.request.Request(
        f"{bedrock.endpoint_url}/model/{MODEL}/converse", data=b"{}", method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 403
    assert info.value.headers["x-amzn-ErrorType"].startswith("MissingAuthenticationTokenException")
    assert bedrock.log()[-1] == {**bedrock.log()[-1], "outcome": "unsigned", "signed": False}
    assert not any("Authorization" in entry or "authorization" in entry for entry in bedrock.log())


def test_without_boto3_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pytest_evals.llm import bedrock_session

    monkeypatch.setitem(sys.modules, "botocore.session", None)  # as if not installed
    with pytest.raises(ValueError, match=r"--evals-provider bedrock needs AWS's SDK: pip install 'pytest-evals\[bedrock\]'"):
        bedrock_session.check_credentials()


def test_settings_refuse_a_bedrock_provider_without_a_region_and_an_unknown_provider() -> None:
    with pytest.raises(ValueError, match="--evals-provider bedrock: no AWS region"):
        LLMSettings(provider="bedrock")
    with pytest.raises(ValueError, match="--evals-provider 'bedrok': choose one of openai, bedrock"):
        LLMSettings(provider="bedrok")  # type: ignore[arg-type]
    s = LLMSettings(provider="bedrock", aws_region="eu-west-1")
    assert not s.offline and s.base_url == "https://bedrock-runtime.eu-west-1.amazonaws.com"
    assert LLMSettings(provider="bedrock", aws_region="eu-west-1", force_offline=True).offline


def test_a_body_that_is_not_json_is_retried(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    bedrock.configure(malformed_first=2)
    client = make_bedrock_client()
    assert client.chat_sync("parse me").text == f"[{MODEL}] parse me"
    assert bedrock.stats()["outcomes"] == {"malformed": 2, "ok": 1}
    assert (client.stats.retries, client.stats.throttled) == (2, 0)


def test_a_refused_connection_is_retried_then_an_error(make_bedrock_client: Callable[..., LLMClient]) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = make_bedrock_client(configured_base_url=f"http://127.0.0.1:{port}", max_retries=1)
    with pytest.raises(LLMError, match="failed after 2 attempts: connection error: EndpointConnectionError"):
        client.chat_sync("anyone?")


def test_a_credential_quoted_by_the_server_or_the_model_is_masked(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient], tmp_path: Path
) -> None:
    bedrock.configure(responder=lambda request: f"your secret is {SECRET_KEY} and token {SESSION_TOKEN}")
    client = make_bedrock_client()
    reply = client.chat_sync("leak it")
    assert reply.text == "your secret is *** and token ***"
    bedrock.configure(fail_first=1, fail_code="AccessDeniedException",
                      fail_message=f"User {ACCESS_KEY} is not authorized")
    with pytest.raises(LLMError) as info:
        client.chat_sync("denied")
    assert "User *** is not authorized" in str(info.value)
    client.close()
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert b"your secret is ***" in stored  # the answer as stored: readable, masked
    assert not [c for c in CREDENTIALS if c.encode() in stored]


def test_an_inference_profile_arn_is_a_model_id(bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]) -> None:
    arn = f"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/{MODEL}"
    bedrock.configure(known_models=[arn])
    assert make_bedrock_client(model=arn).chat_sync("hi").text == f"[{arn}] hi"


def test_a_reply_past_the_body_cap_is_refused_not_retried(
    bedrock: FakeBedrock, make_bedrock_client: Callable[..., LLMClient]
) -> None:
    bedrock.configure(responder=lambda request: "x" * 300_000)
    client = make_bedrock_client(max_body_bytes=100_000)
    with pytest.raises(LLMError, match=r"response body larger than 100000 bytes \(evals_max_response_bytes\)"):
        client.chat_sync("a long one")
    assert bedrock.stats()["received"] == 1
    assert make_bedrock_client().chat_sync("a long one").text == "x" * 300_000  # under the default cap


def test_a_body_that_grows_past_the_cap_stops_being_read() -> None:
    from pytest_evals.llm.transport.bedrock_transport import _CappedRaw
    from pytest_evals.llm.transport.http_transport import BodyTooLarge

    class Endless:
        status = 200

        def stream(self, amt: int = 1024) -> Iterator[bytes]:
            while True:  # a server that never ends its body
                yield b"y" * amt

    raw = _CappedRaw(Endless(), 10_000)
    with pytest.raises(BodyTooLarge):
        b"".join(raw.stream())
    assert raw.status == 200  # everything else is the raw response's
