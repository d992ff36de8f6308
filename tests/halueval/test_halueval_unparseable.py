"""Unparseable judge replies are visible and gate-able (issue 13), plain and under -n 2.

The judge answers "I cannot tell." to a known share of prompts (chosen by the prompt's
hash) and a plain "No" otherwise. The seed's rule still counts those replies as "No";
the suite reports how many there were, its ``unparseable_rate`` can be gated, and the
suite's warnings say what happened.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI, last_user_message

GARBAGE = "I cannot tell."


class Mumbler:
    def __init__(self) -> None:
        self.share = 0.3
        self.replies: list[str] = []

    def __call__(self, request: dict[str, Any]) -> str:
        h = hashlib.sha256(last_user_message(request).encode("utf-8")).digest()[0] / 256
        reply = GARBAGE if h < self.share else "No"
        self.replies.append(reply)
        return reply


@pytest.fixture(scope="module")
def mumbler() -> Iterator[tuple[FakeOpenAI, Mumbler]]:
    judge = Mumbler()
    with FakeOpenAI(responder=judge) as srv:
        yield srv, judge


SUITE = """\
task: halueval
data_dir: {data_dir}
sample: 30
seed: 2
thresholds:
  unparseable_rate: {{max: 0.05}}
"""


def run(pytester: pytest.Pytester, srv: FakeOpenAI, name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    # In process unless the run has xdist workers: a process start costs more than the run.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", srv.base_url,
        "--evals-cache-dir", str(pytester.path / f"cache-{name}"), "--evals-json", str(out), *args,
    )
    return result, json.loads(out.read_text(encoding="utf-8"))["suites"][0]


def test_unparseable_replies_are_counted_warned_and_gated_plain_and_xdist(
    pytester: pytest.Pytester, data_dir: Path, mumbler: tuple[FakeOpenAI, Mumbler]
) -> None:
    srv, judge = mumbler
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir))
    metrics = {}
    for name, extra in (("plain", ()), ("xdist", ("-n", "2"))):
        judge.share, judge.replies = 0.3, []
        result, suite = run(pytester, srv, name, *extra)
        bad = judge.replies.count(GARBAGE)
        assert len(judge.replies) == 30 and 0 < bad < 30
        assert suite["metrics"]["unparseable"]["value"] == bad
        assert suite["metrics"]["unparseable_rate"]["value"] == pytest.approx(bad / 30)
        # the seed's rule stays: an unparseable reply is a "No"
        assert suite["metrics"]["overall"]["yes_rate"]["value"] == 0.0
        assert suite["passed"] is False
        assert suite["gates"][0]["metric"] == "unparseable_rate" and not suite["gates"][0]["passed"]
        assert suite["tables"]["warnings"] == [
            f"{bad} of 30 judge replies ({bad / 30:.1%}) had no usable Yes/No, counted as \"No\" "
            "(the seed's rule, parse: first); gate it with `unparseable_rate: {max: 0.05}`"
        ]
        # the same note is the suite's warning: in the JSON and as a WARNING line
        assert suite["warnings"] == suite["tables"]["warnings"]
        result.stdout.fnmatch_lines([f"  unparseable  * {bad}", "*unparseable_rate *<= 0.05*FAIL*",
                                     f"  WARNING halueval: {bad} of 30 judge replies*"])
        assert result.ret == 1
        metrics[name] = suite["metrics"]
    assert metrics["plain"] == metrics["xdist"]


def test_clean_replies_pass_the_gate_without_a_warning(
    pytester: pytest.Pytester, data_dir: Path, mumbler: tuple[FakeOpenAI, Mumbler]
) -> None:
    srv, judge = mumbler
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir))
    judge.share, judge.replies = 0.0, []
    result, suite = run(pytester, srv, "clean", "-n", "2")
    assert suite["metrics"]["unparseable"]["value"] == 0
    assert suite["gates"][0]["passed"] and suite["tables"]["warnings"] == [] and suite["warnings"] == []
    result.stdout.fnmatch_lines(["*unparseable_rate *0.000*<= 0.05*pass*"])
