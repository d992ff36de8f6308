"""The run settings name the mapping a GOV.UK-shaped suite's metric names are scored by
(their DeepEval classes with DeepEval installed, ours without; issue 28)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from pytest_evals.families.rag.task import RagAnswers

METRICS = [{"name": "faithfulness", "threshold": 1.0}, {"name": "bias", "threshold": 0.0},
           {"name": "coherence", "threshold": 0.8}]


def test_the_mapping_follows_what_is_installed(make_task: Callable[..., RagAnswers]) -> None:
    settings = make_task(metrics=METRICS, govuk=True).run_settings()["deepeval_metrics"]
    if importlib.util.find_spec("deepeval") is None:
        assert settings == {"mode": "auto", "mapping": "ours", "deepeval": None, "classes": {}}
    else:
        from importlib.metadata import version

        # their own coherence class comes with their package, which is not installed here
        assert importlib.util.find_spec("govuk_chat_evaluation") is None
        assert settings == {"mode": "auto", "mapping": "govuk", "deepeval": version("deepeval"),
                            "classes": {"faithfulness": "deepeval.metrics:FaithfulnessMetric",
                                        "bias": "deepeval.metrics:BiasMetric"}}


def test_never_and_other_suites(make_task: Callable[..., RagAnswers]) -> None:
    never = make_task(metrics=METRICS, govuk=True, deepeval_metrics="never").run_settings()
    assert never["deepeval_metrics"]["mapping"] == "ours" and never["deepeval_metrics"]["classes"] == {}
    assert "judges" not in never
    # a suite of our own shape records nothing new: its baselines stay comparable
    assert "deepeval_metrics" not in make_task(metrics=METRICS).run_settings()
