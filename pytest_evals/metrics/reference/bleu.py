"""BLEU through NLTK: sentence_bleu per instance, corpus_bleu for the aggregate.

Parameters are NLTK's own keywords (``weights``, ``smoothing_function``, ``auto_reweigh``);
``smoothing_function`` names a ``SmoothingFunction`` method ("method1"; also written
"SmoothingFunction().method1"). ``smoothing`` is our older spelling of the same thing.
With ``multi_reference: library`` (default) an instance is scored by ``sentence_bleu``
with all its references, exactly as ``corpus_bleu`` counts them for the score.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field, field_validator, model_validator

from pytest_evals.metrics.reference.reference_metric import (
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)
from pytest_evals.metrics.reference.tokenize import DEFAULT_TOKENIZER, TokenizerName, tokenize

SMOOTHING_METHODS: tuple[str, ...] = tuple(f"method{i}" for i in range(8))
#: Prefixes people copy from NLTK code in front of a method name.
_SMOOTHING_PREFIXES = ("SmoothingFunction().", "SmoothingFunction.", "nltk.translate.bleu_score.SmoothingFunction().")


class BleuParams(MetricParams):
    #: N-gram weights (BLEU-4 by default); their count is the maximum n-gram order.
    weights: tuple[float, ...] = Field(default=(0.25, 0.25, 0.25, 0.25), min_length=1)
    #: NLTK's keyword: name of a ``SmoothingFunction`` method ("method0"..."method7");
    #: None = NLTK's default (no smoothing).
    smoothing_function: str | None = None
    #: Our earlier name for ``smoothing_function`` (either may be given, not both).
    smoothing: str | None = None
    auto_reweigh: bool = False
    tokenizer: TokenizerName = DEFAULT_TOKENIZER
    lowercase: bool = False

    @field_validator("smoothing_function", "smoothing")
    @classmethod
    def _known_method(cls, value: str | None) -> str | None:
        if value is None:
            return None
        name = value.strip()
        for prefix in _SMOOTHING_PREFIXES:
            if name.startswith(prefix):
                name = name[len(prefix):]
        name = name.removesuffix("()")
        if name not in SMOOTHING_METHODS:
            raise ValueError(
                f"unknown smoothing function {value!r}; accepted: names of NLTK SmoothingFunction "
                f"methods ({', '.join(SMOOTHING_METHODS)}) or null"
            )
        return name

    @model_validator(mode="after")
    def _one_spelling(self) -> BleuParams:
        if self.smoothing is not None and self.smoothing_function is not None and self.smoothing != self.smoothing_function:
            raise ValueError("give smoothing_function (NLTK's name) or smoothing, not both")
        return self

    @property
    def method(self) -> str | None:
        return self.smoothing_function or self.smoothing


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
        if self.params.method is None:
            return None
        from nltk.translate.bleu_score import SmoothingFunction

        method: Callable[..., Any] = getattr(SmoothingFunction(), self.params.method)
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

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        from nltk.translate.bleu_score import sentence_bleu

        smoothing = self._smoothing()
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for pair in pairs:
                value = sentence_bleu(
                    [self._tokens(r) for r in pair.references],
                    self._tokens(pair.hypothesis),
                    weights=self.params.weights,
                    smoothing_function=smoothing,
                    auto_reweigh=self.params.auto_reweigh,
                )
                out.append(Scored({"bleu": float(value)}))
        return out

    def resolved_parameters(self) -> dict[str, Any]:
        out = super().resolved_parameters()
        # One spelling in the output: NLTK's.
        out["smoothing_function"] = out.pop("smoothing") or out.get("smoothing_function")
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
