"""Metric ids and parameters: what is accepted, and clear errors for the rest."""

from __future__ import annotations

import pytest

from pytest_evals.metrics.reference import (
    METRICS,
    BadParameters,
    UnknownMetric,
    accepted_parameters,
    build_metric,
)


def test_unknown_metric_lists_the_accepted_ids() -> None:
    with pytest.raises(UnknownMetric) as info:
        build_metric("blue")
    message = info.value.args[0]
    assert "'blue'" in message
    for metric_id in METRICS:
        assert metric_id in message


def test_unknown_parameter_lists_the_accepted_parameters() -> None:
    with pytest.raises(BadParameters) as info:
        build_metric("bleu", {"weight": [1.0], "smooth": "method1"})
    message = str(info.value)
    assert "'weight'" in message and "'smooth'" in message
    for name in ("weights", "smoothing", "auto_reweigh", "tokenizer", "threshold"):
        assert name in message


@pytest.mark.parametrize(
    ("metric_id", "params", "fragment"),
    [
        ("bleu", {"smoothing": "method9"}, "method0, method1"),
        ("bleu", {"weights": []}, "weights"),
        ("bleu", {"tokenizer": "punkt"}, "tokenizer"),
        ("rouge", {"rouge_types": ["rouge0"]}, "rouge1..rouge9"),
        ("rouge", {"use_stemmer": True, "tokenizer": "regex"}, "use_stemmer"),
        ("sacrebleu", {"tokenize": "spm"}, "tokenize"),
        ("bertscore", {"all_layers": True}, "all_layers"),
        ("bertscore", {"rescale_with_baseline": True}, "lang"),
        ("bertscore", {"rescale_with_baseline": True, "lang": "en"}, "baseline_path"),
        ("llm_judge", {"scale_min": 5, "scale_max": 5}, "scale_max"),
        ("exact_match", {"regexes_to_ignore": ["("]}, "regular expression"),
        ("ter", {"threshold": "high"}, "threshold"),
        ("chrf", {"threshold": 50, "sentence_level": False}, "sentence_level: false"),
    ],
)
def test_invalid_values_name_the_parameter(metric_id: str, params: dict, fragment: str) -> None:
    with pytest.raises(BadParameters) as info:
        build_metric(metric_id, params)
    assert fragment in str(info.value)


def test_bertscore_accepts_evaluate_parameters() -> None:
    evaluate_names = ["lang", "model_type", "num_layers", "verbose", "idf", "device", "batch_size", "nthreads",
                      "all_layers", "rescale_with_baseline", "baseline_path", "use_fast_tokenizer"]
    assert set(evaluate_names) <= set(accepted_parameters("bertscore"))
    metric = build_metric("bertscore", {"lang": "en", "model_type": None, "num_layers": None, "batch_size": 16})
    resolved = metric.resolved_parameters()
    assert resolved["model_type"] == "embedded" and resolved["num_layers"] == 6 and resolved["batch_size"] == 16


def test_every_metric_declares_keys_and_primary() -> None:
    for metric_id in METRICS:
        metric = build_metric(metric_id)
        assert metric.primary in metric.keys
        assert "threshold" in accepted_parameters(metric_id)
