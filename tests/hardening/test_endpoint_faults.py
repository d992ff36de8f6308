"""An endless response body is cut at the cap in both transports; the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.llm.helpers import probe_suite

from .hostile import HostileServer


@pytest.mark.parametrize("transport", ["process", "aiohttp", "lean", "openai"])
def test_an_endless_body_is_one_error_and_the_rest_runs(
    pytester: pytest.Pytester, hostile: HostileServer, tmp_path: Path, transport: str
) -> None:
    probe_suite(pytester, ["ENDLESS please", "a plain question", "another one"])
    pytester.makeini("[pytest]\nevals_max_response_bytes = 1048576\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider",
        "--evals-base-url", hostile.base_url,
        "--evals-transport", transport,
        "--evals-cache-dir", str(tmp_path / "cache"),
        "--evals-timeout", "30",
        timeout=90,
    )
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*response body larger than 1048576 bytes (evals_max_response_bytes)*"])
    # Not retried: the same server would send the same endless body again.
    assert hostile.seen["ENDLESS"] == 1
