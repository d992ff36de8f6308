"""BLEU through NLTK: sentence_bleu per instance, corpus_bleu for the aggregate."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field, field_validator

from pytest_evals.metrics.reference.base import MetricParams, ReferenceMetric, Result
from pytest_evals.metrics.reference.tokenize import DEFAULT_TOKENIZER, TokenizerName, tokenize

SMOOTHING_METHODS: tuple[str, ...] = tuple(f"method{i}" for i in range(8))


class BleuParams(MetricParams):
    #: N-gram weights (BLEU-4 by default); their count is the maximum n-gram order.
    weights: tuple[float, ...] = Field(default=(0.25, 0.25, 0.25, 0.25), min_length=1)
    #: Name of an NLTK ``SmoothingFunction`` method ("method0"..."method7"); None = no smoothing.
    smoothing: str | None = None
    auto_reweigh: bool = False
    tokenizer: TokenizerName = DEFAULT_TOKENIZER
    lowercase: bool = False

    @field_validator("smoothing")
    @classmethod
    def _known_method(cls, value: str | None) -> str | None:
        if value is not None and value not in SMOOTHING_METHODS:
            raise ValueError(f"unknown smoothing {value!r}; accepted: {', '.join(SMOOTHING_METHODS)} or null")
        return value


class NltkBleu(ReferenceMetric):
    id = "bleu"
    params_model = BleuParams
    keys = ("bleu",)
    primary = "bleu"
    bounds = (("bleu", 0.0, 1.0),)
    corpus_level = True
    library = "nltk.translate.bleu_score"
    description = "BLEU (NLTK): sentence_bleu per instance, corpus_bleu for the score"

    params: BleuParams

    def _smoothing(self) -> Callable[..., Any] | None:
        if self.params.smoothing is None:
            return None
        from nltk.translate.bleu_score import SmoothingFunction

        method: Callable[..., Any] = getattr(SmoothingFunction(), self.params.smoothing)
        return method

    def _tokens(self, text: str) -> list[str]:
        return tokenize(text, self.params.tokenizer, self.params.lowercase)

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        from nltk.translate.bleu_score import sentence_bleu

        smoothing = self._smoothing()
        out = []
        # Without smoothing NLTK warns for every sentence lacking higher-order matches;
        # the score (0) is the documented behaviour, the warning is noise in a report.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for hyp, ref in zip(hypotheses, references, strict=True):
                value = sentence_bleu(
                    [self._tokens(ref)],
                    self._tokens(hyp),
                    weights=self.params.weights,
                    smoothing_function=smoothing,
                    auto_reweigh=self.params.auto_reweigh,
                )
                out.append({"bleu": float(value)})
        return out

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> Result:
        from nltk.translate.bleu_score import corpus_bleu

        if not hypotheses:
            return {"bleu": None}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            value = corpus_bleu(
                [[self._tokens(r) for r in refs] for refs in references],
                [self._tokens(h) for h in hypotheses],
                weights=self.params.weights,
                smoothing_function=self._smoothing(),
                auto_reweigh=self.params.auto_reweigh,
            )
        return {"bleu": float(value)}
