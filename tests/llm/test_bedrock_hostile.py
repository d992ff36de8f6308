"""The Bedrock provider against a hostile runtime endpoint (tests/llm/bedrock_raw_server.py):
batch mode refused, the body cap on a chunked reply, text blocks and usage counts of the
wrong type or size, bodies that are not objects, and a region that is no region name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
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
