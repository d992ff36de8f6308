"""Honest labels: a local endpoint without --evals-model is asked for, shown and priced
as the model it serves, not as OpenAI's default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import endpoint_args, probe_suite


@pytest.mark.parametrize("workers", [None, "2"])
def test_local_endpoint_without_model_uses_the_servers_name_and_no_price(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, workers: str | None
) -> None:
    server.configure(served_models="smol-local,other", server_kind="llama.cpp", slots=2)
    probe_suite(pytester, ["a", "b", "c", "d"])
    out = tmp_path / "summary.json"
    extra = ["-n", workers] if workers else []
    result = pytester.runpytest(
        *endpoint_args(server, tmp_path / "c", "--evals-json", str(out)), *extra
    )
    result.assert_outcomes(passed=4)
    # Asked for by its own name (the first the server lists).
    assert {e["model"] for e in server.log()} == {"smol-local"}
    result.stdout.fnmatch_lines([
        "evals llm: http://127.0.0.1:*/v1: model smol-local (the server's own); 2 slots, "
        "context 4096 tokens (/props); at most 2 requests in flight",
        "*$0.0000 (+4 requests of unknown price: smol-local is served by a local endpoint: "
        "no built-in price applies (--evals-price MODEL=IN,OUT sets one))*",
    ])
    assert "gpt-4o-mini" not in result.stdout.str()
    llm = json.loads(out.read_text())["llm"]
    assert llm["model"] == "smol-local" and llm["model_source"] == "server"
    assert llm["judge"] == "smol-local"
    assert llm["cost_usd"] == 0 and llm["unpriced_requests"] == 4
    assert llm["endpoint"]["slots"] == 2 and llm["endpoint"]["models"] == ["smol-local", "other"]
    # Nothing throttled: the lowest concurrency is what was used (the server's slots,
    # shared by the workers), never 0.
    assert llm["lowest_concurrency"] == (2 if workers is None else 1)
    # A rerun answers from the cache under the same name: no completion asked.
    server.reset()
    again = pytester.runpytest(*endpoint_args(server, tmp_path / "c"), *extra)
    again.assert_outcomes(passed=4)
    assert server.stats()["received"] == 0


def test_a_named_model_and_a_users_price_are_kept(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    server.configure(served_models="smol-local")
    probe_suite(pytester, ["a", "b"])
    out = tmp_path / "summary.json"
    result = pytester.runpytest(
        *endpoint_args(
            server, tmp_path / "c", "--evals-model", "mine", "--evals-price", "mine=1000000,0",
            "--evals-json", str(out),
        )
    )
    result.assert_outcomes(passed=2)
    assert {e["model"] for e in server.log()} == {"mine"}
    llm = json.loads(out.read_text())["llm"]
    assert llm["model_source"] == "option" and llm["price_note"] is None
    assert llm["cost_usd"] == pytest.approx(llm["prompt_tokens"])


def test_unreachable_endpoint_is_one_line_before_the_first_case(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    probe_suite(pytester, ["a", "b", "c"])
    result = pytester.runpytest(
        "--evals-base-url", "http://127.0.0.1:9/v1", "--evals-cache-dir", str(tmp_path / "c"),
        "--evals-outage-wait", "1",
    )
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines([
        "evals llm: http://127.0.0.1:9/v1 not reachable before the first case (connection "
        "error: ConnectionRefusedError*); a request that needs it waits up to 1s, then every "
        "one fails with this reason",
    ])
    # Every case names the same reason: the first in full (and the summary line), the
    # others by a one-line reference; no completion was tried.
    # pytest's short summary repeats each error's first line (in full under CI=true)
    text = result.stdout.str().split("short test summary info")[0]
    assert text.count("unreachable for 1s (it never answered in this run)") == 2
    assert text.count("http://127.0.0.1:9/v1 unreachable: not sent") == 2
    assert "failed after" not in text


@pytest.mark.parametrize("workers", [None, "2"])
def test_a_rerun_with_the_server_down_uses_the_remembered_model_name(
    pytester: pytest.Pytester, tmp_path: Path, workers: str | None
) -> None:
    """The server's own model name is kept beside the cache: with the server down, a
    rerun names the same model, so the cache answers every case (and says why)."""
    probe_suite(pytester, ["a", "b", "c"])
    cache = tmp_path / "c"
    extra = ["-n", workers] if workers else []
    with FakeOpenAI() as srv:
        srv.configure(served_models="smol-local")
        url = srv.base_url
        first = pytester.runpytest(*endpoint_args(srv, cache), *extra)
        first.assert_outcomes(passed=3)
        assert {e["model"] for e in srv.log()} == {"smol-local"}
    kept = json.loads((cache / "endpoint_models.json").read_text())
    assert kept == {url: "smol-local"}  # keyed by the URL, nothing else written
    out = tmp_path / "again.json"
    again = pytester.runpytest(
        "--evals-base-url", url, "--evals-cache-dir", str(cache), "--evals-outage-wait", "1",
        "--evals-json", str(out), *extra,
    )
    again.assert_outcomes(passed=3)
    again.stdout.fnmatch_lines([
        f"evals llm: {url} not reachable before the first case*",
        "evals llm: model smol-local, the name this server gave in an earlier run (kept "
        "beside the cache): cached answers for it are used",
    ])
    llm = json.loads(out.read_text())["llm"]
    assert llm["model"] == "smol-local" and llm["model_source"] == "remembered"
    assert llm["cache_hits"] == 3 and llm["requests"] == 0 and llm["errors"] == 0
    assert "gpt-4o-mini" not in again.stdout.str()


def test_no_model_is_remembered_for_another_url(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A name kept for one server is not used for another URL: the default applies and
    the cache (keyed on the model) is not answered from another server's replies."""
    cache = tmp_path / "c"
    cache.mkdir()
    (cache / "endpoint_models.json").write_text(json.dumps({"http://127.0.0.1:1/v1": "x"}))
    probe_suite(pytester, ["a"])
    out = tmp_path / "s.json"
    result = pytester.runpytest(
        "--evals-base-url", "http://127.0.0.1:9/v1", "--evals-cache-dir", str(cache),
        "--evals-outage-wait", "1", "--evals-json", str(out),
    )
    result.assert_outcomes(errors=1)
    llm = json.loads(out.read_text())["llm"]
    assert llm["model"] != "x" and llm["model_source"] == "default"
    assert "earlier run" not in result.stdout.str()


def test_the_remembered_name_file_holds_no_credentials_and_survives_garbage(tmp_path: Path) -> None:
    from pytest_evals.llm.endpoint_models import FILE_NAME, recall, remember

    url = "http://user:s3cret-pass@127.0.0.1:8080/v1/?api_key=s3cret-key"
    remember(tmp_path, url, "smol")
    text = (tmp_path / FILE_NAME).read_text()
    assert "s3cret" not in text and "user" not in text
    assert recall(tmp_path, "http://127.0.0.1:8080/v1") == "smol"  # same endpoint
    assert recall(tmp_path, "http://127.0.0.1:8081/v1") is None  # another one
    for garbage in ("[1, 2]", "{not json", '{"http://127.0.0.1:8080/v1": 5}'):
        (tmp_path / FILE_NAME).write_text(garbage)
        assert recall(tmp_path, url) is None  # unreadable: nothing remembered, no error
    remember(tmp_path, url, "smol")  # and it is rewritten whole
    assert recall(tmp_path, url) == "smol"
    assert not list(tmp_path.glob(".endpoint_models.*"))  # no temporary file left
