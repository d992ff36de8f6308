"""A rag_answers suite judged through Bedrock, end to end: pytest runs (pytester
subprocesses) whose judge requests go through botocore, SigV4-signed, to the loopback
fake of the Converse API. Cached (a rerun asks nothing), throttling retried, usage
counted, the same numbers under -n 2, and no credential in any file the runs wrote."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.rag.prompts import PROMPTS
from pytest_evals.testing.fake_bedrock import FakeBedrock

from .bedrock_fixtures import (
    ACCESS_KEY,
    CREDENTIALS,
    MODEL,
    credential_forms,
    files_holding_credentials,
    seal_aws,
)

RELEVANCE_OPENING = PROMPTS["relevance"].splitlines()[0]
N_CASES = 8

CONTEXT = {
    "exact_path": "/winter-fuel-payment#how-much",
    "title": "Winter Fuel Payment",
    "heading_hierarchy": ["What you'll get", "How much"],
    "description": "How much you can get.",
    "html_content": "<p>You'll get &pound;300 if you live alone.</p>",
}


def verdicts(n: int) -> tuple[int, int]:
    """(yes, no) statements the judge finds in case n's answer."""
    return n % 4 + 1, n % 3


def relevance_judge(request: dict[str, Any]) -> str:
    """Answers the rag relevance prompt from the case number in its question."""
    prompt = next((m["content"] for m in request["messages"] if m["role"] == "user"), "")
    if not prompt.startswith(RELEVANCE_OPENING):
        return "An answer."
    found = re.search(r"Question number (\d+):", prompt)
    assert found, prompt[:300]
    yes, no = verdicts(int(found.group(1)))
    statements = [{"statement": f"s{i}", "verdict": "yes" if i < yes else "no", "reason": "r"}
                  for i in range(yes + no)]
    return json.dumps({"statements": statements, "reason": "judged on Bedrock"})


EXPECTED_MEAN = sum(y / (y + n) for y, n in map(verdicts, range(N_CASES))) / N_CASES


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    seal_aws(monkeypatch, tmp_path)
    with FakeBedrock(responder=relevance_judge, require_access_key=ACCESS_KEY, known_models=[MODEL]) as server:
        yield server


def write_rag_suite(pytester: pytest.Pytester) -> None:
    cases = [{"id": f"c{i}", "question": f"Question number {i}: how much do I get?",
              "ideal_answer": "You get £300 if you live alone.",
              "llm_answer": "You'll get £300 if you live alone.", "structured_contexts": [CONTEXT]}
             for i in range(N_CASES)]
    (pytester.path / "rag.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"task": "rag_answers", "input_path": "rag.jsonl",
             "metrics": [{"name": "relevance", "threshold": 0.5}],
             "thresholds": {"relevance": {"mean": {"min": 0.3}}}}
    (pytester.path / "rag.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")


def bedrock_args(fake: FakeBedrock, *extra: str) -> list[str]:
    return ["-p", "no:cacheprovider", "--evals-provider", "bedrock", "--evals-aws-region", "eu-west-1",
            "--evals-base-url", fake.endpoint_url, "--evals-model", MODEL, *extra]


def run_judged(pytester: pytest.Pytester, fake: FakeBedrock, tag: str, cache: str, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "out"
    out.mkdir(exist_ok=True)
    result = pytester.runpytest_subprocess(
        *bedrock_args(fake, "--evals-cache-dir", cache),
        "-rA", "-vv", "-l", "--tb=long",
        f"--evals-json={out}/summary-{tag}.json",
        f"--junitxml={out}/junit-{tag}.xml",
        f"--html={out}/report-{tag}.html", "--self-contained-html",
        f"--log-file={out}/log-{tag}.txt", "--log-file-level=DEBUG",
        *extra,
    )
    summary = json.loads((out / f"summary-{tag}.json").read_text(encoding="utf-8"))
    return result, summary


def numbers(summary: dict[str, Any]) -> dict[str, Any]:
    suite = summary["suites"][0]
    return {"metrics": suite["metrics"], "cases": suite["cases"], "gates": suite["gates"]}


LLM_TOTALS = ("requests", "attempts", "retries", "throttled", "prompt_tokens", "completion_tokens", "errors")


@pytest.mark.slow
def test_bedrock_judged_rag_suite_cached_retried_and_leaking_nothing(
        pytester: pytest.Pytester, fake: FakeBedrock, monkeypatch: pytest.MonkeyPatch) -> None:
    # a user who also has an OpenAI key: it must not travel to AWS in any request
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-key-that-stays-home")
    write_rag_suite(pytester)
    fake.configure(throttle_first=1)  # every request is throttled once before its answer

    first, plain = run_judged(pytester, fake, "plain", "cache-plain")
    assert first.ret == 0, first.stdout.str()[-3000:]
    llm = plain["llm"]
    assert (llm["provider"], llm["aws_region"], llm["base_url"]) == ("bedrock", "eu-west-1", fake.endpoint_url)
    served = fake.stats()
    assert served["outcomes"] == {"throttled": N_CASES, "ok": N_CASES}
    # nothing but Converse reached AWS: no OpenAI-style probe (/models, /props, /batches)
    assert served["other"] == []
    assert served["signed"] == served["received"] == 2 * N_CASES
    assert {k: llm[k] for k in LLM_TOTALS} == {
        "requests": N_CASES, "attempts": 2 * N_CASES, "retries": N_CASES, "throttled": N_CASES,
        "prompt_tokens": served["input_tokens"], "completion_tokens": served["output_tokens"], "errors": 0,
    }
    assert served["input_tokens"] > 0 and served["output_tokens"] > 0
    relevance = plain["suites"][0]["metrics"]["relevance"]["mean"]
    assert relevance["n"] == N_CASES and relevance["value"] == pytest.approx(EXPECTED_MEAN)
    first.stdout.fnmatch_lines([f"*judge: {MODEL} @ {fake.endpoint_url}*",
                                f"*evals llm: {N_CASES} requests ({N_CASES} retries, {N_CASES} throttled)*"])

    # The rerun is answered from the cache: nothing reaches Bedrock.
    rerun, cached = run_judged(pytester, fake, "rerun", "cache-plain")
    assert rerun.ret == 0
    assert fake.stats()["received"] == 2 * N_CASES
    assert (cached["llm"]["requests"], cached["llm"]["cache_hits"]) == (0, N_CASES)
    assert numbers(cached) == numbers(plain)

    # Two workers, a fresh cache, the same throttling: the same numbers.
    fake.reset()
    two, xdist = run_judged(pytester, fake, "two", "cache-two", "-n", "2")
    assert two.ret == 0, two.stdout.str()[-3000:]
    assert numbers(xdist) == numbers(plain)
    assert {k: xdist["llm"][k] for k in LLM_TOTALS} == {k: llm[k] for k in LLM_TOTALS}

    # No credential, in clear or base64, in anything written: outputs, DEBUG logs
    # (botocore logs its signed requests), both caches, the terminal.
    written = {p.name for p in (pytester.path / "out").iterdir()}
    assert {"summary-plain.json", "junit-plain.xml", "report-plain.html", "log-plain.txt"} <= written
    assert (pytester.path / "cache-plain").is_dir() and (pytester.path / "cache-two").is_dir()
    assert "botocore" in (pytester.path / "out" / "log-plain.txt").read_text(encoding="utf-8")
    assert files_holding_credentials(pytester.path) == []
    for result in (first, rerun, two):
        terminal = "\n".join(result.outlines + result.errlines)
        assert not [form for form in credential_forms() if form in terminal]


def test_unknown_model_is_a_case_error_naming_the_setting(pytester: pytest.Pytester, fake: FakeBedrock) -> None:
    write_rag_suite(pytester)
    result = pytester.runpytest_subprocess(*bedrock_args(fake), "--evals-model", "gpt-4o-mini",
                                           "--evals-json", "summary.json", "-rA")
    assert result.ret == 1
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["suites"][0]["cases"]["errors"] == N_CASES
    result.stdout.fnmatch_lines(["*ValidationException: The provided model identifier is invalid.*--evals-model*"])
    assert fake.stats()["received"] == N_CASES  # not retried


BEDROCK = ["--evals-provider", "bedrock"]
REGION = ["--evals-aws-region", "eu-west-1"]


@pytest.mark.parametrize(
    "drop, args, message",
    [
        ("region", BEDROCK, "*--evals-provider bedrock: no AWS region; set --evals-aws-region (ini evals_aws_region)*"),
        ("credentials", [*BEDROCK, *REGION], "*--evals-provider bedrock: no AWS credentials found*AWS_ACCESS_KEY_ID*"),
        ("", [*BEDROCK, *REGION, "--evals-transport", "process"], "*--evals-transport process: only for the OpenAI-compatible provider*"),
        ("", [*BEDROCK, *REGION, "-o", "evals_bedrock_models=broken"], "*evals_bedrock_models 'broken': expected KEY=MODEL_ID*"),
        ("", [*REGION, "-o", "evals_provider=bedrok"], "*--evals-provider 'bedrok': choose one of openai, bedrock*"),
    ],
)
def test_bad_configuration_is_a_usage_error_naming_the_setting(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, drop: str, args: list[str], message: str
) -> None:
    seal_aws(monkeypatch, tmp_path, credentials=drop != "credentials")
    write_rag_suite(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_region_from_govuks_variable_and_the_profile(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seal_aws(monkeypatch, tmp_path)
    pytester.makepyfile(test_region="""
        from pytest_evals.llm import get_settings
        def test_region(pytestconfig):
            s = get_settings(pytestconfig)
            print("REGION", s.aws_region, s.base_url)
    """)
    monkeypatch.setenv("AWS_BEDROCK_REGION", "eu-west-2")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-provider", "bedrock", "-s")
    result.stdout.fnmatch_lines(["*REGION eu-west-2 https://bedrock-runtime.eu-west-2.amazonaws.com*"])
    monkeypatch.delenv("AWS_BEDROCK_REGION")
    monkeypatch.delenv("AWS_REGION")
    (tmp_path / "no-aws-config").write_text("[default]\nregion = ap-southeast-2\n", encoding="utf-8")
    pytester.makeini("[pytest]\nevals_provider = bedrock\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.stdout.fnmatch_lines(["*REGION ap-southeast-2 https://bedrock-runtime.ap-southeast-2.amazonaws.com*"])
    assert not [c for c in CREDENTIALS if c in result.stdout.str()]


def test_a_model_target_generates_through_bedrock_with_a_model_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seal_aws(monkeypatch, tmp_path)
    generator = "eu.anthropic.claude-haiku-4-5-20251001-v1:0"

    def answer(request: dict[str, Any]) -> str:
        system, question = request["messages"][0]["content"], request["messages"][-1]["content"]
        return f"{system} Refund for {question}"

    cases = [{"id": f"q{i}", "question": f"order {i}?"} for i in range(3)]
    (pytester.path / "answers.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"task": "assertions", "input_path": "answers.jsonl", "generate": True,
             "target": {"model": "claude_haiku_4_5", "system_prompt": "Support:"},
             "assert": [{"type": "contains", "value": "Support: Refund for order"}]}
    (pytester.path / "answers.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    pytester.makeini(f"[pytest]\nevals_provider = bedrock\nevals_bedrock_models =\n    claude_haiku_4_5 = {generator}\n")
    with FakeBedrock(responder=answer, require_access_key=ACCESS_KEY, known_models=[generator]) as fake:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-aws-region", "eu-west-1",
                                               "--evals-base-url", fake.endpoint_url, "--evals-cache-dir", "cache",
                                               "--evals-json", "s.json")
        assert result.ret == 0, result.stdout.str()[-3000:]
        assert [e["model"] for e in fake.log()] == [generator] * 3
        assert fake.stats()["signed"] == 3
    summary = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))
    assert summary["llm"]["requests"] == 3 and summary["suites"][0]["cases"]["passed"] == 3


def test_a_metric_names_its_bedrock_judge_as_govuks_configs_do(pytester: pytest.Pytester, fake: FakeBedrock) -> None:
    nova_micro = "eu.amazon.nova-micro-v1:0"  # one of GOV.UK's judge models
    fake.configure(known_models=[nova_micro])
    write_rag_suite(pytester)
    suite = yaml.safe_load((pytester.path / "rag.eval.yaml").read_text(encoding="utf-8"))
    suite["metrics"] = [{"name": "relevance", "threshold": 0.5, "model": nova_micro, "temperature": 0.0}]
    (pytester.path / "rag.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-provider", "bedrock",
                                           "--evals-aws-region", "eu-west-1", "--evals-base-url", fake.endpoint_url,
                                           "--evals-json", "s.json")
    assert result.ret == 0, result.stdout.str()[-3000:]
    assert {e["model"] for e in fake.log()} == {nova_micro} and fake.stats()["answered"] == N_CASES
    mean = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["suites"][0]["metrics"]["relevance"]["mean"]
    assert mean["value"] == pytest.approx(EXPECTED_MEAN)
