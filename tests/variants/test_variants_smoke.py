from __future__ import annotations

import pytest
from variant_helpers import THREE, endpoint, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI


def test_smoke(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.1}})
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-json", "s.json", "-v"))
    print(result.stdout.str())
    assert 0
