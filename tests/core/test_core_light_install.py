"""The default install's path stays light: a classification suite run imports neither
torch, matplotlib nor lxml (those belong to the offline judge, reports and rag extras)."""

from __future__ import annotations

import json

import pytest
from core_helpers import jb_counts, jb_suite

#: Written at the very end of the run, after every hook had its chance to import: the
#: controller at unconfigure; a worker at its last session-finish hook, because xdist
#: ends a worker's process once it reports "finished", before or during its unconfigure.
CONFTEST = """
import json, sys
from pathlib import Path

import pytest

HEAVY = ("torch", "matplotlib", "lxml", "inscriptis", "sentence_transformers", "transformers", "tokenizers",
         "safetensors")

def _record(config, worker):
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)
    Path(str(config.rootpath), f"heavy-{worker}.json").write_text(json.dumps(loaded))

@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    worker = getattr(session.config, "workerinput", {}).get("workerid")
    if worker is not None:
        _record(session.config, worker)

def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        _record(config, "controller")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_classification_run_imports_nothing_heavy(pytester: pytest.Pytester, workers: list[str]) -> None:
    pytester.makeconftest(CONFTEST)
    jb_suite(pytester.path, "jb", jb_counts(3, 3, 1, 1))
    # pytest-html is an extra (reports): without it installed, its plugin is not loaded.
    result = pytester.runpytest_subprocess(*workers, "-p", "no:html", "-p", "no:cacheprovider", "--evals-json", "s.json")
    assert result.ret in (0, 1)
    assert (pytester.path / "s.json").exists()
    files = sorted(pytester.path.glob("heavy-*.json"))
    assert len(files) == 1 + (2 if workers else 0)
    for path in files:  # the controller and every worker
        assert json.loads(path.read_text()) == [], path.name
