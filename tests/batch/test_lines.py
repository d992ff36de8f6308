"""Batch input files and result lines, on plain values (no server, no pytest run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.llm.batch.lines import InputWriter, parse_line, read_results
from pytest_evals.llm.batch.prices import batch_cost, batch_price_table

BODY = {"model": "m", "messages": [{"role": "user", "content": "x" * 100}], "temperature": 0}


def test_lines_are_split_at_the_line_and_byte_limits_and_deduplicated(tmp_path: Path) -> None:
    writer = InputWriter(tmp_path, "t", max_lines=3, max_bytes=10_000)
    for i in range(7):
        writer.add("ns", f"k{i}", BODY)
    writer.add("other", "k0", BODY)  # the same request from another namespace: no new line
    writer.close()
    assert [len(c.keys) for c in writer.chunks] == [3, 3, 1] and len(writer) == 7
    assert writer.chunks[0].keys["k0"] == ["ns", "other"]
    first = [json.loads(line) for line in writer.chunks[0].path.read_text().splitlines()]
    assert first[0] == {"custom_id": "k0", "method": "POST", "url": "/v1/chat/completions", "body": BODY}
    size = len(writer.chunks[0].path.read_bytes()) // 3
    by_bytes = InputWriter(tmp_path / "b", "t", max_lines=100, max_bytes=2 * size + 1)
    for i in range(5):
        by_bytes.add("ns", f"k{i}", BODY)
    by_bytes.close()
    assert [len(c.keys) for c in by_bytes.chunks] == [2, 2, 1]
    assert all(c.path.stat().st_size <= 2 * size + 1 for c in by_bytes.chunks)


def test_result_lines_answers_errors_and_garbage(tmp_path: Path) -> None:
    ok = {"custom_id": "a", "response": {"status_code": 200, "body": {
        "model": "m-1", "choices": [{"message": {"content": "Yes"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 1}}}, "error": None}
    failed = {"custom_id": "b", "response": {"status_code": 429, "body": {"error": {"message": "slow down"}}}, "error": None}
    expired = {"custom_id": "c", "response": None, "error": {"code": "batch_expired", "message": "expired"}}
    path = tmp_path / "out.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in (ok, failed, expired)) + "\nnot json\n")
    a, b, c, d = read_results(path)
    assert a.completion is not None and (a.completion.text, a.completion.model, a.completion.prompt_tokens) == ("Yes", "m-1", 7)
    assert b.completion is None and b.error == "batch line failed (HTTP 429): slow down"
    assert c.completion is None and "expired" in (c.error or "")
    assert d.key == "?line4" and "unreadable" in (d.error or "")
    no_choices = parse_line("e", {"response": {"status_code": 200, "body": {"model": "m"}}}, "m")
    assert no_choices.completion is None and "no 'choices'" in (no_choices.error or "")


def test_batch_prices_are_half_unless_given() -> None:
    table = {"gpt-4o-mini": (0.15, 0.60)}
    assert batch_cost("gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000, table, {}) == (0.15 + 0.60) / 2
    own = batch_price_table(["gpt-4o-mini=0.1,0.2"])
    assert batch_cost("gpt-4o-mini", 1_000_000, 1_000_000, table, own) == pytest.approx(0.3)
    assert batch_cost("unknown-model", 10, 10, table, own) is None


def test_downloaded_lines_are_masked_and_stay_json() -> None:
    """A reply that echoes a secret is masked as the output file is written, even when
    the secret is split across download chunks or escaped in the JSON."""
    from pytest_evals.hardening import redaction
    from pytest_evals.llm.batch.lines import masked_lines

    secret = 'sk-batch-"quoted"\\path-SECRET'
    redaction.clear()
    try:
        redaction.register(secret)
        lines = [
            json.dumps({"custom_id": "a", "text": f"echo {secret} and é"}, ensure_ascii=False),
            json.dumps({"custom_id": "b", "text": f"echo {secret}"}),  # escaped quotes and backslash
            json.dumps({"custom_id": "c", "text": "nothing to mask"}),
        ]
        data = ("\n".join(lines) + "\n").encode()
        for size in (1, 7, 64, len(data)):
            chunks = [data[i : i + size] for i in range(0, len(data), size)]
            out = b"".join(masked_lines(chunks))
            parsed = [json.loads(line) for line in out.decode().splitlines()]
            assert [p["text"] for p in parsed] == ["echo *** and é", "echo ***", "nothing to mask"]
            assert b"SECRET" not in out
        assert b"".join(masked_lines([b'{"no": "newline at the end"}'])) == b'{"no": "newline at the end"}'
    finally:
        redaction.clear()
