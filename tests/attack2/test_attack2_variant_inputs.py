"""attack2: a variant that changes what a case is must not be paired with the others."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from variant_helpers import endpoint, responder

from pytest_evals.testing.fake_openai import FakeOpenAI

HALUEVAL = Path("/work/shared/data/halueval")


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=responder) as srv:
        yield srv


@pytest.mark.skipif(not HALUEVAL.is_dir(), reason="the HaluEval files are not here")
@pytest.mark.defect("A2-7 MEDIUM: a HaluEval variant with set: {seed: N} judges other answers "
                    "(other expected labels) yet is paired case by case with the reference")
def test_a_variant_that_changes_the_shown_answer_is_not_paired(pytester: pytest.Pytester,
                                                                server: FakeOpenAI) -> None:
    """A2-7 (MEDIUM). docs/variants.md: "Cases whose input fingerprints differ between two
    variants (a variant changed what a case is) are left out of the paired tests", and a
    variant may not set the fields that say which cases a suite has. HaluEval's ``seed``
    also picks, per item, whether the right or the hallucinated answer is shown (so the
    expected Yes/No). A variant ``set: {seed: 1}`` keeps the item ids (the case list is
    read once) but judges the other answer on many items: qa-3475[a] shows the right
    answer (expected "no"), qa-3475[b] the hallucinated one (expected "yes"). The
    fingerprint hashes only the raw record, so both carry the same fingerprint and the
    McNemar test / no_worse_than gate pair all 8 items ("8 paired"). Expected: items whose
    shown answer differs are left out of the pairs (or ``seed`` is refused in ``set``)."""
    suite = {
        "task": "halueval", "data_dir": str(HALUEVAL), "sample": 8, "tasks": ["qa", "general"],
        "variants": [{"name": "a", "model": "m-good"},
                     {"name": "b", "model": "m-good", "set": {"seed": 1}}],
        "thresholds": {"overall": {"accuracy": {"min": 0.0}}},
    }
    (pytester.path / "h.eval.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-json", "s.json"))
    assert "suite-error" not in result.stdout.str(), "seed in a variant's set was refused (fine: defect fixed)"
    s = json.loads((pytester.path / "s.json").read_text())["suites"][0]
    by_id = {c["case_id"]: c for c in s["case_results"]}
    differing = [cid[:-3] for cid in by_id if cid.endswith("[a]")
                 and by_id[cid]["data"]["shown"] != by_id[cid[:-3] + "[b]"]["data"]["shown"]]
    assert differing, "the seed did not change any shown answer: the reproducer needs another sample"
    comparison = next(c for c in s["variants"]["comparisons"] if c["metric"] == "overall.accuracy")
    paired = comparison.get("paired", comparison.get("n"))
    assert paired is not None, comparison
    assert paired <= 8 - len(differing), (
        f"{len(differing)} items judged different answers ({differing}) yet {paired} pairs were compared")
