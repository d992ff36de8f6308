"""METEOR through NLTK (exact, Porter-stem and WordNet-synonym matches)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from pytest_evals.metrics.reference.reference_metric import (
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)
from pytest_evals.metrics.reference.tokenize import DEFAULT_TOKENIZER, TokenizerName, tokenize
from pytest_evals.metrics.reference.wordnet import load_wordnet


class MeteorParams(MetricParams):
    alpha: float = Field(default=0.9, ge=0, le=1)
    beta: float = 3.0
    gamma: float = Field(default=0.5, ge=0, le=1)
    tokenizer: TokenizerName = DEFAULT_TOKENIZER
    #: A WordNet 3.0 dict directory; default: NLTK's data, then /usr/share/wordnet.
    wordnet_path: str | None = None


class Meteor(ReferenceMetric):
    id = "meteor"
    params_model = MeteorParams
    keys = ("meteor",)
    primary = "meteor"
    bounds = (("meteor", 0.0, 1.0),)
    library = "nltk.translate.meteor_score"
    description = "METEOR (NLTK; needs WordNet data, never downloaded at run time)"
    params: MeteorParams

    def wordnet(self) -> Any:
        return load_wordnet(self.params.wordnet_path)

    def check_environment(self) -> None:
        """Fail before any instance runs when WordNet is missing."""
        self.wordnet()

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        from nltk.translate.meteor_score import single_meteor_score

        wordnet = self.wordnet()
        p = self.params
        return [
            {
                "meteor": float(
                    single_meteor_score(
                        tokenize(ref, p.tokenizer),
                        tokenize(hyp, p.tokenizer),
                        wordnet=wordnet,
                        alpha=p.alpha,
                        beta=p.beta,
                        gamma=p.gamma,
                    )
                )
            }
            for hyp, ref in zip(hypotheses, references, strict=True)
        ]

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        from nltk.translate.meteor_score import meteor_score

        wordnet = self.wordnet()
        p = self.params
        return [
            Scored({"meteor": float(meteor_score(
                [tokenize(r, p.tokenizer) for r in pair.references],
                tokenize(pair.hypothesis, p.tokenizer),
                wordnet=wordnet, alpha=p.alpha, beta=p.beta, gamma=p.gamma,
            ))})
            for pair in pairs
        ]
