"""ROUGE-N / ROUGE-L / ROUGE-Lsum through Google's rouge-score package."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from pytest_evals.metrics.reference.reference_metric import (
    MetricError,
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)
from pytest_evals.metrics.reference.tokenize import get_tokenizer

_ROUGE_TYPE = re.compile(r"rouge([1-9]|L|Lsum)")
DEFAULT_ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL", "rougeLsum")


class RougeParams(MetricParams):
    rouge_types: tuple[str, ...] = Field(default=DEFAULT_ROUGE_TYPES, min_length=1)
    #: Porter stemming (only with rouge-score's own tokenizer).
    use_stemmer: bool = False
    #: Which of rouge-score's (precision, recall, fmeasure) is reported.
    measure: Literal["fmeasure", "precision", "recall"] = "fmeasure"
    #: "default" = rouge-score's tokenizer (lowercases, keeps ASCII letters and digits
    #: only); "regex"/"whitespace"/"13a" keep accented letters.
    tokenizer: Literal["default", "regex", "whitespace", "13a", "intl"] = "default"
    #: Ours: the largest ROUGE-L table (hypothesis tokens x reference tokens) computed.
    #: rouge-score builds the whole table in Python lists (8 bytes a cell), so two
    #: 40,000-word texts would need 13 GB and many minutes; beyond this an instance is
    #: an error at once, naming its sizes.
    max_lcs_cells: int = Field(default=10_000_000, ge=1)

    @field_validator("rouge_types")
    @classmethod
    def _known_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [t for t in value if not _ROUGE_TYPE.fullmatch(t)]
        if bad:
            raise ValueError(f"unknown rouge type(s) {', '.join(bad)}; accepted: rouge1..rouge9, rougeL, rougeLsum")
        if len(set(value)) != len(value):
            raise ValueError("rouge_types lists a type twice")
        return value

    @model_validator(mode="after")
    def _stemmer_needs_default(self) -> RougeParams:
        if self.use_stemmer and self.tokenizer != "default":
            raise ValueError("use_stemmer works only with tokenizer 'default' (rouge-score's own)")
        return self


class _WordTokenizer:
    """rouge-score's tokenizer interface over one of our data-free tokenizers."""

    def __init__(self, name: str) -> None:
        self._split = get_tokenizer(name)

    def tokenize(self, text: str) -> list[str]:
        return self._split(text.lower())


class Rouge(ReferenceMetric):
    id = "rouge"
    params_model = RougeParams
    primary = "rouge1"
    library = "rouge_score.rouge_scorer"
    description = "ROUGE-1/2/L/Lsum (rouge-score)"
    params: RougeParams

    def __init__(self, params: MetricParams) -> None:
        super().__init__(params)
        # Keys and the best-reference criterion follow the requested types.
        self.keys = tuple(self.params.rouge_types)  # type: ignore[misc]
        self.primary = self.keys[0]  # type: ignore[misc]
        self.bounds = tuple((key, 0.0, 1.0) for key in self.keys)  # type: ignore[misc]

    def _scorer(self) -> Any:
        from rouge_score import rouge_scorer

        tokenizer = None if self.params.tokenizer == "default" else _WordTokenizer(self.params.tokenizer)
        return rouge_scorer.RougeScorer(
            list(self.params.rouge_types), use_stemmer=self.params.use_stemmer, tokenizer=tokenizer
        )

    def _check_size(self, scorer: Any, hypothesis: str, references: Sequence[str]) -> None:
        if not any(t in ("rougeL", "rougeLsum") for t in self.params.rouge_types):
            return
        tokenizer = getattr(scorer, "_tokenizer", None)
        if tokenizer is None:
            return
        n = len(tokenizer.tokenize(hypothesis))
        m = max((len(tokenizer.tokenize(r)) for r in references), default=0)
        if n * m > self.params.max_lcs_cells:
            raise MetricError(
                f"text too long for ROUGE-L: {n:,} output tokens x {m:,} reference tokens = {n * m:,} "
                f"table cells, over max_lcs_cells ({self.params.max_lcs_cells:,}); rouge-score would need "
                f"about {n * m * 8 / 1e9:.1f} GB and minutes for it (drop rougeL/rougeLsum or raise max_lcs_cells)"
            )

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        scorer = self._scorer()
        for hyp, ref in zip(hypotheses, references, strict=True):
            self._check_size(scorer, hyp, [ref])
        measure = self.params.measure
        out = []
        for hyp, ref in zip(hypotheses, references, strict=True):
            scores = scorer.score(ref, hyp)  # rouge-score's order: (target, prediction)
            out.append({t: float(getattr(scores[t], measure)) for t in self.params.rouge_types})
        return out

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        # rouge-score's own rule: per ROUGE type, the reference with the highest F-measure.
        scorer = self._scorer()
        measure = self.params.measure
        out = []
        for pair in pairs:
            self._check_size(scorer, pair.hypothesis, pair.references)
            scores = scorer.score_multi(list(pair.references), pair.hypothesis)
            out.append(Scored({t: float(getattr(scores[t], measure)) for t in self.params.rouge_types}))
        return out
