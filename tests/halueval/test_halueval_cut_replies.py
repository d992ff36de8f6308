"""A judge reply cut at max_tokens: a verdict word at the very cut is not a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.halueval.parsing import first_word_at_cut
from pytest_evals.testing.fake_openai import FakeOpenAI

HALUEVAL = Path("/work/shared/data/halueval")


def cut_after_verdict_prefix(request: dict[str, Any]) -> dict[str, Any]:
    # the model was writing "... the answer is Nonetheless ..." (or "Not", "None",
    # "Nothing") when max_tokens cut it: the text ends in the two letters "No"
    return {"content": "Based on the knowledge given, the answer is No", "finish_reason": "length"}


def cut_after_whole_verdict(request: dict[str, Any]) -> dict[str, Any]:
    return {"content": "No, the answer is supported by the knowl", "finish_reason": "length"}


def _run(pytester: pytest.Pytester, tmp_path: Path, responder: Any) -> dict[str, Any]:
    suite = {"task": "halueval", "data_dir": str(HALUEVAL), "sample": 4, "tasks": ["qa"],
             "thresholds": {"overall": {"accuracy": {"min": 0.0}}}}
    (pytester.path / "h.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    with FakeOpenAI(responder=responder) as server:
        pytester.runpytest("--evals-base-url", server.base_url, "--evals-cache-dir", str(tmp_path / "c"),
                           "--evals-json", "s.json", "-p", "no:randomly")
    suite_json: dict[str, Any] = json.loads((pytester.path / "s.json").read_text())["suites"][0]
    return suite_json


@pytest.mark.skipif(not HALUEVAL.is_dir(), reason="the HaluEval files are not here")
def test_a_verdict_word_at_the_cut_is_not_a_verdict(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """docs/local-models.md: HaluEval reads a cut reply only where the cut cannot change
    the verdict. A reply with ``finish_reason: length`` whose text *ends* in ``No`` (the
    cut may have fallen inside ``Nothing``/``None``/``Not``) is a ``judge_truncated``
    ERROR, not a "No"."""
    s = _run(pytester, tmp_path, cut_after_verdict_prefix)
    read_as_no = [c["case_id"] for c in s["case_results"] if (c.get("data") or {}).get("predicted") == "no"]
    assert read_as_no == [], f"cut replies read as a 'No' verdict: {read_as_no}"
    assert s["cases"]["errors_by_kind"] == {"judge_truncated": 4}, s["cases"]
    assert all("may be the start of a longer word" in str(c.get("message")) for c in s["case_results"]), \
        [c.get("message") for c in s["case_results"]]


@pytest.mark.skipif(not HALUEVAL.is_dir(), reason="the HaluEval files are not here")
def test_a_whole_verdict_word_before_the_cut_is_read(pytester: pytest.Pytester, tmp_path: Path) -> None:
    s = _run(pytester, tmp_path, cut_after_whole_verdict)
    assert [c["data"]["predicted"] for c in s["case_results"]] == ["no"] * 4


@pytest.mark.parametrize(("reply", "at_cut"), [
    ("the answer is No", True), ("Yes", True), ("the answer is yes", True),
    ("the answer is No.", False), ("No ", False), ("Yes, because", False),
    ("Nothing to say", False), ("Not", False), ("", False), ("No, and then Yes", False),
])
def test_first_word_at_cut(reply: str, at_cut: bool) -> None:
    assert first_word_at_cut(reply) is at_cut
