"""Variant runs under hostile inputs: a variant changing what a case is, requests of
unknown price, and ``--lf`` on a variant suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from variant_helpers import endpoint, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI

HALUEVAL = Path("/work/shared/data/halueval")


@pytest.mark.skipif(not HALUEVAL.is_dir(), reason="the HaluEval files are not here")
def test_a_variant_that_changes_the_shown_answer_is_not_paired(pytester: pytest.Pytester,
                                                                server: FakeOpenAI) -> None:
    """docs/variants.md: "Cases whose input fingerprints differ between two variants (a
    variant changed what a case is) are left out of the paired tests". HaluEval's
    ``seed`` also picks, per item, whether the right or the hallucinated answer is shown
    (so the expected Yes/No): a variant ``set: {seed: 1}`` keeps the item ids but judges
    the other answer on some items, and those items must not be paired."""
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
    assert differing, "the seed did not change any shown answer: the test needs another sample"
    comparison = next(c for c in s["variants"]["comparisons"] if c["metric"] == "overall.accuracy")
    paired = comparison.get("paired", comparison.get("n"))
    assert paired is not None, comparison
    assert paired <= 8 - len(differing), (
        f"{len(differing)} items judged different answers ({differing}) yet {paired} pairs were compared")


def test_variant_cost_of_unpriced_requests_is_not_zero(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """``--evals-model m-good,m-mid`` against an endpoint with no price for those models:
    each variant's cost is unknown (not 0.0, as if free) and its unpriced requests are
    counted, in the JSON and in the terminal matrix."""
    write_suite(pytester.path, n=4, thresholds={"accuracy": {"min": 0.0}})
    # In a subprocess: after an earlier in-process run in this process, per-case usage
    # reads 0 (pytester restores sys.modules between runs; a real run is one session).
    result = pytester.runpytest_subprocess(*endpoint(server, pytester.path, "--evals-json", "s.json",
                                                     "--evals-model", "m-good,m-mid"))
    out = result.stdout.str()
    assert "unknown price" in out  # the run knows the price is unknown
    usage = json.loads((pytester.path / "s.json").read_text())["suites"][0]["variants"]["variants"]["m-good"]["usage"]
    assert usage["requests"] == 4
    assert usage["cost"] != 0.0 or usage.get("unpriced_requests"), usage
    assert usage["cost"] is None and usage["unpriced_requests"] == 4, usage
    row = next(line for line in out.splitlines() if "cost USD" in line)
    assert "0.0000                0.0000" not in row, row
    assert row.count("n/a (4 unpriced requests)") == 2, row


def test_variant_cost_of_priced_requests(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """With a price given, the cost is a number and no request is unpriced."""
    write_suite(pytester.path, n=4, thresholds={"accuracy": {"min": 0.0}})
    pytester.runpytest_subprocess(*endpoint(server, pytester.path, "--evals-json", "s.json",
                                            "--evals-model", "m-good,m-mid",
                                            "--evals-price", "m-good=1000,1000", "--evals-price", "m-mid=1000,1000"))
    variants = json.loads((pytester.path / "s.json").read_text())["suites"][0]["variants"]["variants"]
    for name in ("m-good", "m-mid"):
        usage = variants[name]["usage"]
        assert usage["unpriced_requests"] == 0 and usage["cost"] > 0, usage


def _last_failed(root: Path) -> set[str]:
    return set(json.loads((root / ".pytest_cache" / "v" / "cache" / "lastfailed").read_text()))


def test_last_failed_selects_the_failed_pairs(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """docs/variants.md: "`-k c1`, `-x` and `--lf` keep the pairs together": ``--lf``
    reruns every variant of each case with a failure, the rest is deselected."""
    write_suite(pytester.path, n=10, variants=[{"name": "good", "model": "m-good"},
                                               {"name": "mid", "model": "m-mid"}],
                thresholds={"accuracy": {"min": 0.0}})
    first = pytester.runpytest(*endpoint(server, pytester.path))
    first.assert_outcomes(passed=10, failed=10)
    failed = _last_failed(pytester.path)
    again = pytester.runpytest(*endpoint(server, pytester.path, "--lf", "--evals-allow-partial"))
    assert "not in selected tests" not in again.stdout.str()
    assert again.parseoutcomes().get("deselected", 0) > 0
    # c00..c08 each failed under one variant at least: both variants of each rerun
    again.assert_outcomes(failed=10, passed=8, deselected=2)
    assert _last_failed(pytester.path) == failed


def test_last_failed_with_k_records_no_pass_as_failure(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """A variant added to the rerun for its pair but deselected by ``-k`` did not run:
    its earlier pass stays a pass in pytest's cache."""
    write_suite(pytester.path, n=4, variants=[{"name": "good", "model": "m-good"},
                                              {"name": "mid", "model": "m-mid"}],
                thresholds={"accuracy": {"min": 0.0}})
    pytester.runpytest(*endpoint(server, pytester.path))
    failed = _last_failed(pytester.path)
    pytester.runpytest(*endpoint(server, pytester.path, "--lf", "--evals-allow-partial", "-k", "good"))
    assert _last_failed(pytester.path) == failed


def test_price_note_names_no_model_nobody_asked_for(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """Variants ``model: m-good`` / ``model: m-mid``, no ``--evals-model``, a local endpoint
    listing no model: the unknown-price note must not name the session default, which no
    request asked for."""
    write_suite(pytester.path, n=3, variants=[{"name": "good", "model": "m-good"},
                                              {"name": "mid", "model": "m-mid"}],
                thresholds={"accuracy": {"min": 0.0}})
    result = pytester.runpytest(*endpoint(server, pytester.path))
    line = next(x for x in result.stdout.str().splitlines() if "unknown price" in x)
    assert "gpt-4o-mini" not in line and "the models are served by a local endpoint" in line, line
