"""Issue 16: HarpIA files written with the libraries' own names, and values equal to the libraries'."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.harpia.deadline import DeadlineExceeded, call_with_deadline
from pytest_evals.families.harpia.document import load_document
from pytest_evals.families.harpia.writers import load_output
from pytest_evals.metrics.reference import BadParameters, MetricError, Pair, build_metric

from .conftest import needs_wordnet

#: A hypothesis that shares most of its n-grams with the two references together but with
#: neither alone: NLTK's multi-reference BLEU (clipped counts over all references) is high,
#: the best single reference much lower.
HYP = "the quick brown fox jumps over the lazy dog near the river bank"
REFS = ("the quick brown fox jumps over a sleepy dog", "a fast fox jumps over the lazy dog near the river bank")

#: Hugging Face evaluate's bertscore ``_compute`` keywords and their defaults (evaluate 0.4).
EVALUATE_BERTSCORE_DEFAULTS: dict[str, Any] = {
    "lang": None, "model_type": None, "num_layers": None, "verbose": False, "idf": False, "device": None,
    "batch_size": 64, "nthreads": 4, "all_layers": False, "rescale_with_baseline": False,
    "baseline_path": None, "use_fast_tokenizer": False,
}


def nltk_tokens(text: str) -> list[str]:
    from pytest_evals.metrics.reference.tokenize import tokenize

    return tokenize(text, "13a")


# -- BLEU: NLTK's keyword and NLTK's multi-reference -------------------------------------
@pytest.mark.parametrize("spelling", ["method1", "SmoothingFunction().method1", "method1()"])
def test_bleu_accepts_nltk_smoothing_function(spelling: str) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    metric = build_metric("bleu", {"weights": [0.25] * 4, "smoothing_function": spelling, "auto_reweigh": False})
    [scored] = metric.score_pairs([Pair("the cat sat on a mat", ("the cat sat on the mat",))])
    expected = sentence_bleu([nltk_tokens("the cat sat on the mat")], nltk_tokens("the cat sat on a mat"),
                             smoothing_function=SmoothingFunction().method1)
    assert scored.result["bleu"] == pytest.approx(expected, abs=1e-12)
    assert metric.resolved_parameters()["smoothing_function"] == "method1"


def test_bleu_smoothing_errors_name_the_accepted_values() -> None:
    with pytest.raises(BadParameters, match=r"unknown smoothing function 'laplace'.*method0"):
        build_metric("bleu", {"smoothing_function": "laplace"})
    with pytest.raises(BadParameters, match="not both"):
        build_metric("bleu", {"smoothing_function": "method1", "smoothing": "method2"})


def test_bleu_library_multi_reference_is_nltks_and_matches_the_corpus_figure() -> None:
    from nltk.translate.bleu_score import corpus_bleu, sentence_bleu

    library = build_metric("bleu")
    best = build_metric("bleu", {"multi_reference": "best"})
    [lib] = library.score_pairs([Pair(HYP, REFS)])
    [one] = best.score_pairs([Pair(HYP, REFS)])
    nltk_multi = sentence_bleu([nltk_tokens(r) for r in REFS], nltk_tokens(HYP))
    nltk_single = max(sentence_bleu([nltk_tokens(r)], nltk_tokens(HYP)) for r in REFS)
    assert lib.result["bleu"] == pytest.approx(nltk_multi, abs=1e-12)
    assert one.result["bleu"] == pytest.approx(nltk_single, abs=1e-12)
    # The default is the more favourable to the model here, and it is what the corpus counts.
    assert lib.result["bleu"] > one.result["bleu"] + 0.1
    assert lib.reference_index is None and one.reference_index is not None
    corpus = library.corpus_score([HYP], [list(REFS)])["bleu"]
    assert corpus == pytest.approx(lib.result["bleu"], abs=1e-12)
    assert corpus == pytest.approx(corpus_bleu([[nltk_tokens(r) for r in REFS]], [nltk_tokens(HYP)]), abs=1e-12)


def test_metric_ids_are_case_insensitive(tmp_path: Path) -> None:
    path = tmp_path / "t.harpia.json"
    path.write_text(json.dumps({"instances": [{"id": 1, "actual-output": "a", "expected-output": ["a"]}],
                                "metrics": [{"id": "BLEU", "enable": True, "parameters": {"smoothing_function": "method1"}},
                                            {"id": "Exact_Match"}]}), encoding="utf-8")
    doc = load_document(path)
    assert [(s.id, s.name) for s in doc.specs] == [("bleu", "bleu"), ("exact_match", "exact_match")]
    assert build_metric("ROUGE").id == "rouge"


# -- other libraries' own multi-reference rules ------------------------------------------
def test_sacrebleu_rouge_library_multi_reference_equal_the_libraries() -> None:
    from rouge_score import rouge_scorer
    from sacrebleu.metrics import BLEU, CHRF, TER

    pair = Pair(HYP, REFS)
    [bleu] = build_metric("sacrebleu").score_pairs([pair])
    assert bleu.result["bleu"] == pytest.approx(BLEU(effective_order=True).sentence_score(HYP, list(REFS)).score)
    [chrf] = build_metric("chrf").score_pairs([pair])
    assert chrf.result["chrf"] == pytest.approx(CHRF().sentence_score(HYP, list(REFS)).score)
    [ter] = build_metric("ter").score_pairs([pair])
    assert ter.result["ter"] == pytest.approx(TER().sentence_score(HYP, list(REFS)).score)
    [rouge] = build_metric("rouge", {"rouge_types": ["rouge1", "rougeL"]}).score_pairs([pair])
    direct = rouge_scorer.RougeScorer(["rouge1", "rougeL"]).score_multi(list(REFS), HYP)
    assert rouge.result == pytest.approx({t: direct[t].fmeasure for t in ("rouge1", "rougeL")})


@needs_wordnet
def test_meteor_library_multi_reference_is_nltks() -> None:
    from nltk.translate.meteor_score import meteor_score

    from pytest_evals.metrics.reference.wordnet import load_wordnet

    [scored] = build_metric("meteor").score_pairs([Pair(HYP, REFS)])
    expected = meteor_score([nltk_tokens(r) for r in REFS], nltk_tokens(HYP), wordnet=load_wordnet())
    assert scored.result["meteor"] == pytest.approx(expected)


# -- BERTScore ---------------------------------------------------------------------------
def test_bertscore_accepts_evaluates_parameters_with_their_defaults(model_path: str) -> None:
    metric = build_metric("bertscore", dict(EVALUATE_BERTSCORE_DEFAULTS, lang="en"))
    resolved = metric.resolved_parameters()
    assert resolved["device"] is None and resolved["model_type"] == "embedded" and resolved["num_layers"] == 6
    # Our defaults are evaluate's, parameter by parameter (model_type: null = our default model).
    ours = build_metric("bertscore").params.model_dump()
    for key, value in EVALUATE_BERTSCORE_DEFAULTS.items():
        if key != "model_type":
            assert ours[key] == value, key
    [note] = metric.notes()
    assert "all-MiniLM-L6-v2" in note and "not comparable" in note


def test_bertscore_multi_reference_takes_the_maximum_per_component_like_the_library(model_path: str) -> None:
    metric = build_metric("bertscore", {"device": None})
    refs = ["The meeting has been delayed until next week.", "They postponed the meeting."]
    hyp = "The meeting was postponed to next week."
    [scored] = metric.score_pairs([Pair(hyp, tuple(refs))])
    p, r, f = metric.scorer().score(  # type: ignore[attr-defined]
        [hyp], [refs])  # bert-score's own multi-reference call
    assert scored.result["precision"] == pytest.approx(float(p[0]), abs=1e-5)
    assert scored.result["recall"] == pytest.approx(float(r[0]), abs=1e-5)
    assert scored.result["f1"] == pytest.approx(float(f[0]), abs=1e-5)


def test_one_empty_output_among_40_leaves_the_other_39_scored(model_path: str) -> None:
    metric = build_metric("bertscore")
    hyps = [f"Sentence number {i} about the weather today." for i in range(40)]
    refs = [f"Sentence {i} is about today's weather." for i in range(40)]
    hyps[17] = ""
    scored = metric.score_pairs([Pair(h, (r,)) for h, r in zip(hyps, refs, strict=True)])
    assert len(scored) == 40 and all(s.error is None for s in scored)
    assert scored[17].result == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "empty": True}
    live = [i for i in range(40) if i != 17]
    _, _, f = metric.scorer().score(  # type: ignore[attr-defined]
        [hyps[i] for i in live], [refs[i] for i in live])
    for k, i in enumerate(live):
        assert "empty" not in scored[i].result
        assert scored[i].result["f1"] == pytest.approx(float(f[k]), abs=1e-5)


def test_texts_over_the_token_limit_are_flagged_as_truncated(model_path: str) -> None:
    metric = build_metric("bertscore")
    prefix = " ".join(["word"] * 600)
    [long_pair, short_pair] = metric.score_pairs([
        Pair(prefix + " and then something completely different", (prefix + " and an unrelated ending",)),
        Pair("A short sentence.", ("A brief sentence.",)),
    ])
    assert long_pair.result.get("truncated") is True
    assert "truncated" not in short_pair.result


# -- ROUGE-L on very long texts, the per-instance deadline ----------------------------------
def test_rouge_l_on_40000_words_is_a_clear_error_at_once() -> None:
    words = " ".join(f"w{i % 997}" for i in range(40_000))
    metric = build_metric("rouge", {"rouge_types": ["rouge1", "rougeL"]})
    started = time.perf_counter()
    with pytest.raises(MetricError, match=r"too long for ROUGE-L: 40,000 output tokens x 40,000 reference tokens"):
        metric.score_pairs([Pair(words, (words[::-1],))])
    # In a batch, only that instance carries the error.
    long_one, short_one = metric.score_pairs([Pair(words, (words,)), Pair("a b c", ("a b d",))])
    assert time.perf_counter() - started < 10
    assert long_one.error is not None and "too long for ROUGE-L" in long_one.error
    assert short_one.error is None and short_one.result["rouge1"] == pytest.approx(2 / 3)


def test_deadline_interrupts_a_pure_python_computation() -> None:
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            sum(range(1000))

    started = time.perf_counter()
    with pytest.raises(DeadlineExceeded, match=r"per-instance deadline of 0\.3 s"):
        call_with_deadline(spin, 0.3)
    assert time.perf_counter() - started < 5
    # The worker stopped by itself (interrupted), without the event being set.
    deadline = time.monotonic() + 5
    while any(t.name == "pytest-evals-metric" and t.is_alive() for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the metric thread kept running"
        time.sleep(0.05)
    assert not stop.is_set()
    assert call_with_deadline(lambda: 42, 5) == 42
    with pytest.raises(MetricError, match="boom"):
        call_with_deadline(lambda: (_ for _ in ()).throw(MetricError("boom")), 5)


def test_output_reader_accepts_either_elapsed_time_key(tmp_path: Path) -> None:
    path = tmp_path / "harpia-lab-output.json"
    path.write_text(json.dumps([{"id": "bleu", "score": {"bleu": 0.5}, "elapsed time": 1.5},
                                {"id": "rouge", "score": {}, "elapsed_time": 2.0}]), encoding="utf-8")
    objects = load_output(path)
    assert [(o["elapsed_time"], o["elapsed time"]) for o in objects] == [(1.5, 1.5), (2.0, 2.0)]
