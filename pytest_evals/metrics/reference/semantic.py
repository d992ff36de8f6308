"""Cosine similarity of sentence embeddings (embedded all-MiniLM-L6-v2 by default).

The embedded model is computed by the offline judge's encoder
(:mod:`pytest_evals.llm.minilm_encoder`: torch alone, the same vectors as
sentence-transformers to float32 rounding), shared with the offline judge on CPU, so a
run loads it once and never imports sentence-transformers for it. Any other model (a
local sentence-transformers directory) is loaded by sentence-transformers, which the
``harpia`` extra installs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from pytest_evals.metrics.reference.bertscore import EMBEDDED, embedded_model_path
from pytest_evals.metrics.reference.reference_metric import MetricParams, ReferenceMetric, Result

#: texts -> L2-normalised embeddings (numpy array, one row per text).
Encoder = Callable[[list[str]], Any]

class SemanticParams(MetricParams):
    #: A local sentence-transformers directory, or "embedded" (all-MiniLM-L6-v2).
    model: str = EMBEDDED
    batch_size: int = Field(default=64, ge=1)
    device: str = "cpu"


def embedded_encoder(device: str) -> Any:
    """The embedded model's torch encoder on ``device`` (one per process and device)."""
    from pytest_evals.llm.local_weights import load_model

    def build() -> Any:
        from pytest_evals.llm.minilm_encoder import MiniLMEncoder

        return MiniLMEncoder(embedded_model_path(), device=device)

    return load_model(("minilm-encoder", device), build)


def sentence_transformer(path: str, device: str) -> Any:
    from pytest_evals.llm.local_weights import load_model

    def build() -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(path, device=device)

    return load_model(("sentence-transformers", path, device), build)


class SemanticSimilarity(ReferenceMetric):
    id = "semantic_similarity"
    params_model = SemanticParams
    keys = ("similarity",)
    primary = "similarity"
    bounds = (("similarity", -1.0, 1.0),)
    batched = True
    library = "sentence_transformers"
    description = "Cosine similarity of sentence embeddings (embedded all-MiniLM-L6-v2 by default)"
    params: SemanticParams

    def __init__(self, params: MetricParams) -> None:
        super().__init__(params)
        #: Set by the task to share the session's embedder (one model load per process).
        self.encoder: Encoder | None = None

    def warm_up(self) -> None:
        self.encode(["warm-up"])

    def encode(self, texts: list[str]) -> Any:
        if self.params.model == EMBEDDED:
            if self.params.device == "cpu":
                # The offline judge's embedder: one model per process, its memo shared.
                if self.encoder is None:
                    from pytest_evals.llm.offline_judge import get_embedder

                    self.encoder = get_embedder().encode
                return self.encoder(texts)
            return embedded_encoder(self.params.device).encode(texts, batch_size=self.params.batch_size)
        model = sentence_transformer(self.params.model, self.params.device)
        return model.encode(texts, batch_size=self.params.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        if not hypotheses:
            return []
        # Each distinct text is embedded once, in one batch.
        texts = list(dict.fromkeys([*hypotheses, *references]))
        index = {t: i for i, t in enumerate(texts)}
        vectors = self.encode(texts)
        return [
            {"similarity": float((vectors[index[h]] * vectors[index[r]]).sum())}
            for h, r in zip(hypotheses, references, strict=True)
        ]
