"""Under ``-n``, a run of only endpoint-judged suites runs in one process and says so.

Its cases wait on the model, so workers would only add their own start-up, collection
and report traffic (bench/bench_llm.py --pytest-only; docs/scale.md). The verdicts and
the JSON summary are those of the plain run; anything scored on this machine, or a
command line naming more than suites, keeps its workers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

SUITE = """\
task: halueval
data_dir: {data_dir}
tasks: [qa]
sample: 12
seed: 5
"""

NOTE = "evals: -n 2 not used: every suite of this run waits on the model endpoint"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder="yes") as srv:
        yield srv


@pytest.fixture(autouse=True)
def _auto_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py makes the other tests' -n runs start their workers.
    monkeypatch.delenv("PYTEST_EVALS_XDIST_IO", raising=False)


def _run(
    pytester: pytest.Pytester, server: FakeOpenAI, name: str, *extra: str, args: tuple[str, ...] = ("halueval.eval.yaml",)
) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    result = pytester.runpytest_subprocess(
        *args, "-p", "no:cacheprovider", "--evals-base-url", server.base_url, "--evals-model", "judge",
        "--evals-cache-dir", str(pytester.path / f"cache-{name}"), "--evals-concurrency", "5",
        "--evals-json", str(out), *extra,
    )
    return result, json.loads(out.read_text(encoding="utf-8"))


def _outcomes(summary: dict[str, Any]) -> Any:
    suite = summary["suites"][0]
    return suite["metrics"], suite["cases"], summary["llm"]["requests"]


def test_endpoint_judged_run_under_n_runs_in_one_process(
    pytester: pytest.Pytester, server: FakeOpenAI, data_dir: Path
) -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir))
    plain, plain_summary = _run(pytester, server, "plain")
    one, one_summary = _run(pytester, server, "one", "-n", "2")
    counts = plain.parseoutcomes()
    assert counts["passed"] + counts.get("failed", 0) == 12
    one.assert_outcomes(passed=counts["passed"], failed=counts.get("failed", 0))
    text = one.stdout.str()
    assert f"{NOTE}, so this one process ran them with 5 requests in flight" in text
    # No worker started: xdist's own lines and the -n advice are absent.
    assert "created: 2/2 workers" not in text and "[gw" not in text
    assert "ran cases that waited on the model endpoint" not in text
    assert _outcomes(one_summary) == _outcomes(plain_summary)
    assert NOTE not in plain.stdout.str()

    # Asked for: the workers start, with the same verdicts and the usual advice.
    workers, workers_summary = _run(pytester, server, "workers", "-n", "2", "--evals-xdist-io", "workers")
    workers.assert_outcomes(passed=counts["passed"], failed=counts.get("failed", 0))
    assert "created: 2/2 workers" in workers.stdout.str()
    assert NOTE not in workers.stdout.str()
    assert "ran cases that waited on the model endpoint" in workers.stdout.str()
    assert _outcomes(workers_summary) == _outcomes(plain_summary)


def test_workers_kept_when_not_every_path_is_an_endpoint_judged_suite(
    pytester: pytest.Pytester, server: FakeOpenAI, data_dir: Path
) -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir))
    pytester.makepyfile(test_plain="def test_one():\n    assert True\n")
    mixed, _ = _run(pytester, server, "mixed", "-n", "2", args=("halueval.eval.yaml", "test_plain.py"))
    assert "created: 2/2 workers" in mixed.stdout.str()
    assert NOTE not in mixed.stdout.str()
    # Offline, the embedded judge scores on this machine's cores: workers spread it.
    out = pytester.path / "offline.json"
    offline = pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-offline", "-n", "2", "--evals-json", str(out)
    )
    assert "created: 2/2 workers" in offline.stdout.str()
    assert NOTE not in offline.stdout.str()


def test_bad_mode_is_a_usage_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir))
    monkeypatch.setenv("PYTEST_EVALS_XDIST_IO", "sometimes")
    result = pytester.runpytest_subprocess("halueval.eval.yaml", "-p", "no:cacheprovider", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "PYTEST_EVALS_XDIST_IO: expected one of auto, workers, got 'sometimes'" in result.stderr.str()
