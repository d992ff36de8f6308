"""What every reference-based metric shares: parameters, best-of-references, aggregation.

A metric scores a list of (hypothesis, references) pairs in one call, so model-backed
metrics see a whole batch at once. With several references (seed 002: "the best result
for the model") the ``multi_reference`` parameter chooses how:

- ``library`` (default): the library's own multi-reference computation where it has one
  (NLTK BLEU's clipped counts over all references, sacreBLEU's reference lists,
  rouge-score's ``score_multi``, BERTScore's maximum per component, NLTK METEOR's
  maximum). It is what the library returns when HarpIA hands it the reference list, and
  it agrees with the corpus-level statistic. Metrics whose library has none fall back
  to ``best``.
- ``best``: the hypothesis is scored against each reference alone and the whole result
  of the reference with the best primary value is kept (its index is logged).

One failing instance never fails its batch: when a batch call raises, its pairs are
scored one by one and only the failing ones carry an error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from pytest_evals.model.errors import ErrorKind
from pytest_evals.registry.missing_extras import describe

#: One metric result: named numbers (the gated values) plus optional descriptive extras.
Result = dict[str, Any]


class MetricError(Exception):
    """A metric cannot run with these parameters or this environment (message says how to fix)."""

    #: The bucket an instance erroring this way is counted in (see pytest_evals.model.errors).
    kind: ClassVar[ErrorKind] = ErrorKind.METRIC


class MetricParams(BaseModel):
    """Parameters every metric accepts; each metric adds its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Per-instance pass/fail: a minimum of the primary value (a maximum for
    #: lower-is-better metrics such as TER and edit distance).
    threshold: float | None = None
    #: How several references combine (module docstring); unsupervised metrics ignore it.
    multi_reference: Literal["library", "best"] = "library"


@dataclass(frozen=True)
class Pair:
    """One instance as a metric sees it."""

    hypothesis: str
    references: tuple[str, ...] = ()
    #: The prompt; only the LLM judge reads it.
    input: str = ""


@dataclass(frozen=True)
class Scored:
    """A metric's result for one instance and which reference produced it."""

    result: Result
    #: Index into the instance's references: None for unsupervised metrics and when the
    #: library combined all references.
    reference_index: int | None = None
    #: Why this instance could not be scored (the others of its batch still were).
    error: str | None = None


class ReferenceMetric:
    """Base class: subclasses set the class attributes and implement :meth:`score_single`."""

    id: ClassVar[str]
    params_model: ClassVar[type[MetricParams]] = MetricParams
    #: The numeric keys of a result (and of the aggregated score), in display order.
    keys: ClassVar[tuple[str, ...]]
    #: The key that picks the best reference and that ``threshold`` applies to.
    primary: ClassVar[str]
    higher_is_better: ClassVar[bool] = True
    #: (key, low, high) for each numeric key with a fixed range: its mean's interval
    #: stays inside the range.
    bounds: ClassVar[tuple[tuple[str, float, float], ...]] = ()
    #: Supervised metrics compare with references; unsupervised ones ignore them.
    supervised: ClassVar[bool] = True
    #: Model-backed: the task sends all instances through one session-wide batcher.
    batched: ClassVar[bool] = False
    #: Scored by an LLM through the session's judge (async, one request per instance).
    uses_judge: ClassVar[bool] = False
    #: The aggregated score is a corpus-level statistic, not the mean of instance results.
    corpus_level: ClassVar[bool] = False
    #: Library it wraps and a one-line description (for the docs table and errors).
    library: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, params: MetricParams) -> None:
        self.params = params

    def check_environment(self) -> None:
        """Raise MetricError up front when data the metric needs is missing (e.g. WordNet)."""

    def warm_up(self) -> None:
        """Import the library and load what it needs (a model, WordNet) before timing starts."""
        self.score_single(["warm up call"], ["warm up call"])

    def prepare(self, references: Sequence[Sequence[str]]) -> None:
        """See all of the suite's references before scoring (e.g. for idf weights)."""

    # -- per-instance --------------------------------------------------------------
    @property
    def sentence_level(self) -> bool:
        """False when the metric only has a corpus-level score (no log lines, no threshold)."""
        return True

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        """Score aligned (hypothesis, reference) pairs; unsupervised metrics get ""."""
        raise NotImplementedError

    def score_pairs(self, pairs: Sequence[Pair]) -> list[Scored]:
        """Score instances in one library call; a failing batch is retried pair by pair."""
        if not pairs:
            return []
        try:
            return self._score_batch(pairs)
        except Exception:
            if len(pairs) == 1:
                raise
        out = []
        for pair in pairs:
            try:
                [scored] = self._score_batch([pair])
            except Exception as exc:  # this instance alone errors
                text = str(exc) or type(exc).__name__
                known = isinstance(exc, MetricError)
                scored = Scored({}, error=text if known else describe(exc))
            out.append(scored)
        return out

    def _score_batch(self, pairs: Sequence[Pair]) -> list[Scored]:
        if not self.supervised:
            results = self.score_single([p.hypothesis for p in pairs], [""] * len(pairs))
            return [Scored(r) for r in results]
        for pair in pairs:
            if not pair.references:
                raise MetricError(f"metric {self.id!r} needs at least one reference")
        if self.params.multi_reference == "library" and self.has_library_multi_reference():
            return self.score_multi(pairs)
        return self.score_best(pairs)

    @classmethod
    def has_library_multi_reference(cls) -> bool:
        return cls.score_multi is not ReferenceMetric.score_multi

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        """The library's own multi-reference score of each pair (overridden where one exists)."""
        raise NotImplementedError

    def score_best(self, pairs: Sequence[Pair]) -> list[Scored]:
        """Each pair against each reference alone; the best reference's whole result."""
        hyps: list[str] = []
        refs: list[str] = []
        spans: list[tuple[int, int]] = []
        for pair in pairs:
            start = len(hyps)
            hyps.extend([pair.hypothesis] * len(pair.references))
            refs.extend(pair.references)
            spans.append((start, len(hyps)))
        flat = self.score_single(hyps, refs) if hyps else []
        out = []
        for start, end in spans:
            best = max(range(start, end), key=lambda i: self._goodness(flat[i]))
            out.append(Scored(flat[best], best - start))
        return out

    def _goodness(self, result: Result) -> float:
        value = result.get(self.primary)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return -math.inf
        return float(value) if self.higher_is_better else -float(value)

    def passes(self, result: Result) -> bool | None:
        """Per-instance verdict against ``threshold``; None when no threshold is set."""
        threshold = self.params.threshold
        if threshold is None:
            return None
        value = result.get(self.primary)
        if value is None:
            return False
        return bool(value >= threshold) if self.higher_is_better else bool(value <= threshold)

    # -- aggregation -------------------------------------------------------------------
    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> Result:
        """Corpus-level score over all instances (only for ``corpus_level`` metrics)."""
        raise NotImplementedError

    def mean_score(self, results: Sequence[Result]) -> Result:
        """Mean of each key over the instance results (the aggregate of non-corpus metrics)."""
        score: Result = {}
        for key in self.keys:
            values = [float(r[key]) for r in results if r.get(key) is not None]
            score[key] = sum(values) / len(values) if values else None
        return score

    # -- reporting ---------------------------------------------------------------------
    def resolved_parameters(self) -> dict[str, Any]:
        """Every parameter with its default filled in (what the run really used)."""
        out = self.params.model_dump(mode="json")
        if not self.supervised:
            out.pop("multi_reference", None)
        elif out.get("multi_reference") == "library" and not self.has_library_multi_reference():
            # Said plainly: this library has no multi-reference mode of its own.
            out["multi_reference"] = "best"
        return out

    def notes(self) -> list[str]:
        """Caveats written into the output object (e.g. a model that differs from the library's)."""
        return []


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
