"""Fitting a judge prompt into the model's context: none / longest / skip, recorded per
case; an overflow that reaches the server is a context_length error with its counts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.llm.tokens import estimate_prompt_tokens
from pytest_evals.llm.truncation import CUT_MARKER, fit, requested_tokens
from pytest_evals.testing.fake_openai import FakeOpenAI

DATA_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "halueval"


def render(values: dict[str, str]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Judge."}, {"role": "user", "content": f"{values['doc']}\n{values['q']}"}]


def test_fields_that_fit_are_left_alone() -> None:
    fields = {"doc": "short document", "q": "question?"}
    assert fit(fields, render, policy="longest", limit=1000, max_tokens=16) == (fields, None)


def test_longest_cuts_the_longest_field_until_the_estimate_fits() -> None:
    fields = {"doc": "word " * 2000, "q": "Is the summary right?"}
    values, record = fit(fields, render, policy="longest", limit=512, max_tokens=16)
    assert record is not None and record.field == "doc" and not record.skipped
    assert values["q"] == fields["q"]  # only the longest field is cut
    assert values["doc"].endswith(CUT_MARKER.format(cut=record.original_chars - record.kept_chars))
    assert estimate_prompt_tokens(render(values)) + 16 <= 512
    assert record.prompt_tokens > 512 and record.fitted_tokens == estimate_prompt_tokens(render(values))
    data = record.to_json()
    assert data["policy"] == "longest" and data["context_limit"] == 512 and data["field"] == "doc"


def test_a_server_that_counts_more_tokens_gets_a_shorter_prompt() -> None:
    fields = {"doc": "word " * 2000, "q": "?"}
    plain, _ = fit(fields, render, policy="longest", limit=512, max_tokens=16)
    dense, _ = fit(fields, render, policy="longest", limit=512, max_tokens=16, ratio=1.5)
    assert len(dense["doc"]) < len(plain["doc"])


def test_skip_and_an_unfittable_prompt_are_skipped() -> None:
    fields = {"doc": "word " * 2000, "q": "?"}
    _, record = fit(fields, render, policy="skip", limit=512, max_tokens=16)
    assert record is not None and record.skipped and "not sent (truncate: skip)" in record.describe()
    # The rest of the prompt alone is over the limit: no cut of one field can help.
    _, record = fit({"doc": "a " * 3000, "q": "b " * 2500}, render, policy="longest", limit=512, max_tokens=16)
    assert record is not None and record.skipped


def test_none_never_changes_anything() -> None:
    fields = {"doc": "word " * 2000, "q": "?"}
    assert fit(fields, render, policy="none", limit=512, max_tokens=16) == (fields, None)


@pytest.mark.parametrize(("cause", "n"), [
    ("HTTP 400: Requested tokens (2300) exceed context window of 2048", 2300),
    ("HTTP 400: This model's maximum context length is 8192 tokens. However, you requested 9000 tokens", 9000),
    ("HTTP 400: the request exceeds the available context size", None),
])
def test_the_servers_count_of_the_request(cause: str, n: int | None) -> None:
    assert requested_tokens(cause) == n


# -- through a HaluEval suite ------------------------------------------------------------

SUITE = """\
task: halueval
data_dir: {data_dir}
tasks: [summarization]
sample: 8
seed: 1
{extra}
"""
#: The fake model's context in (fake) tokens: most summarization documents are longer.
CONTEXT = 500


@pytest.fixture(scope="module")
def small_model() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder="yes", max_context=CONTEXT) as srv:
        yield srv


def run_suite(pytester: pytest.Pytester, srv: FakeOpenAI, extra: str, name: str, *args: str) -> dict[str, Any]:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=DATA_DIR, extra=extra))
    out = pytester.path / f"{name}.json"
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    runner(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", srv.base_url,
        "--evals-cache-dir", str(pytester.path / f"cache-{name}"), "--evals-json", str(out), *args,
    )
    return json.loads(out.read_text(encoding="utf-8"))


def cases(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for s in report["suites"] for c in s["case_results"]]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_none_counts_every_overflow_as_context_length_with_its_counts(
    pytester: pytest.Pytester, small_model: FakeOpenAI
) -> None:
    report = run_suite(pytester, small_model, "truncate: none", "none")
    suite = report["suites"][0]
    overflowed = suite["cases"]["errors_by_kind"].get("context_length", 0)
    assert overflowed >= 4 and suite["cases"]["errors"] == overflowed
    errored = [c for c in cases(report) if c["status"] == "error"]
    for case in errored:
        counts = case["data"]["context_length"]
        assert counts["limit"] == CONTEXT and counts["prompt_tokens"] > CONTEXT
        assert f"limit {CONTEXT} tokens" in case["message"]


@pytest.mark.parametrize("args", [(), ("-n", "2")])
def test_longest_learns_the_limit_and_fits_every_case(
    pytester: pytest.Pytester, small_model: FakeOpenAI, args: tuple[str, ...]
) -> None:
    report = run_suite(pytester, small_model, "truncate: longest", "longest", *args)
    suite = report["suites"][0]
    assert suite["cases"]["errors"] == 0 and suite["cases"]["total"] == 8
    cut = [c for c in cases(report) if "truncation" in c["data"]]
    assert len(cut) >= 4
    for case in cut:
        record = case["data"]["truncation"]
        assert record["field"] == "context" and record["kept_chars"] < record["original_chars"]
        assert record["context_limit"] == CONTEXT and record["prompt_tokens"] > CONTEXT


def test_skip_with_a_known_limit_sends_nothing_too_long(
    pytester: pytest.Pytester, small_model: FakeOpenAI
) -> None:
    before = small_model.stats()["outcomes"].get("context_length", 0)
    report = run_suite(pytester, small_model, f"truncate: skip\ncontext_tokens: {CONTEXT}", "skip")
    skipped = [c for c in cases(report) if c["status"] == "skipped"]
    assert len(skipped) >= 4
    assert all("not sent (truncate: skip)" in c["message"] and f"context limit {CONTEXT}" in c["message"] for c in skipped)
    assert small_model.stats()["outcomes"].get("context_length", 0) == before  # none reached the server
