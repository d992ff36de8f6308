"""attack2: verdicts and labels of variant runs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from variant_helpers import endpoint, responder, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=responder) as srv:
        yield srv


@pytest.mark.defect("A2-4 MEDIUM: a variant's cost is 0.0000 in the matrix and 0.0 in the JSON "
                    "when its price is unknown")
def test_variant_cost_of_unpriced_requests_is_not_zero(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """A2-4 (MEDIUM). ``--evals-model m-good,m-mid`` against an endpoint with no price for
    those models: the run's llm line says ``$0.0000 (+12 requests of unknown price)``, but
    the variant matrix prints ``cost USD 0.0000  0.0000`` and each variant's JSON
    ``usage.cost`` is ``0.0``, with nothing saying the price is unknown: read as free.
    Expected: unknown (None / "unknown") or a count of unpriced requests per variant."""
    write_suite(pytester.path, n=4, thresholds={"accuracy": {"min": 0.0}})
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-json", "s.json",
                                          "--evals-model", "m-good,m-mid"))
    out = result.stdout.str()
    assert "unknown price" in out  # the run knows the price is unknown
    usage = json.loads((pytester.path / "s.json").read_text())["suites"][0]["variants"]["variants"]["m-good"]["usage"]
    assert usage["requests"] == 4
    assert usage["cost"] != 0.0 or usage.get("unpriced_requests"), usage
    row = next(line for line in out.splitlines() if "cost USD" in line)
    assert "0.0000                0.0000" not in row, row


@pytest.mark.defect("A2-5 LOW: --lf on a variant suite deselects nothing and reruns every case")
def test_last_failed_selects_the_failed_pairs(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """A2-5 (LOW). docs/variants.md: "`-k c1`, `-x` and `--lf` keep the pairs together".
    On a suite without variants ``--lf`` reruns the 2 failed cases (PARTIAL); on a variant
    suite pytest says "run-last-failure: N known failures not in selected tests" and runs
    all cases of all variants again (cost, and the lastfailed ids never match). Expected:
    the failed cases' pairs run, the rest is deselected."""
    write_suite(pytester.path, n=10, variants=[{"name": "good", "model": "m-good"},
                                               {"name": "mid", "model": "m-mid"}],
                thresholds={"accuracy": {"min": 0.0}})
    first = pytester.runpytest(*endpoint(server, pytester.path))
    first.assert_outcomes(passed=10, failed=10)
    again = pytester.runpytest(*endpoint(server, pytester.path, "--lf", "--evals-allow-partial"))
    assert "not in selected tests" not in again.stdout.str()
    assert again.parseoutcomes().get("deselected", 0) > 0


@pytest.mark.defect("A2-6 LOW: the unknown-price note names the default model, not the variants' models")
def test_price_note_names_the_models_that_were_asked(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    """A2-6 (LOW). Variants ``model: m-good`` / ``model: m-mid`` in the suite, no
    ``--evals-model``, local endpoint listing no model: every request named m-good or
    m-mid, yet the run's line says ``+N requests of unknown price: gpt-4o-mini is served
    by a local endpoint``, a model no request asked for."""
    write_suite(pytester.path, n=3, variants=[{"name": "good", "model": "m-good"},
                                              {"name": "mid", "model": "m-mid"}],
                thresholds={"accuracy": {"min": 0.0}})
    result = pytester.runpytest(*endpoint(server, pytester.path))
    line = next(x for x in result.stdout.str().splitlines() if "unknown price" in x)
    assert "gpt-4o-mini" not in line, line
