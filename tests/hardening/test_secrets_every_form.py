"""Every secret, in every form it travels in, is absent from every file the run writes
(issue 30, attack 8).

The endpoint echoes the API key and the URL password in every form it could take: in
clear, percent-encoded with upper- and lower-case hex, base64 and base64url of the value
and of ``Bearer <value>`` at each of the three byte alignments, padded and not, and puts
the key in the reply's ``model`` and ``finish_reason`` too. The URL password is given
percent-encoded in lower-case hex, and a suite's ``what`` holds the key. Then every
written file (JSON summary, JUnit, both HTML reports, Markdown, the run folder with
results.jsonl/csv and manifest.json, the DEBUG log, the response cache's files and the
batch ledger) and the terminal are searched for each secret by decoding them, not by
matching the encodings the code knows: percent-decoding, and base64-decoding every run
of base64 characters at every offset, in both alphabets. Live on both transports, under
``-n 2``, on the ``openai`` SDK transport, and in batch mode.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote, unquote_plus

import pytest

from pytest_evals.hardening import redaction
from pytest_evals.testing.fake_openai import FakeOpenAI, FakeOpenAIApp, last_user_message
from tests.llm.helpers import probe_suite

KEY = "sk-h2-every-form-KEY-7c0ffee5b1a3d9"
USER = "carol"
PASSWORD = "pw/h2:every+form=9!x"
SECRETS = {"api key": KEY, "url password": PASSWORD}


def b64(text: str, *, url: bool = False, pad: bool = True) -> str:
    encode = base64.urlsafe_b64encode if url else base64.b64encode
    out = encode(text.encode()).decode()
    return out if pad else out.rstrip("=")


def echoed_forms() -> list[str]:
    """What the endpoint puts in a reply: each secret in each form."""
    pct = quote(PASSWORD, safe="")
    return [
        KEY,
        PASSWORD,
        f"Bearer {KEY}",
        f"{USER}:{PASSWORD}",
        pct,
        re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), pct),
        quote(KEY, safe=""),
        b64(KEY),
        b64(KEY, url=True, pad=False),
        b64(f"Bearer {KEY}"),
        b64(f"Bearer {KEY}", url=True, pad=False),
        b64(f"x{KEY}y"),  # the key at the second byte alignment
        b64(f"xy{KEY}", url=True),  # and at the third
        b64(PASSWORD),
        b64(f"{USER}:{PASSWORD}"),  # the Basic credential
        b64(f"!{PASSWORD}?", url=True, pad=False),
        b64(f"Bearer {PASSWORD}"),
    ]


# -- the independent search ---------------------------------------------------------------
_B64_RUN = re.compile(rb"[A-Za-z0-9+/_-]{8,}")


def _base64_decodings(data: bytes) -> Iterator[bytes]:
    """Every run of base64 characters decoded from each of its first four offsets (so a
    value at any alignment, inside any longer blob, is found), in both alphabets."""
    for match in _B64_RUN.finditer(data):
        run = match.group(0).replace(b"-", b"+").replace(b"_", b"/")
        for start in range(4):
            part = run[start:]
            if len(part) % 4 == 1:
                part = part[:-1]  # a lone last character holds no whole byte
            if part:
                yield base64.b64decode(part + b"=" * (-len(part) % 4))


def secrets_in(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace")
    found = []
    for name, value in SECRETS.items():
        raw = value.encode()
        if value in text:
            found.append(f"{name} in clear")
        elif value in unquote(text) or value in unquote_plus(text):
            found.append(f"{name} percent-encoded")
        elif any(raw in decoded for decoded in _base64_decodings(data)):
            found.append(f"{name} in base64")
    return found


def test_the_search_finds_every_echoed_form() -> None:
    """Guards the test below: each form the endpoint echoes is found when not masked."""
    for form in echoed_forms():
        assert secrets_in(f'{{"text": "said {form} here"}}'.encode()), form
    assert secrets_in(b"no secret here") == []


def test_every_form_is_masked_by_the_redaction_layer() -> None:
    redaction.clear()
    try:
        redaction.register(KEY)
        redaction.register_userinfo(USER, PASSWORD)
        for form in echoed_forms():
            masked = redaction.redact(f"said {form} here")
            assert secrets_in(masked.encode()) == [], (form, masked)
            assert redaction.contains_secret(f"said {form} here")
        # Inside longer base64 blobs, whatever surrounds the value.
        for before in ("", "a", "ab", "abc"):
            for after in ("", "z", "zz"):
                for url in (False, True):
                    for pad in (False, True):
                        blob = b64(f"{before}{KEY}{after}", url=url, pad=pad)
                        assert secrets_in(redaction.redact(blob).encode()) == [], blob
        # Percent-encoded in mixed case: registered as typed in the URL.
        mixed = "pw%2Fh2%3aevery%2bform%3D9%21x"
        redaction.register(mixed)
        assert secrets_in(redaction.redact(f"url {mixed}").encode()) == []
    finally:
        redaction.clear()


# -- the run ---------------------------------------------------------------------------------
def _shaped(request: dict[str, Any], reply: str, n: int) -> dict[str, Any]:
    body: dict[str, Any] = FakeOpenAIApp.completion_body(request, reply, n)
    if "ECHO" in reply:
        body["model"] = f"echo-model-{KEY}"
        body["choices"][0]["finish_reason"] = b64(f"Bearer {KEY}", url=True, pad=False)
    return body


def _responder(request: dict[str, Any]) -> str:
    prompt = last_user_message(request)
    if prompt.startswith("ECHO"):
        return "ECHO " + " | ".join(echoed_forms())
    return prompt


@pytest.fixture
def echo_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=_responder) as server:
        server.app.completion_body = _shaped  # type: ignore[method-assign]
        yield server


@pytest.mark.parametrize(
    ("mode", "xdist"),
    [("aiohttp", False), ("aiohttp", True), ("process", False), ("process", True), ("openai", False),
     ("batch", False), ("batch", True)],
    ids=["aiohttp", "aiohttp-n2", "process", "process-n2", "openai", "batch", "batch-n2"],
)
def test_no_secret_in_any_form_in_any_written_file(
    pytester: pytest.Pytester,
    echo_server: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    xdist: bool,
) -> None:
    prompts = ["ECHO one", "a plain question", "ECHO two", "another plain question"]
    what = f"judged with {KEY} ({b64(f'Bearer {KEY}')})"
    probe_suite(pytester, prompts, what=what)
    inputs = {p.name for p in pytester.path.iterdir()}
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    lower = re.sub("%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(PASSWORD, safe=""))
    base_url = echo_server.base_url.replace("http://", f"http://{USER}:{lower}@")
    out = pytester.path / "out"
    args = [
        "-p", "no:cacheprovider",
        "--evals-base-url", base_url,
        "--evals-cache-dir", str(pytester.path / "cache"),
        "--evals-json", str(out / "summary.json"),
        "--evals-report-dir", str(out / "runs"),
        "--evals-markdown", str(out / "summary.md"),
        "--junitxml", str(out / "junit.xml"),
        "--html", str(out / "report.html"), "--self-contained-html",
        "--log-file", str(out / "debug.log"), "--log-file-level", "DEBUG",
        "-rA", "-vv",
    ]
    if mode == "batch":
        args += ["--evals-batch", "--evals-batch-poll", "0.05"]
    else:
        args += ["--evals-transport", mode]
    if xdist:
        args += ["-n", "2"]
    result = pytester.runpytest_subprocess(*args)

    # The echoing cases fail (their reply is not their prompt); the others pass.
    result.assert_outcomes(passed=2, failed=2)
    stats = echo_server.stats()
    if mode == "batch":
        assert stats["batches_created"] >= 1 and stats["batch_lines"] == 4
    else:
        assert stats["answered"] == 4
    written = [p for p in pytester.path.rglob("*") if p.is_file() and p.relative_to(pytester.path).parts[0] not in inputs]
    names = {p.name for p in written}
    assert {"summary.json", "summary.md", "junit.xml", "report.html", "debug.log", "cache.db",
            "results.jsonl", "manifest.json"} <= names, sorted(names)
    if mode == "batch":
        assert any(p.parent.name == "_batches" and p.name.startswith("job-") for p in written)
    leaks = [f"{p.relative_to(pytester.path)}: {what}" for p in written for what in secrets_in(p.read_bytes())]
    leaks += [f"{stream}: {what}" for stream, text in (("stdout", result.stdout.str()), ("stderr", result.stderr.str()))
              for what in secrets_in(text.encode())]
    assert leaks == []
    # What was masked is still there to read around the mask.
    assert "***" in (out / "summary.json").read_text(encoding="utf-8")


def test_escaped_forms_of_a_secret_with_markup_characters_are_masked() -> None:
    """A password holding ``&``, ``<``, ``"`` or a backslash is masked where HTML, XML or
    JSON escaped it, and the escaped text stays well formed around the mask."""
    import html
    import json

    secret = 'p&w<"x\\y>-SECRET-é'
    redaction.clear()
    try:
        redaction.register(secret)
        for text in (html.escape(secret), html.escape(secret, quote=False), json.dumps(secret),
                     json.dumps(secret, ensure_ascii=False)):
            masked = redaction.redact(f"[{text}]")
            assert "SECRET" not in masked and "***" in masked, masked
        assert json.loads(redaction.redact(json.dumps({"k": f"a {secret} b"}))) == {"k": "a *** b"}
    finally:
        redaction.clear()
