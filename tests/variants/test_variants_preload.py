"""A run with variants imports the paired verdicts' statistics library in the background
once its first cases are done, so the end of the run does not wait for the import."""

from __future__ import annotations

import pytest
from variant_helpers import THREE, endpoint, write_suite

from pytest_evals.regression.variant_plugin import PRELOAD_AFTER_ITEMS
from pytest_evals.testing.fake_openai import FakeOpenAI


def _preload(pytester: pytest.Pytester, server: FakeOpenAI, *extra: str) -> object:
    reprec = pytester.inline_run(*endpoint(server, pytester.path, *extra))
    config = reprec.getcalls("pytest_collection_finish")[0].session.config
    return config.pluginmanager.get_plugin("pytest_evals_statistics_preload")


@pytest.mark.parametrize(("cases", "started"), [(PRELOAD_AFTER_ITEMS // 3 + 1, True), (PRELOAD_AFTER_ITEMS // 3 - 1, False)])
def test_a_variant_run_starts_the_import_after_its_first_items(
    pytester: pytest.Pytester, server: FakeOpenAI, cases: int, started: bool
) -> None:
    write_suite(pytester.path, n=cases, variants=THREE)
    preload = _preload(pytester, server)
    assert preload is not None
    thread = preload.thread  # type: ignore[attr-defined]
    assert (thread is not None) is started
    if thread is not None:
        thread.join(30)
        assert thread.name == "pytest-evals-preload" and not thread.is_alive()
        import sys

        assert "scipy.special" in sys.modules


def test_a_run_without_variants_or_only_collecting_does_not(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=PRELOAD_AFTER_ITEMS + 5)
    assert _preload(pytester, server) is None
    write_suite(pytester.path, n=PRELOAD_AFTER_ITEMS, variants=THREE)
    assert _preload(pytester, server, "--collect-only") is None
