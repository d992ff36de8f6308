"""Shared by all of the project's tests: a hermetic environment for every test.

A developer's exported OPENAI_API_KEY or OPENAI_BASE_URL would otherwise switch every
suite from the embedded offline judge to the network, and caches would land in the
developer's ~/.cache. Subprocess pytest runs (pytester, xdist) inherit this environment.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

# pytester restores ``sys.modules`` after each in-process run. numpy refuses to be
# imported a second time in one process, and the metrics import it lazily inside an
# inner run, so import it here, before pytester takes its snapshot. The same holds for
# scipy.special (the intervals' quantiles and binomial CDF).
import numpy  # noqa: F401
import pytest
import scipy.special  # noqa: F401

#: Third-party plugins of the development environment that the runs the tests start have
#: no use for. Hypothesis' plugin imports all of Hypothesis in every run's terminal
#: summary and anyio's imports trio: together about 2.5 s of CPU in each inner pytest
#: process, and the suite starts a few hundred of them. Users' own installs are not
#: what these runs test; every pytest_evals behaviour is unaffected. DeepEval (the
#: 'deepeval' extra) brings three more: its own, which imports all of DeepEval (another
#: 2.6 s) and prints a line at every session's end, pytest-asyncio, which warns in every
#: run without its ini option, and pytest-repeat (tests/rag/test_deepeval_metrics.py runs
#: DeepEval's own plugin on purpose).
INNER_ADDOPTS = "-p no:hypothesispytest -p no:anyio -p no:deepeval -p no:asyncio -p no:repeat"

#: The files holding the suite's longest tests, longest first (measured with
#: ``--durations`` under ``-n 2`` on a loaded machine; the figure is the file's longest
#: test). The last files dealt are then short tests only, so the two workers finish
#: within seconds of each other (the directories that sort last, regression/, reports/
#: and variants/, held 11-14 s tests that were dealt among the final ones). xdist's load
#: scheduling hands the next test to whichever worker is free, so dealing the longest
#: ones first is what keeps one worker from running a two-minute test while the other
#: has long finished (before this list the 120-200 s HaluEval run on the real server was
#: dealt after every slow-marked test and the other multi-process files). A file's tests
#: stay together and in their order (module fixtures: the real-server restart test runs
#: last in its module).
LONGEST_FILES = (
    "local_models/test_local_judges.py",  # 70-110 s: 72 items judged by the real model
    "local_models/test_local_runs.py",  # 34 s real restart (20 s down), 17-24 s judged RAG
    "llm/test_outage.py",  # 42 s: the fake server's 40 s restart
    "harpia/test_harpia_run.py",  # 27 s, 12 s, 8 s
    "core/test_core_accounting.py",  # 23 s: a killed worker
    "llm/test_offline.py",  # 18-22 s: 342 texts embedded twice
    "harpia/test_model_loader.py",  # 21 s: two models loaded 20 times
    "local_models/test_llama_server.py",  # 12-21 s
    "harpia/test_harpia_rescore.py",  # 10-20 s
    "regression/test_baseline_checks.py",  # 24 tests of 2-14 s (xdist runs)
    "llm/test_bedrock_suite.py",  # 14 s
    "harpia/test_bertscore_no_fork.py",  # 14 s
    "llm/test_cache_data_only.py",  # 13 s and several of 6-7 s
    "variants/test_variants_matrix.py",  # 12.5 s and 11 s
    "halueval/test_halueval_xdist_io.py",  # 12 s and 9 s
    "variants/test_variants_pytest_html.py",  # 11.5 s
    "reports/test_report_files.py",  # 11.5 s
    "reports/test_report_hostile.py",  # 11 s and 7 s
    "harpia/test_harpia_bounded.py",  # 11 s
    "rag/test_offline.py",  # 11 s
    "redteam/test_viewer_browser.py",  # 11 s (its fixture)
    "assertions/test_assertions_suite.py",  # 9.5 s, 7.6 s, 6.6 s
    "harpia/test_harpia_suite.py",  # 9.6 s
    "rag/test_deepeval_metrics.py",  # 9.4 s, 8.5 s
    "local_models/test_endpoint_real.py",  # 3-5 s, after its server's start
    "redteam/test_example_suite.py",  # 8.7 s
)

#: Files whose tests start several pytest processes each (two xdist workers, the offline
#: embedder or BERTScore loaded again): measured the slowest, so they go next, with the
#: tests marked ``slow``.
SLOW_FILES = (
    "batch/test_halueval_batch.py",
    "batch/test_rag_batch.py",
    "batch/test_options_cli.py",
    "govuk/test_govuk_layout.py",
    "halueval/test_halueval_example_suite.py",
    "halueval/test_halueval_official.py",
    "hardening/test_secrets.py",
    "llm/test_secrets.py",
    "core/test_core_xdist.py",
    "core/test_core_run_memory.py",
)

_MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_ORGANIZATION")


@pytest.fixture(autouse=True)
def _hermetic_model_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in _MODEL_ENV:
        monkeypatch.delenv(name, raising=False)
    cache: Path = tmp_path_factory.mktemp("evals-cache")
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(cache))
    # The project's -n tests exercise the workers; tests/core/test_core_io_bound_run.py
    # checks the one-process default of endpoint-judged runs (controller/io_bound_run.py).
    monkeypatch.setenv("PYTEST_EVALS_XDIST_IO", "workers")
    # for the runs a test starts with subprocess (pytester drops it, see below)
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> Iterator[pytest.Pytester]:
    """pytest's own ``pytester``, whose inner runs skip the plugins of INNER_ADDOPTS.

    pytester deletes ``PYTEST_ADDOPTS`` when it starts; set it again for its runs, in
    process and in subprocesses (xdist workers inherit it), and undo that before
    pytester restores the environment.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
        yield pytester


def _slowness(item: pytest.Item) -> int:
    """The longest files in their listed order, then the slow tests, then the rest."""
    path = item.path.as_posix()
    for rank, name in enumerate(LONGEST_FILES):
        if path.endswith("tests/" + name):
            return rank
    if item.get_closest_marker("slow") is not None:
        return len(LONGEST_FILES)
    return len(LONGEST_FILES) + (1 if any(path.endswith("tests/" + name) for name in SLOW_FILES) else 2)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest tests first (a stable sort: a file's tests stay together, in their order)."""
    items.sort(key=_slowness)


def _compile_package() -> None:
    """Write the bytecode of pytest_evals' modules once, before any inner run starts.

    An editable install leaves the package uncompiled, and where bytecode is not written
    (``PYTHONDONTWRITEBYTECODE=1``, set on this project's CI machines) every pytest
    process the tests start (a few hundred, and their xdist workers) compiled each
    module it imports from source again: about 0.2-0.4 s of CPU each. Timestamped
    ``.pyc`` files are what a wheel install holds; a changed source is recompiled as
    usual, so nothing tested differs.
    """
    import compileall

    import pytest_evals

    # A read-only checkout writes nothing (compile_dir reports, never raises): the
    # runs compile as before.
    compileall.compile_dir(str(Path(pytest_evals.__file__).parent), quiet=2)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        _compile_package()
    # xdist deals a quarter of the collection to each worker at the start; with tests
    # this uneven, dealing one at a time is what keeps both workers busy to the end.
    if config.pluginmanager.hasplugin("xdist") and config.getoption("maxschedchunk") is None:
        config.option.maxschedchunk = 1
