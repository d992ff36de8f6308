"""The API key never reaches a file, a report, a log line or an error message."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_evals.hardening import redaction as redact
from pytest_evals.llm import LLMClient, LLMError, LLMSettings
from pytest_evals.llm.secret import Secret
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import TEST_KEY, closing, run
from .helpers import endpoint_args, probe_suite

WRONG_KEY = "sk-wrong-9f8e7d6c5b4a39281706SECRET"

USER_TESTS = """
def test_answer_mismatch(llm):
    reply = llm.chat_sync("tell me")
    assert reply.text == "something else"

def test_ok(llm):
    assert llm.complete("fine") == "fine"
"""


def files_containing(root: Path, needle: str) -> list[Path]:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and needle.encode() in path.read_bytes():
            hits.append(path)
    return hits


def test_repr_and_error_messages_hide_the_key(server: FakeOpenAI, tmp_path: Path) -> None:
    server.configure(require_key=TEST_KEY)
    settings = LLMSettings(
        configured_base_url=server.base_url,
        api_key=Secret(WRONG_KEY),
        cache_dir=tmp_path,
        max_retries=0,
    )
    client = LLMClient(settings)
    assert WRONG_KEY not in repr(client) + repr(settings) + str(settings.api_key)
    with pytest.raises(LLMError) as info:
        run(closing(client, client.chat("hi", namespace="t")))
    client.close()
    text = str(info.value) + repr(info.value) + str(info.value.cause)
    assert "HTTP 401" in text and "Incorrect API key provided: ***" in text
    assert WRONG_KEY not in text
    # The server really echoed the key: the redaction is what kept it out.
    assert server.stats()["outcomes"] == {"unauthorized": 1}


def test_secret_cannot_be_pickled() -> None:
    import pickle

    with pytest.raises(TypeError):
        pickle.dumps(Secret("sk-x"))


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_key_absent_from_every_written_file(
    pytester: pytest.Pytester,
    server: FakeOpenAI,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
) -> None:
    server.configure(require_key=TEST_KEY)
    probe_suite(pytester, [f"question {i}" for i in range(5)])
    pytester.makepyfile(test_user=USER_TESTS)
    cache_dir = tmp_path / "cache"
    outputs = pytester.path / "out"
    outputs.mkdir()

    def run_with(key: str, tag: str) -> pytest.RunResult:
        monkeypatch.setenv("OPENAI_API_KEY", key)
        return pytester.runpytest_subprocess(
            *endpoint_args(
                server, cache_dir, "--evals-max-retries", "0", "--evals-transport", transport
            ),
            "-l",
            "-rA",
            "-vv",
            "--tb=long",
            f"--junitxml={outputs}/junit-{tag}.xml",
            f"--evals-json={outputs}/summary-{tag}.json",
            f"--html={outputs}/report-{tag}.html",
            "--self-contained-html",
            f"--log-file={outputs}/log-{tag}.txt",
            "--log-file-level=DEBUG",
        )

    good = run_with(TEST_KEY, "good")
    good.assert_outcomes(passed=6, failed=1)
    bad = run_with(WRONG_KEY, "bad")  # every uncached request fails with a 401 echoing the key
    bad.assert_outcomes(passed=6, failed=1)  # everything it asks was cached by the first run
    pytester.path.joinpath("test_fresh.py").write_text(
        'def test_new(llm):\n    llm.complete("never asked before")\n'
    )
    fresh = run_with(WRONG_KEY, "fresh")
    fresh.assert_outcomes(passed=6, failed=2)
    fresh.stdout.fnmatch_lines(["*HTTP 401: Incorrect API key provided: [*][*][*].*"])
    assert server.stats()["outcomes"].get("unauthorized", 0) >= 1

    written = [p.name for p in outputs.iterdir()]
    assert {"junit-good.xml", "summary-good.json", "report-good.html", "log-good.txt"} <= set(
        written
    )
    for key in (TEST_KEY, WRONG_KEY):
        for root in (pytester.path, cache_dir):
            assert files_containing(root, key) == []
        for result in (good, bad, fresh):
            assert key not in "\n".join(result.outlines + result.errlines)


def test_a_query_string_credential_stays_out_of_the_reported_settings() -> None:
    # Some gateways take the key in the URL (?key=...); userinfo was already dropped.
    settings = LLMSettings(configured_base_url="http://user:pw123@gw.example:8080/v1?key=QUERYSECRET&x=1")
    public = settings.public()
    assert public["base_url"] == "http://gw.example:8080/v1"
    assert "QUERYSECRET" not in repr(public) and "pw123" not in repr(public)


def test_a_query_string_credential_is_a_secret_everywhere() -> None:
    # The command line (a run folder's manifest.json), errors and logs quote the URL
    # whole: a credential in its query is masked like the key, ordinary parameters stay.
    redact.clear()
    LLMSettings(configured_base_url="http://gw.example/v1?api-version=2024-02-01&key=QSEC%2BRET77&access_token=TOKVAL99")
    shown = redact.redact("--evals-base-url http://gw.example/v1?api-version=2024-02-01&key=QSEC%2BRET77&access_token=TOKVAL99; QSEC+RET77")
    assert "QSEC" not in shown and "TOKVAL99" not in shown
    assert "api-version=2024-02-01" in shown
    redact.clear()
