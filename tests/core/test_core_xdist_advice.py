"""Under ``-n``, a run whose cases waited on the model endpoint says that such suites
gain nothing from xdist workers (bench/bench_llm.py measures it; docs/scale.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from core_helpers import jb, jb_suite

from pytest_evals.testing.fake_openai import FakeOpenAI

ADVICE = "ran cases that waited on the model endpoint"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder="yes") as srv:
        yield srv


def _suite(pytester: pytest.Pytester) -> None:
    rows = [jb(i % 2 == 0, None, case_id=f"q{i}", question=f"question {i}") for i in range(6)]
    jb_suite(
        pytester.path,
        "judged",
        rows,
        generate=True,
        target={"model": "judge", "input_field": "question"},
    )


def _run(pytester: pytest.Pytester, server: FakeOpenAI, cache: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "judged.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-cache-dir", str(pytester.path / cache), "--evals-concurrency", "4", *extra,
    )


def test_core_xdist_advice_for_cases_that_waited_on_the_endpoint(
    pytester: pytest.Pytester, server: FakeOpenAI
) -> None:
    _suite(pytester)
    cold = _run(pytester, server, "cache-x", "-n", "2")
    cold.assert_outcomes(passed=3, failed=3)
    text = cold.stdout.str()
    assert f"evals: -n 2 {ADVICE} (6 requests)" in text
    assert "own window of 4 requests in flight" in text
    # Everything answered from the cache: nothing waited, nothing to advise.
    cached = _run(pytester, server, "cache-x", "-n", "2")
    cached.assert_outcomes(passed=3, failed=3)
    assert ADVICE not in cached.stdout.str()


def test_core_no_xdist_advice_without_xdist(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    _suite(pytester)
    plain = _run(pytester, server, "cache-plain")
    plain.assert_outcomes(passed=3, failed=3)
    assert ADVICE not in plain.stdout.str()
