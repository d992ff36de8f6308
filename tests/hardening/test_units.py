"""Unit checks of the hardening pieces, on plain values (no pytest runs)."""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from pytest_evals.hardening import redaction as redact
from pytest_evals.llm.retry import parse_retry_after, status_error
from pytest_evals.llm.settings import LLMSettings, split_userinfo
from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.output import strict_json as strictjson
from pytest_evals.suites.jsonl_cases import too_deep
from pytest_evals.suites.suite_config import load_yaml_limited


def test_every_form_of_a_registered_secret_is_masked() -> None:
    secret = "tok/en+with=odd&chars-1234"
    redact.register(secret)
    raw = secret.encode()
    forms = [
        secret,
        quote(secret, safe=""),
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
    ]
    for form in forms:
        assert redact.redact(f"before {form} after") == "before *** after", form
    assert redact.redact("nothing secret here") == "nothing secret here"


def test_userinfo_is_stripped_and_becomes_basic_auth() -> None:
    settings = LLMSettings(configured_base_url="http://bob:pa%40ss-word-9@example.test:8080/v1?x=1")
    assert settings.base_url == "http://example.test:8080/v1?x=1"
    assert settings.authorization == "Basic " + base64.b64encode(b"bob:pa@ss-word-9").decode()
    # reports show it without the query string, as every other report line does
    assert settings.public()["base_url"] == "http://example.test:8080/v1"
    text = f"got {settings.authorization} for bob:pa@ss-word-9 and pa%40ss-word-9"
    assert "pa@ss" not in redact.redact(text) and "pa%40ss" not in redact.redact(text)
    assert split_userinfo("http://host/v1") == ("http://host/v1", None)


def test_header_values_register_their_credential() -> None:
    redact.register_headers({"Authorization": "Bearer hdr-credential-5678", "X-Key": "plainvalue-42"})
    assert redact.redact("token hdr-credential-5678 and plainvalue-42") == "token *** and ***"


def test_surrogates_are_escaped_and_json_is_strict() -> None:
    assert redact.escape_surrogates("a\ud800b") == "a\\ud800b"
    text = strictjson.dumps({"x": float("nan"), "y": [float("inf"), 1.5], "s": "bad \udfff"})
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {"x": None, "y": [None, 1.5], "s": "bad \\udfff"}
    text.encode("utf-8")  # encodable


def test_dirty_finds_a_secret_or_a_surrogate_anywhere_in_a_result() -> None:
    redact.register("deep-secret-value-77")
    clean = {"data": {"knowledge": "Arthur’s Magazine (1844–1846) — café " * 50, "n": 3}, "k": ["ü"]}
    assert not redact.dirty(clean) and redact.scrub_obj(clean) is clean
    for dirty in (
        {"data": {"knowledge": "café " * 50 + "deep-secret-value-77", "n": 3}},
        {"data": {"knowledge": "plain ascii", "list": ["x", ("y", "bad \ud800 here")]}},
        {"a key with deep-secret-value-77": 1},
        {"data": [{"x": base64.b64encode(b"deep-secret-value-77").decode()}]},
    ):
        assert redact.dirty(dirty), dirty
        scrubbed = redact.scrub_obj(dirty)
        assert not redact.dirty(scrubbed), scrubbed
        json.dumps(scrubbed, ensure_ascii=False).encode("utf-8")
    assert redact.contains_secret("x deep-secret-value-77 y") and not redact.contains_secret("x y")


def test_log_records_are_masked_at_creation(caplog: pytest.LogCaptureFixture) -> None:
    redact.install_log_redaction()
    redact.register("log-secret-abcdef")
    with caplog.at_level(logging.INFO):
        logging.getLogger("some.library").info("sent %s", "log-secret-abcdef")
    assert caplog.records[-1].getMessage() == "sent ***"


def test_depth_ignores_brackets_inside_strings() -> None:
    assert too_deep(b'{"a": "' + b"[" * 500 + b'"}', 10) is None
    assert too_deep(b'{"a": "\\"[[[[", "b": [[[1]]]}', 3) == 4
    assert too_deep(b"[" * 11 + b"]" * 11, 10) == 11


def test_yaml_sharing_is_fine_but_expansion_is_bounded() -> None:
    assert load_yaml_limited("a: &a {x: 1}\nb: *a\nc: *a\n", "f") == {"a": {"x": 1}, "b": {"x": 1}, "c": {"x": 1}}
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(9)
    )
    started = time.monotonic()
    with pytest.raises(SuiteConfigError, match="expands to more than"):
        load_yaml_limited(bomb, "bomb.yaml")
    assert time.monotonic() - started < 2


def test_unparseable_retry_after_is_still_throttling() -> None:
    assert parse_retry_after({"Retry-After": "whenever you like"}) is None
    error = status_error(429, "slow down", {"Retry-After": "Mon, 99 Foo 2026"})
    assert error.throttled and error.retryable and error.retry_after is None


def test_strict_json_files_written_atomically(tmp_path: Path) -> None:
    from pytest_evals.output.artifacts import atomic_write

    redact.register("file-secret-xyz9")
    atomic_write(tmp_path / "a.txt", "x file-secret-xyz9 \ud800")
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "x *** \\ud800"
