"""A base URL with a query string (a gateway's ``?api-version=``, a key-in-URL proxy's
``?key=``): every request puts its path before the query and keeps the query, through
every transport, the endpoint probe and the Batch API; the key is never written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.cli.main import main
from pytest_evals.llm.batch import ledger
from pytest_evals.llm.batch.service import BatchService
from pytest_evals.llm.endpoint_probe import (
    endpoint_url,
    probe_endpoint_sync,
    server_root,
    split_query,
)
from pytest_evals.llm.settings import LLMSettings, display_url
from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import probe_suite

QUERY = "api-version=2024-01-01&key=QSECRET"


def query_url(server: FakeOpenAI) -> str:
    """The server's base URL with the gateway query it now insists on."""
    server.configure(require_query=QUERY)
    return f"{server.base_url}?{QUERY}"


def no_key_written(pytester: pytest.Pytester, result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "QSECRET" not in text, text[-3000:]
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert b"QSECRET" not in path.read_bytes(), path


def test_endpoint_url_puts_the_path_before_the_query() -> None:
    path = "/chat/completions"
    assert endpoint_url("http://h:8/v1", path) == "http://h:8/v1/chat/completions"
    assert endpoint_url("http://h:8/v1/", path) == "http://h:8/v1/chat/completions"
    assert endpoint_url("http://h/v1?key=S", path) == "http://h/v1/chat/completions?key=S"
    assert endpoint_url("http://h/v1/?api-version=1&key=S", "models") == "http://h/v1/models?api-version=1&key=S"
    # The fragment is never sent; the query keeps its encoding as typed.
    assert endpoint_url("http://h/v1?key=a%2Fb#frag", path) == "http://h/v1/chat/completions?key=a%2Fb"
    assert endpoint_url("http://h/v1#frag", path) == "http://h/v1/chat/completions"
    assert endpoint_url("http://h", "/props") == "http://h/props"
    # llama.cpp's /props sits beside /v1, with the same query.
    assert endpoint_url(server_root("http://h:8/v1/?key=S"), "/props") == "http://h:8/props?key=S"
    assert server_root("http://h:8080/v1/") == "http://h:8080"


def test_split_query_gives_the_sdk_a_clean_base_and_its_parameters() -> None:
    assert split_query("http://h/v1/?api-version=2024-01-01&key=a%2Fb#f") == (
        "http://h/v1",
        {"api-version": "2024-01-01", "key": "a/b"},
    )
    assert split_query("http://h/v1") == ("http://h/v1", {})
    assert split_query("http://h/v1?flag") == ("http://h/v1", {"flag": ""})


@pytest.mark.parametrize(
    ("transport", "workers"),
    [(None, None), (None, "2"), ("aiohttp", None), ("lean", None), ("process", None), ("openai", None)],
)
def test_a_suite_through_a_gateway_with_a_query_gets_answers(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, transport: str | None, workers: str | None
) -> None:
    prompts = [f"q{i}" for i in range(6)]
    probe_suite(pytester, prompts)
    out = tmp_path / "s.json"
    args = [
        "--evals-base-url", query_url(server), "--evals-model", "m",
        "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-report-dir", str(pytester.path / "runs"), "-p", "no:cacheprovider",
    ]
    if transport:
        args += ["--evals-transport", transport]
    if workers:
        args += ["-n", workers]
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest)(*args)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == 0, text[-3000:]
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["suites"][0]["cases"]["errors"] == 0
    stats = server.stats()
    assert stats["query_refused"] == 0
    assert stats["queried"]["/v1/chat/completions"] == len(prompts) == stats["answered"]
    assert summary["llm"]["base_url"] == server.base_url  # shown without its query
    no_key_written(pytester, result)


@pytest.mark.parametrize("given_as", ["ini", "env"])
def test_the_query_is_kept_from_the_ini_key_and_the_environment(
    pytester: pytest.Pytester, server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, given_as: str
) -> None:
    base = query_url(server)
    probe_suite(pytester, ["a", "b", "c"])
    if given_as == "ini":
        pytester.makeini(f"[pytest]\nevals_base_url = {base}\n")
    else:
        monkeypatch.setenv("OPENAI_BASE_URL", base)
    result = pytester.runpytest("--evals-model", "m", "--evals-cache-dir", str(pytester.path / "cache"))
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert server.stats()["queried"]["/v1/chat/completions"] == 3
    assert "QSECRET" not in result.stdout.str() + result.stderr.str()


def test_the_endpoint_probe_asks_models_and_props_with_the_query(server: FakeOpenAI) -> None:
    base = query_url(server)
    server.configure(served_models="served-model", server_kind="llama.cpp", slots=3, max_context=2048)
    info = probe_endpoint_sync(base)
    assert info.reachable and info.models == ("served-model",)
    assert (info.slots, info.context) == (3, 2048)
    stats = server.stats()
    assert stats["queried"] == {"/v1/models": 1, "/props": 1}
    assert stats["query_refused"] == 0


def test_a_run_uses_the_model_the_probe_read_through_the_query(
    pytester: pytest.Pytester, server: FakeOpenAI
) -> None:
    """No --evals-model: the local server's own model, read from ``/models`` with the
    query, is the one every request names."""
    base = query_url(server)
    server.configure(served_models="served-model")
    probe_suite(pytester, ["a", "b"])
    result = pytester.runpytest("--evals-base-url", base, "--evals-cache-dir", str(pytester.path / "cache"))
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert {entry["model"] for entry in server.log()} == {"served-model"}
    assert server.stats()["queried"]["/v1/models"] >= 1
    no_key_written(pytester, result)


@pytest.mark.parametrize("workers", [None, "2"])
def test_the_batch_api_is_asked_with_the_query(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, workers: str | None
) -> None:
    probe_suite(pytester, [f"q{i}" for i in range(5)], batch=True)
    out = tmp_path / "s.json"
    args = [
        "--evals-base-url", query_url(server), "--evals-model", "m",
        "--evals-cache-dir", str(pytester.path / "cache"), "--evals-json", str(out),
        "--evals-batch-poll", "0.02", "-p", "no:cacheprovider",
    ]
    if workers:
        args += ["-n", workers]
    result = (pytester.runpytest_subprocess if workers else pytester.runpytest)(*args)
    assert result.ret == 0, (result.stdout.str() + result.stderr.str())[-3000:]
    stats = server.stats()
    assert (stats["batches_created"], stats["batch_lines"], stats["received"]) == (1, 5, 0)
    assert stats["query_refused"] == 0
    queried = stats["queried"]
    assert queried["/v1/files"] == 1 and queried["/v1/batches"] >= 2  # the availability check, the create
    assert any(p.startswith("/v1/batches/") for p in queried)
    assert any(p.endswith("/content") for p in queried)
    summary = json.loads(out.read_text(encoding="utf-8"))
    assert summary["suites"][0]["cases"]["errors"] == 0
    no_key_written(pytester, result)


def test_batch_status_and_cancel_reach_a_gateway_through_the_given_url(
    server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ledger records the endpoint without its query (the key is a secret); the CLI
    asks with the query of ``--base-url`` or ``OPENAI_BASE_URL`` when it is that endpoint."""
    base = query_url(server)
    server.configure(batch_delay=600)  # stays in progress
    service = BatchService(LLMSettings(configured_base_url=base))
    lines = tmp_path / "in.jsonl"
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    lines.write_text(json.dumps({"custom_id": "k1", "method": "POST", "url": "/v1/chat/completions", "body": body}) + "\n")
    batch = service.create(service.upload(lines), {})
    service.close()
    cache = tmp_path / "cache"
    job = ledger.Job.new(display_url(LLMSettings(configured_base_url=base).base_url), "run", 1, lines, {"k1": ["n"]}, 1)
    job.status, job.batch_id = "submitted", batch.id
    job.save(cache)
    assert job.base_url == server.base_url

    def status(*extra: str) -> dict[str, object]:
        assert main(["batch", "status", "--cache-dir", str(cache), "--json", *extra]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        return dict(row)

    assert "status unavailable" in str(status()["note"])  # the recorded URL alone: refused
    assert status("--base-url", base)["batch_status"] == "in_progress"
    monkeypatch.setenv("OPENAI_BASE_URL", base)
    assert status()["batch_status"] == "in_progress"
    # Another endpoint's URL is not used for this job.
    assert "status unavailable" in str(status("--base-url", "http://127.0.0.1:9/v1?key=QSECRET")["note"])
    assert main(["batch", "cancel", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr()
    assert f"{batch.id}: cancelling" in out.out and "QSECRET" not in out.out + out.err
    assert server.stats()["batches_cancelled"] == 1


def test_a_rotated_query_key_finds_the_answers_paid_for_with_the_old_one(
    pytester: pytest.Pytester, server: FakeOpenAI
) -> None:
    # Like a changed password in the URL or a new API key: the credential is not part of
    # what was asked. Another api-version is another endpoint: asked again.
    prompts = [f"q{i}" for i in range(4)]
    probe_suite(pytester, prompts)

    def run(query: str) -> pytest.RunResult:
        server.configure(require_query=query)
        return pytester.runpytest(
            "--evals-base-url", f"{server.base_url}?{query}", "--evals-model", "m",
            "--evals-cache-dir", str(pytester.path / "cache"), "-p", "no:cacheprovider",
        )  # fmt: skip

    assert run("api-version=1&key=OLDKEY").ret == 0
    assert server.stats()["answered"] == len(prompts)
    assert run("api-version=1&key=NEWKEY").ret == 0
    assert server.stats()["answered"] == len(prompts)  # every answer from the cache
    assert run("api-version=2&key=NEWKEY").ret == 0
    assert server.stats()["answered"] == 2 * len(prompts)


def test_the_cache_key_leaves_out_only_the_querys_credentials() -> None:
    def keyed(url: str) -> str:
        return LLMSettings(configured_base_url=url).keyed_base_url

    assert keyed("http://u:pw@h/v1/?api-version=1&key=S&sig=T&x-token=U") == "http://h/v1?api-version=1"
    assert keyed("http://h/v1?Api_Key=S&deployment=d") == "http://h/v1?deployment=d"
    assert keyed("http://h/v1") == "http://h/v1"
