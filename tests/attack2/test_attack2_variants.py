"""attack2: verdicts and labels of variant runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from variant_helpers import endpoint, responder, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=responder) as srv:
        yield srv


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
