"""Each metric against the library it wraps, called directly on the same text."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_evals.metrics.reference import MetricError, Pair, build_metric

from .conftest import needs_wordnet

HYPS = ["The cat is sleeping on the sofa .", "Tomorrow it will rain in Lisbon .", "I like to read books at night ."]
REFS = ["The cat sleeps on the sofa .", "It will rain in Lisbon tomorrow .", "I love reading books at night ."]


def pairs(hyps: list[str] = HYPS, refs: list[str] = REFS) -> list[Pair]:
    return [Pair(h, (r,)) for h, r in zip(hyps, refs, strict=True)]


def results(metric_id: str, params: dict | None = None, data: list[Pair] | None = None) -> list[dict]:
    metric = build_metric(metric_id, params or {})
    return [s.result for s in metric.score_pairs(data if data is not None else pairs())]


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"smoothing": "method1"},
        {"smoothing": "method4", "weights": [0.5, 0.5]},
        {"weights": [0.25, 0.25, 0.25, 0.25], "smoothing": "method7", "auto_reweigh": True},
    ],
)
def test_bleu_matches_nltk_sentence_and_corpus(params: dict) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    # whitespace tokens: the library gets exactly what our tokenizer produced
    ours = {**params, "tokenizer": "whitespace"}
    smoothing = getattr(SmoothingFunction(), params["smoothing"]) if "smoothing" in params else None
    weights = tuple(params.get("weights", (0.25,) * 4))
    auto = params.get("auto_reweigh", False)
    expected = [
        sentence_bleu([r.split()], h.split(), weights=weights, smoothing_function=smoothing, auto_reweigh=auto)
        for h, r in zip(HYPS, REFS, strict=True)
    ]
    got = [r["bleu"] for r in results("bleu", ours)]
    assert got == pytest.approx(expected, abs=1e-12)
    metric = build_metric("bleu", ours)
    corpus = corpus_bleu([[r.split()] for r in REFS], [h.split() for h in HYPS], weights=weights,
                         smoothing_function=smoothing, auto_reweigh=auto)
    assert metric.corpus_score(HYPS, [[r] for r in REFS])["bleu"] == pytest.approx(corpus, abs=1e-12)
    assert 0 < corpus < 1


def test_bleu_default_tokenizer_is_sacrebleu_13a() -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    hyp, ref = "The cat, sleeping.", "The cat, asleep."
    expected = sentence_bleu([tok(ref).split()], tok(hyp).split(), smoothing_function=SmoothingFunction().method1)
    got = results("bleu", {"smoothing": "method1"}, [Pair(hyp, (ref,))])[0]["bleu"]
    assert got == pytest.approx(expected)
    # "cat," is two tokens with 13a, one with whitespace splitting: the scores differ
    assert got != pytest.approx(results("bleu", {"smoothing": "method1", "tokenizer": "whitespace"},
                                        [Pair(hyp, (ref,))])[0]["bleu"])


def test_sacrebleu_chrf_ter_match_sacrebleu() -> None:
    import sacrebleu

    refs2 = ["The cat is asleep on the couch .", "Tomorrow it is going to rain in Lisbon .", "I like reading books at night ."]
    for i, (h, r) in enumerate(zip(HYPS, REFS, strict=True)):
        assert results("sacrebleu", {}, [Pair(h, (r,))])[0]["bleu"] == pytest.approx(sacrebleu.sentence_bleu(h, [r]).score)
        assert results("chrf", {}, [Pair(h, (r,))])[0]["chrf"] == pytest.approx(sacrebleu.sentence_chrf(h, [r]).score)
        assert results("ter", {}, [Pair(h, (r,))])[0]["ter"] == pytest.approx(sacrebleu.sentence_ter(h, [r]).score)
        # chrF++ and options reach the library
        assert results("chrf", {"word_order": 2}, [Pair(h, (refs2[i],))])[0]["chrf"] == pytest.approx(
            sacrebleu.sentence_chrf(h, [refs2[i]], word_order=2).score
        )
    streams = [REFS, refs2]
    corpus_refs = [[a, b] for a, b in zip(REFS, refs2, strict=True)]
    assert build_metric("sacrebleu").corpus_score(HYPS, corpus_refs)["bleu"] == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, streams).score
    )
    assert build_metric("chrf").corpus_score(HYPS, corpus_refs)["chrf"] == pytest.approx(sacrebleu.corpus_chrf(HYPS, streams).score)
    assert build_metric("ter").corpus_score(HYPS, corpus_refs)["ter"] == pytest.approx(sacrebleu.corpus_ter(HYPS, streams).score)
    lower = build_metric("sacrebleu", {"lowercase": True, "tokenize": "intl"}).corpus_score(HYPS, corpus_refs)
    assert lower["bleu"] == pytest.approx(sacrebleu.corpus_bleu(HYPS, streams, lowercase=True, tokenize="intl").score)
    assert "tok:intl" in lower["signature"]


def test_sacrebleu_corpus_with_a_varying_number_of_references() -> None:
    from sacrebleu.metrics import BLEU

    refs = [["The cat sleeps on the sofa ."], ["It will rain in Lisbon tomorrow .", "Tomorrow it rains in Lisbon ."],
            ["I love reading books at night ."]]
    streams: list[list[str | None]] = [[r[0] for r in refs], [None, refs[1][1], None]]
    expected = BLEU().corpus_score(HYPS, streams).score  # type: ignore[arg-type]  # None pads, as sacrebleu documents
    assert build_metric("sacrebleu").corpus_score(HYPS, refs)["bleu"] == pytest.approx(expected)


@pytest.mark.parametrize("params", [{}, {"use_stemmer": True, "rouge_types": ["rouge1", "rougeLsum"]},
                                    {"measure": "recall", "rouge_types": ["rouge2"]}])
def test_rouge_matches_rouge_score(params: dict) -> None:
    from rouge_score import rouge_scorer

    types = params.get("rouge_types", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=params.get("use_stemmer", False))
    measure = params.get("measure", "fmeasure")
    got = results("rouge", params)
    for row, h, r in zip(got, HYPS, REFS, strict=True):
        expected = scorer.score(r, h)
        assert list(row) == types
        for t in types:
            assert row[t] == pytest.approx(getattr(expected[t], measure))


def test_rouge_regex_tokenizer_keeps_accents() -> None:
    pair = [Pair("ação rápida", ("ação lenta",))]
    # rouge-score's own tokenizer drops non-ASCII letters: "ação" becomes "a", "o"
    assert results("rouge", {"rouge_types": ["rouge1"], "tokenizer": "regex"}, pair)[0]["rouge1"] == pytest.approx(0.5)


def test_meteor_wordnet_missing_is_a_clear_error(tmp_path) -> None:
    metric = build_metric("meteor", {"wordnet_path": str(tmp_path)})
    with pytest.raises(MetricError) as info:
        metric.check_environment()
    text = str(info.value)
    assert "nltk.downloader wordnet" in text and "wordnet-base" in text and str(tmp_path) in text


@needs_wordnet
def test_meteor_matches_nltk() -> None:
    from nltk.translate.meteor_score import meteor_score, single_meteor_score

    metric = build_metric("meteor", {"tokenizer": "whitespace"})
    wordnet = metric.wordnet()  # type: ignore[attr-defined]
    for row, h, r in zip(results("meteor", {"tokenizer": "whitespace"}), HYPS, REFS, strict=True):
        assert row["meteor"] == pytest.approx(single_meteor_score(r.split(), h.split(), wordnet=wordnet))
    # NLTK's own multi-reference METEOR is the best single reference, as ours is
    refs = ("It rains in Lisbon tomorrow .", REFS[1])
    [scored] = metric.score_pairs([Pair(HYPS[1], refs)])
    assert scored.result["meteor"] == pytest.approx(meteor_score([r.split() for r in refs], HYPS[1].split(), wordnet=wordnet))
    # synonyms count: "sofa"/"couch" match through WordNet
    syn = results("meteor", {}, [Pair("the couch", ("the sofa",))])[0]["meteor"]
    assert syn > results("meteor", {}, [Pair("the table", ("the sofa",))])[0]["meteor"]


def test_exact_match_normalisation() -> None:
    cases: list[tuple[dict[str, Any], str, str, float]] = [
        ({}, "Lisbon", "Lisbon", 1.0),
        ({}, "Lisbon\n", "Lisbon", 1.0),  # strip is on by default
        ({"strip": False}, "Lisbon\n", "Lisbon", 0.0),
        ({}, "lisbon", "Lisbon", 0.0),
        ({"ignore_case": True}, "lisbon", "Lisbon", 1.0),
        ({"ignore_punctuation": True}, "Lisbon!", "Lisbon", 1.0),
        ({"ignore_numbers": True}, "Route 66", "Route ", 1.0),
        ({"normalize_whitespace": True}, "New   York", "New York", 1.0),
        ({"regexes_to_ignore": ["^Answer: "]}, "Answer: 42", "42", 1.0),
    ]
    for params, hyp, ref, expected in cases:
        assert results("exact_match", params, [Pair(hyp, (ref,))])[0]["exact_match"] == expected, (params, hyp)


def test_edit_distance_matches_nltk() -> None:
    from nltk.metrics.distance import edit_distance

    for row, h, r in zip(results("edit_distance"), HYPS, REFS, strict=True):
        assert row["distance"] == edit_distance(h, r)
        assert row["similarity"] == pytest.approx(1 - edit_distance(h, r) / max(len(h), len(r)))
    word = results("edit_distance", {"level": "word", "tokenizer": "whitespace", "transpositions": True})
    for row, h, r in zip(word, HYPS, REFS, strict=True):
        assert row["distance"] == edit_distance(h.split(), r.split(), transpositions=True)


def test_semantic_similarity_matches_sentence_transformers(model_path: str) -> None:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_path, device="cpu")
    got = [r["similarity"] for r in results("semantic_similarity")]
    for value, h, r in zip(got, HYPS, REFS, strict=True):
        a, b = model.encode([h, r], normalize_embeddings=True)
        assert value == pytest.approx(float((a * b).sum()), abs=1e-5)
    assert all(0.5 < v <= 1.0 + 1e-6 for v in got)


def test_bertscore_matches_bert_score(model_path: str) -> None:
    import bert_score

    precision, recall, f1 = bert_score.score(HYPS, REFS, model_type=model_path, num_layers=6)
    got = results("bertscore", {"lang": "en"})
    assert [r["precision"] for r in got] == pytest.approx(precision.tolist(), abs=1e-6)
    assert [r["recall"] for r in got] == pytest.approx(recall.tolist(), abs=1e-6)
    assert [r["f1"] for r in got] == pytest.approx(f1.tolist(), abs=1e-6)


def test_bertscore_idf_uses_all_references_of_the_suite(model_path: str) -> None:
    import bert_score

    # nthreads=0: bert_score's own get_idf_dict counts in this process; with its default
    # (a fork()ed Pool) this multi-threaded test process can hang (test_bertscore_no_fork.py)
    _p, _r, f1 = bert_score.score(HYPS, REFS, model_type=model_path, num_layers=6, idf=True, nthreads=0)
    metric = build_metric("bertscore", {"idf": True})
    metric.prepare([[r] for r in REFS])
    # scored one instance at a time, as batches of one, the idf weights still come from all references
    got = [metric.score_pairs([p])[0].result["f1"] for p in pairs()]
    assert got == pytest.approx(f1.tolist(), abs=1e-6)
    plain = results("bertscore")
    assert [r["f1"] for r in plain] != pytest.approx(got, abs=1e-6)


def test_best_of_references_keeps_the_best_for_the_model() -> None:
    hyp = "It will rain in Lisbon tomorrow ."
    worse, better = "Rain is expected tomorrow in the city of Lisbon .", "It will rain in Lisbon tomorrow !"
    for metric_id, key in [("bleu", "bleu"), ("sacrebleu", "bleu"), ("chrf", "chrf"), ("rouge", "rouge1"),
                           ("exact_match", "exact_match"), ("edit_distance", "distance"), ("ter", "ter")]:
        params: dict[str, Any] = {"smoothing": "method1"} if metric_id == "bleu" else {}
        params = {"ignore_punctuation": True} if metric_id == "exact_match" else params
        metric = build_metric(metric_id, {**params, "multi_reference": "best"})
        [both] = metric.score_pairs([Pair(hyp, (worse, better))])
        [alone_better] = metric.score_pairs([Pair(hyp, (better,))])
        [alone_worse] = metric.score_pairs([Pair(hyp, (worse,))])
        assert both.reference_index == 1, metric_id
        assert both.result == alone_better.result, metric_id
        if metric.higher_is_better:
            assert alone_better.result[key] >= alone_worse.result[key], metric_id
        else:
            assert alone_better.result[key] <= alone_worse.result[key], metric_id


def test_best_of_references_for_bertscore_keeps_one_reference_whole(model_path: str) -> None:
    metric = build_metric("bertscore", {"multi_reference": "best"})
    hyp = "The meeting was delayed."
    refs = ("The meeting has been delayed.", "Completely unrelated words here.")
    [both] = metric.score_pairs([Pair(hyp, refs)])
    singles = [metric.score_pairs([Pair(hyp, (r,))])[0].result for r in refs]
    best = max(range(2), key=lambda i: singles[i]["f1"])
    assert both.reference_index == best == 0
    assert both.result == pytest.approx(singles[0])


def test_unsupervised_judge_needs_no_reference() -> None:
    judge = build_metric("llm_judge", {"use_references": False})
    assert not judge.supervised
    text = judge.messages(Pair("Hello", ("Hi there",), "Say hello"))[1]["content"]  # type: ignore[attr-defined]
    assert "Hi there" not in text and "Say hello" in text
    with_refs = build_metric("llm_judge").messages(Pair("Hello", ("Hi there",), "Say hello"))[1]["content"]  # type: ignore[attr-defined]
    assert "Hi there" in with_refs


def test_judge_rating_is_rescaled_and_checked() -> None:
    from pytest_evals.metrics.reference.judged_metric import Rating
    from pytest_evals.model.errors import JudgeError

    judge = build_metric("llm_judge", {"scale_min": 0, "scale_max": 10})
    assert judge.result_from(Rating(rating=7, reasoning="ok"))["score"] == pytest.approx(0.7)  # type: ignore[attr-defined]
    with pytest.raises(JudgeError, match="outside the scale"):
        judge.result_from(Rating(rating=11))  # type: ignore[attr-defined]


def test_threshold_direction_follows_the_metric() -> None:
    bleu = build_metric("bleu", {"threshold": 0.5})
    assert bleu.passes({"bleu": 0.6}) is True and bleu.passes({"bleu": 0.4}) is False
    ter = build_metric("ter", {"threshold": 30})
    assert ter.passes({"ter": 20.0}) is True and ter.passes({"ter": 40.0}) is False
    assert build_metric("chrf").passes({"chrf": 1.0}) is None


def test_supervised_metric_without_reference_is_an_error() -> None:
    with pytest.raises(MetricError, match="at least one reference"):
        build_metric("bleu").score_pairs([Pair("text", ())])


def test_nan_primary_never_wins_best_of() -> None:
    metric = build_metric("exact_match")
    assert metric._goodness({"exact_match": math.nan}) == -math.inf
