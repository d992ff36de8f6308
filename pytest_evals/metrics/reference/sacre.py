"""sacreBLEU's BLEU, chrF and TER: sentence_score per instance, corpus_score for the score.

The corpus score hands sacreBLEU every reference of every instance (padded with None
where instances have fewer), so it is exactly what ``sacrebleu`` itself reports for the
set, with its reproducibility signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from pytest_evals.metrics.reference.reference_metric import (
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
    Scored,
)

#: sacreBLEU tokenizers that need no downloaded model (spm/flores fetch one at run time).
SACRE_TOKENIZERS = Literal["none", "13a", "intl", "char", "zh", "ja-mecab", "ko-mecab"]


class SacreParams(MetricParams):
    #: false: corpus score only (no per-instance results, no log lines, no threshold).
    sentence_level: bool = True

    @model_validator(mode="after")
    def _threshold_needs_sentences(self) -> SacreParams:
        if self.threshold is not None and not self.sentence_level:
            raise ValueError("threshold applies to instance results; it cannot be used with sentence_level: false")
        return self


class SacreBleuParams(SacreParams):
    tokenize: SACRE_TOKENIZERS = "13a"
    lowercase: bool = False
    smooth_method: Literal["none", "floor", "add-k", "exp"] = "exp"
    smooth_value: float | None = None
    max_ngram_order: int = Field(default=4, ge=1)


class ChrfParams(SacreParams):
    char_order: int = Field(default=6, ge=1)
    #: 2 gives chrF++.
    word_order: int = Field(default=0, ge=0)
    beta: int = Field(default=2, ge=0)
    lowercase: bool = False
    whitespace: bool = False
    eps_smoothing: bool = False


class TerParams(SacreParams):
    normalized: bool = False
    no_punct: bool = False
    asian_support: bool = False
    case_sensitive: bool = False


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Per-instance reference lists -> sacreBLEU's streams (None where an instance has fewer)."""
    width = max((len(r) for r in references), default=0)
    return [[refs[i] if i < len(refs) else None for refs in references] for i in range(width)]


class _Sacre(ReferenceMetric):
    corpus_level = True
    params: SacreParams

    def _metric(self, sentence: bool) -> Any:
        raise NotImplementedError

    @property
    def sentence_level(self) -> bool:
        return self.params.sentence_level

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        metric = self._metric(sentence=True)
        return [
            {self.primary: float(metric.sentence_score(hyp, [ref]).score)}
            for hyp, ref in zip(hypotheses, references, strict=True)
        ]

    def score_multi(self, pairs: Sequence[Pair]) -> list[Scored]:
        # sacreBLEU's own multi-reference sentence score (BLEU pools the references' n-gram
        # counts, chrF keeps the best reference, TER the fewest edits).
        metric = self._metric(sentence=True)
        return [Scored({self.primary: float(metric.sentence_score(p.hypothesis, list(p.references)).score)}) for p in pairs]

    def corpus_score(self, hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> Result:
        if not hypotheses:
            return {self.primary: None}
        metric = self._metric(sentence=False)
        score = metric.corpus_score(list(hypotheses), reference_streams(references))
        out: Result = {self.primary: float(score.score)}
        out.update(self._extras(score))
        out["signature"] = str(metric.get_signature())
        return out

    def _extras(self, score: Any) -> Result:
        return {}


class SacreBleu(_Sacre):
    id = "sacrebleu"
    params_model = SacreBleuParams
    keys = ("bleu",)
    primary = "bleu"
    bounds = (("bleu", 0.0, 100.0),)
    library = "sacrebleu.metrics.BLEU"
    description = "BLEU (sacreBLEU, 0-100)"
    params: SacreBleuParams

    def _metric(self, sentence: bool) -> Any:
        from sacrebleu.metrics import BLEU

        p = self.params
        return BLEU(
            lowercase=p.lowercase,
            tokenize=p.tokenize,
            smooth_method=p.smooth_method,
            smooth_value=p.smooth_value,
            max_ngram_order=p.max_ngram_order,
            # What sacrebleu.sentence_bleu does: n-gram orders longer than the sentence are ignored.
            effective_order=sentence,
        )

    def _extras(self, score: Any) -> Result:
        return {
            "precisions": [float(p) for p in score.precisions],
            "bp": float(score.bp),
            "sys_len": int(score.sys_len),
            "ref_len": int(score.ref_len),
        }


class SacreChrf(_Sacre):
    id = "chrf"
    params_model = ChrfParams
    keys = ("chrf",)
    primary = "chrf"
    bounds = (("chrf", 0.0, 100.0),)
    library = "sacrebleu.metrics.CHRF"
    description = "chrF / chrF++ (sacreBLEU, 0-100)"
    params: ChrfParams

    def _metric(self, sentence: bool) -> Any:
        from sacrebleu.metrics import CHRF

        p = self.params
        return CHRF(
            char_order=p.char_order,
            word_order=p.word_order,
            beta=p.beta,
            lowercase=p.lowercase,
            whitespace=p.whitespace,
            eps_smoothing=p.eps_smoothing,
        )


class SacreTer(_Sacre):
    id = "ter"
    params_model = TerParams
    keys = ("ter",)
    primary = "ter"
    higher_is_better = False
    library = "sacrebleu.metrics.TER"
    description = "Translation edit rate (sacreBLEU, 0-100+, lower is better)"
    params: TerParams

    def _metric(self, sentence: bool) -> Any:
        from sacrebleu.metrics import TER

        p = self.params
        return TER(
            normalized=p.normalized,
            no_punct=p.no_punct,
            asian_support=p.asian_support,
            case_sensitive=p.case_sensitive,
        )

    def _extras(self, score: Any) -> Result:
        return {"num_edits": float(score.num_edits), "ref_length": float(score.ref_length)}
