"""Levenshtein edit distance through NLTK, over characters or tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from pytest_evals.metrics.reference.reference_metric import MetricParams, ReferenceMetric, Result
from pytest_evals.metrics.reference.tokenize import DEFAULT_TOKENIZER, TokenizerName, tokenize


class EditDistanceParams(MetricParams):
    #: "char": distance between the strings; "word": between their token lists.
    level: Literal["char", "word"] = "char"
    tokenizer: TokenizerName = DEFAULT_TOKENIZER
    ignore_case: bool = False
    substitution_cost: int = Field(default=1, ge=0)
    transpositions: bool = False


class EditDistance(ReferenceMetric):
    id = "edit_distance"
    params_model = EditDistanceParams
    keys = ("distance", "similarity")
    primary = "distance"
    bounds = (("similarity", 0.0, 1.0),)
    higher_is_better = False
    library = "nltk.metrics.distance.edit_distance"
    description = "Levenshtein distance (lower is better) and similarity 1 - distance/longer length"
    params: EditDistanceParams

    def _units(self, text: str) -> str | list[str]:
        if self.params.ignore_case:
            text = text.lower()
        return text if self.params.level == "char" else tokenize(text, self.params.tokenizer)

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        from nltk.metrics.distance import edit_distance

        out = []
        for hyp, ref in zip(hypotheses, references, strict=True):
            a, b = self._units(hyp), self._units(ref)
            distance = edit_distance(
                a, b, substitution_cost=self.params.substitution_cost, transpositions=self.params.transpositions
            )
            longest = max(len(a), len(b))
            similarity = 1.0 - distance / longest if longest else 1.0
            out.append({"distance": float(distance), "similarity": max(0.0, similarity)})
        return out
