"""attack2: a judge reply cut at max_tokens read as a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.testing.fake_openai import FakeOpenAI

HALUEVAL = Path("/work/shared/data/halueval")


def cut_after_verdict_prefix(request: dict[str, Any]) -> dict[str, Any]:
    # the model was writing "... the answer is Nonetheless ..." (or "Not", "None",
    # "Nothing") when max_tokens cut it: the text ends in the two letters "No"
    return {"content": "Based on the knowledge given, the answer is No", "finish_reason": "length"}


@pytest.mark.skipif(not HALUEVAL.is_dir(), reason="the HaluEval files are not here")
@pytest.mark.defect("A2-9 LOW-MEDIUM: a HaluEval judge reply cut at max_tokens right after 'No'/'Yes' "
                    "is read as that verdict, though the cut word may be 'Nothing', 'Yesterday'...")
def test_a_verdict_word_at_the_cut_is_not_a_verdict(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A2-9 (LOW-MEDIUM). docs/local-models.md: "HaluEval reads a cut reply only where the
    cut cannot change the verdict: under parse: first when its first Yes/No word is
    already there". A reply with ``finish_reason: length`` whose text *ends* in ``No``
    (the cut fell inside ``Nothing``/``None``/``Not``...) is read as "No": 0 errors,
    0 unparseable, no ``judge_truncated``. The word at the cut is not known to be whole, so
    this is exactly the case where the cut can change the verdict. Expected: a Yes/No
    word that ends the cut text does not count (``judge_truncated`` ERROR)."""
    suite = {"task": "halueval", "data_dir": str(HALUEVAL), "sample": 4, "tasks": ["qa"],
             "thresholds": {"overall": {"accuracy": {"min": 0.0}}}}
    (pytester.path / "h.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    with FakeOpenAI(responder=cut_after_verdict_prefix) as server:
        pytester.runpytest("--evals-base-url", server.base_url, "--evals-cache-dir", str(tmp_path / "c"),
                           "--evals-json", "s.json", "-p", "no:randomly")
    s = json.loads((pytester.path / "s.json").read_text())["suites"][0]
    read_as_no = [c["case_id"] for c in s["case_results"] if (c.get("data") or {}).get("predicted") == "no"]
    assert read_as_no == [], f"cut replies read as a 'No' verdict: {read_as_no}"
