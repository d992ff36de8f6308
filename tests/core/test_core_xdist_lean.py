"""``-n 2`` partitions suite cases however xdist was loaded: by its entry point, or by
``-p xdist.plugin`` in a run with plugin autoloading off (workers prefetch only their
own block; without the partition every case waited for its model calls one by one)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("-p", "xdist.plugin", "-p", "pytest_evals.plugin"), id="autoload-off"),
        pytest.param((), id="entry-points"),
    ],
)
def test_core_xdist_blocks_registered_however_xdist_is_loaded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    if args:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    config = pytester.parseconfigure(*args)
    assert config.pluginmanager.has_plugin("pytest_evals_runner")
    assert config.pluginmanager.has_plugin("pytest_evals_partition")


def test_core_xdist_blocks_off_by_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nevals_partition = false\n")
    config = pytester.parseconfigure()
    assert not config.pluginmanager.has_plugin("pytest_evals_partition")
