"""Exact match after optional normalisation (the options of evaluate's exact_match, plus whitespace)."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from pydantic import field_validator

from pytest_evals.metrics.reference.reference_metric import MetricParams, ReferenceMetric, Result

_SPACES = re.compile(r"\s+")


class ExactMatchParams(MetricParams):
    #: Regular expressions whose matches are removed before comparing.
    regexes_to_ignore: tuple[str, ...] = ()
    ignore_case: bool = False
    #: Removes ASCII punctuation (string.punctuation).
    ignore_punctuation: bool = False
    ignore_numbers: bool = False
    #: Strip leading/trailing whitespace (model replies often end with a newline).
    strip: bool = True
    #: Collapse runs of whitespace into one space.
    normalize_whitespace: bool = False

    @field_validator("regexes_to_ignore")
    @classmethod
    def _compiles(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"regexes_to_ignore: {pattern!r} is not a valid regular expression ({exc})") from None
        return value


class ExactMatch(ReferenceMetric):
    id = "exact_match"
    params_model = ExactMatchParams
    keys = ("exact_match",)
    primary = "exact_match"
    library = "(built in)"
    description = "1.0 when the output equals a reference after normalisation, else 0.0"
    params: ExactMatchParams

    def normalise(self, text: str) -> str:
        p = self.params
        for pattern in p.regexes_to_ignore:
            text = re.sub(pattern, "", text)
        if p.ignore_case:
            text = text.lower()
        if p.ignore_punctuation:
            text = text.translate(str.maketrans("", "", string.punctuation))
        if p.ignore_numbers:
            text = text.translate(str.maketrans("", "", string.digits))
        if p.normalize_whitespace:
            text = _SPACES.sub(" ", text)
        if p.strip:
            text = text.strip()
        return text

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        return [
            {"exact_match": 1.0 if self.normalise(h) == self.normalise(r) else 0.0}
            for h, r in zip(hypotheses, references, strict=True)
        ]
