"""The LLM layer as users see it: options, fixtures, summary lines, JSON summary, dry run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.llm import get_settings, is_offline
from pytest_evals.testing.fake_openai import FakeOpenAI

from .helpers import answered_prompts, endpoint_args, probe_suite

USER_TEST = """
def test_complete(llm):
    assert llm.complete("ping") == "ping"

def test_chat(llm):
    reply = llm.chat_sync([{"role": "user", "content": "pong"}], temperature=0)
    assert reply.text == "pong" and reply.prompt_tokens > 0

def test_judge(judge):
    verdict, reply = judge.verdict_sync("Is this fine? Yes")
    assert verdict is True
"""


def test_settings_precedence(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini(
        """
        [pytest]
        evals_model = ini-model
        evals_base_url = http://ini.example/v1
        evals_concurrency = 7
        evals_prices = ini-model=1,2
        """
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.example/v1")
    monkeypatch.setenv("MY_KEY", "sk-from-env")
    config = pytester.parseconfig(
        "--evals-model",
        "cli-model",
        "--evals-api-key-env",
        "MY_KEY",
        "--evals-price",
        "cli-model=3,4",
    )
    s = get_settings(config)
    assert s.model == "cli-model"
    assert s.base_url == "http://ini.example/v1"  # ini beats the environment
    assert s.concurrency == 7
    assert s.api_key is not None and s.api_key.reveal() == "sk-from-env"
    assert s.prices["cli-model"] == (3.0, 4.0) and s.prices["ini-model"] == (1.0, 2.0)
    assert "sk-from-env" not in repr(s)


def test_offline_detection(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_offline(pytester.parseconfig())
    assert not is_offline(pytester.parseconfig("--evals-base-url", "http://127.0.0.1:1/v1"))
    assert is_offline(
        pytester.parseconfig("--evals-base-url", "http://127.0.0.1:1/v1", "--evals-offline")
    )
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    config = pytester.parseconfig()
    assert not is_offline(config) and get_settings(config).base_url == "https://api.openai.com/v1"


def test_cache_flags(pytester: pytest.Pytester) -> None:
    assert get_settings(pytester.parseconfig()).cache is True
    assert get_settings(pytester.parseconfig("--no-cache")).cache is False
    assert get_settings(pytester.parseconfig("--no-evals-cache")).cache is False
    assert get_settings(pytester.parseconfig("--no-cache", "--cache")).cache is True


def test_bad_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--evals-price", "gpt=cheap,1")
    result.stderr.fnmatch_lines(["*--evals-price 'gpt=cheap,1': prices must be numbers*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_fixtures_in_user_tests(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    pytester.makepyfile(USER_TEST)
    # Named: a local endpoint's own model has no built-in price (test_endpoint_labels.py).
    result = pytester.runpytest(*endpoint_args(server, tmp_path / "c", "--evals-model", "gpt-4o-mini"))
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["evals llm: 3 requests, 0 cache hits, 3 misses, * tokens, $0.0000, 0 errors"]
    )
    again = pytester.runpytest(*endpoint_args(server, tmp_path / "c", "--evals-model", "gpt-4o-mini"))
    again.assert_outcomes(passed=3)
    again.stdout.fnmatch_lines(["evals llm: 0 requests, 3 cache hits, 0 misses, *"])
    assert server.stats()["answered"] == 3


def test_fixtures_skip_when_offline(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USER_TEST)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["*no LLM endpoint configured*"])


def test_json_summary_and_header(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    probe_suite(pytester, [f"p{i}" for i in range(6)] + ["p0", "p1"])
    out = tmp_path / "summary.json"
    result = pytester.runpytest(
        *endpoint_args(
            server, tmp_path / "c", "--evals-model", "judge-9000", "--evals-json", str(out)
        )
    )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([f"judge: judge-9000 @ {server.base_url} (cache *)"])
    llm = json.loads(out.read_text())["llm"]
    assert llm["judge"] == "judge-9000" and llm["offline"] is False
    assert llm["base_url"] == server.base_url
    assert (llm["requests"], llm["cache_hits"], llm["cache_misses"], llm["errors"]) == (6, 2, 6, 0)
    assert llm["prompt_tokens"] > 0 and llm["completion_tokens"] > 0
    assert llm["unpriced_requests"] == 6  # judge-9000 has no price


def test_cost_uses_price_table(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    probe_suite(pytester, ["a" * 400])
    out = tmp_path / "summary.json"
    args = endpoint_args(
        server,
        tmp_path / "c",
        "--evals-model",
        "m1",
        "--evals-price",
        "m1=1000000,0",
        "--evals-json",
        str(out),
    )
    pytester.runpytest(*args).assert_outcomes(passed=1)
    llm = json.loads(out.read_text())["llm"]
    # 1,000,000 USD per million prompt tokens: the cost is the prompt token count.
    assert llm["cost_usd"] == pytest.approx(llm["prompt_tokens"])


def test_errors_make_cases_errors_not_failures(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    server.configure(script=[{"pattern": "ok", "reply": "ok"}], fail_first=0)
    probe_suite(pytester, ["ok", "boom", "ok2"])
    server.configure(rate_500=1.0)
    out = tmp_path / "summary.json"
    result = pytester.runpytest(
        *endpoint_args(server, tmp_path / "c", "--evals-max-retries", "1", "--evals-json", str(out))
    )
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*LLM request to * failed after 2 attempts: HTTP 500*"])
    assert json.loads(out.read_text())["llm"]["errors"] == 3


def test_dry_run_estimates_and_sends_nothing(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    probe_suite(pytester, ["cached one", "new one", "another new one"])
    cache = tmp_path / "c"
    # Fill the cache with one answer first (a normal run of a one-case suite).
    (pytester.path / "warm.jsonl").write_text(
        json.dumps({"id": "w", "prompt": "cached one", "expect": "cached one"}) + "\n"
    )
    (pytester.path / "warm.eval.yaml").write_text(
        json.dumps({"task": "llm_probe", "input_path": "warm.jsonl"})
    )
    # The model named: a local endpoint's own model has no built-in price to estimate with.
    named = ("--evals-model", "gpt-4o-mini")
    pytester.runpytest(
        *endpoint_args(server, cache, "--evals-max-tokens", "10", *named), "warm.eval.yaml"
    ).assert_outcomes(passed=1)
    server.reset()
    out = tmp_path / "summary.json"
    result = pytester.runpytest(
        *endpoint_args(
            server, cache, "--evals-dry-run", "--evals-max-tokens", "10", "--evals-json", str(out),
            *named,
        ),
        "probe.eval.yaml",
        "-rs",
    )
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "evals llm dry run: 2 uncached requests not sent*",
            "*dry run: uncached request to gpt-4o-mini not sent*",
        ]
    )
    assert server.stats()["received"] == 0
    llm = json.loads(out.read_text())["llm"]
    assert llm["dry_run_requests"] == 2 and llm["dry_run_completion_tokens"] == 20
    assert llm["dry_run_cost_usd"] > 0 and llm["requests"] == 0 and llm["cache_hits"] == 1


def test_summary_names_offline_judge(pytester: pytest.Pytester, tmp_path: Path) -> None:
    from pytest_evals.llm.llm_plugin import judge_line

    config = pytester.parseconfig()
    assert (
        judge_line(config)
        == "judge: all-MiniLM-L6-v2 (embedded offline judge) (no model endpoint configured), "
        "or a task's own offline rule (see each case's judge)"
    )


@pytest.mark.slow
def test_xdist_totals_and_no_duplicates(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    """Two workers, one cache: every distinct prompt is asked once; totals add up."""
    server.configure(latency=0.02)
    prompts = [f"shared {i % 15}" for i in range(60)]
    probe_suite(pytester, prompts)
    out = tmp_path / "summary.json"
    result = pytester.runpytest_subprocess(
        "-n", "2", *endpoint_args(server, tmp_path / "c", "--evals-json", str(out))
    )
    result.assert_outcomes(passed=60)
    answered = answered_prompts(server)
    assert len(answered) == 15 and set(answered.values()) == {1}, answered
    llm = json.loads(out.read_text())["llm"]
    assert llm["requests"] == 15 and llm["cache_hits"] == 45 and llm["cache_misses"] == 15


def test_faults_leave_every_case_scored_and_results_equal_at_any_concurrency(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    """10% 429 + 5% 500 + 2% malformed + 1% hang, whole runs at concurrency 1 and 64."""
    server.configure(
        latency=0.005,
        rate_429=0.10,
        rate_500=0.05,
        rate_malformed=0.02,
        rate_hang=0.01,
        retry_after=0.02,
        seed=5,
    )
    probe_suite(pytester, [f"faulty case {i}" for i in range(80)])
    summaries = []
    for concurrency in ("1", "64"):
        out = tmp_path / f"summary-{concurrency}.json"
        result = pytester.runpytest(
            *endpoint_args(server, tmp_path / f"cache-{concurrency}", "--evals-json", str(out)),
            *(
                "--evals-concurrency",
                concurrency,
                "--evals-timeout",
                "0.5",
                "--evals-max-retries",
                "8",
            ),
        )
        result.assert_outcomes(passed=80)
        summary = json.loads(out.read_text())
        assert summary["llm"]["errors"] == 0 and summary["llm"]["retries"] > 0
        summaries.append(summary["suites"][0]["metrics"])
    assert summaries[0] == summaries[1]
    assert summaries[0]["accuracy"]["value"] == 1.0
    outcomes = server.stats()["outcomes"]
    assert all(outcomes.get(k, 0) > 0 for k in ("429", "500", "malformed", "hang")), outcomes


def test_a_key_with_a_newline_is_a_usage_error_that_does_not_repeat_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key read from a file often keeps its last newline: no header may carry it, and
    each transport failed differently (the probe's error quoted the header, key and all)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-a-file-0123\n")
    result = pytester.runpytest("--evals-base-url", "http://127.0.0.1:9/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the API key (environment variable OPENAI_API_KEY) holds a line break*"])
    assert "0123" not in result.stdout.str() + result.stderr.str()
