"""DeepEval metric classes inside rag_answers suites.

A metric entry may name any DeepEval metric class, or any importable class built on
DeepEval's ``BaseMetric`` (GOV.UK Chat's own, for example)::

    metrics:
      - {name: faithfulness, deepeval: "deepeval.metrics:FaithfulnessMetric", threshold: 1.0,
         options: {penalize_ambiguous_claims: true}}
      - {name: toxicity, deepeval: "deepeval.metrics:ToxicityMetric", threshold: 0.0}

Each case and run gets a fresh metric object (DeepEval metrics keep their last case's
state on the object) built as ``Class(threshold=..., model=<our client>, **options)`` and
measured with ``a_measure`` on an ``LLMTestCase`` built as GOV.UK Chat builds theirs
(``input`` the question, ``actual_output`` the answer, ``expected_output`` the ideal
answer, ``retrieval_context`` one text per chunk, ``metadata["structured_contexts"]``
the chunks). Its model is our client (:mod:`.deepeval_model`); its score, reason, success
and intermediate steps (truths, claims, verdicts, statements, opinions) land in the
case's evidence.

GOV.UK-shaped suites (:mod:`.govuk_shape`) score our metric names with the classes their
configs use when DeepEval is installed (``deepeval_metrics: auto``; ``never`` keeps ours,
``always`` asks for them in any suite): DeepEval's faithfulness (with their
``penalize_ambiguous_claims``), answer relevancy and bias, and their own classes for the
other five when their package (``govuk_chat_evaluation``) is importable; ours otherwise.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_evals.families.rag.deepeval_model import deepeval_version, make_model, quiet_deepeval
from pytest_evals.families.rag.govuk_context import govuk_chunks
from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.model.errors import EvalsError, JudgeError

if TYPE_CHECKING:
    from pytest_evals.families.rag.cases import StructuredContext
    from pytest_evals.families.rag.config import RagConfig, RagMetricSpec
    from pytest_evals.families.rag.inputs import MetricInputs
    from pytest_evals.families.rag.judge_block import ResolvedJudge
    from pytest_evals.llm.judge import Judge

#: DeepEval's test-case fields -> the case fields that fill them.
PARAM_FIELDS: dict[str, tuple[str, ...]] = {
    "input": ("question",),
    "actual_output": ("llm_answer",),
    "expected_output": ("ideal_answer",),
    "retrieval_context": ("structured_contexts",),
    "context": ("structured_contexts",),
}

#: The case fields GOV.UK's ``to_llm_test_case`` puts in the test case's metadata.
METADATA_FIELDS: tuple[str, ...] = ("expected_opensearch_index", "actual_opensearch_index", "model")

_THEIRS = "govuk_chat_evaluation.rag_answers.custom_deepeval.metrics"

#: Options a GOV.UK metric class is built with, from the suite's configuration.
OptionsFactory = Callable[["RagConfig"], dict[str, Any]]


def _faithfulness_options(config: RagConfig) -> dict[str, Any]:
    return {"penalize_ambiguous_claims": config.penalize_ambiguous_claims}


def _factual_options(mode: str) -> OptionsFactory:
    def build(config: RagConfig) -> dict[str, Any]:
        module = importlib.import_module(_THEIRS)
        return {"mode": getattr(module.FactualPrecisionRecallMode, mode)}

    return build


def _no_options(config: RagConfig) -> dict[str, Any]:
    return {}


#: Our metric name -> (the class GOV.UK Chat's config builds for it, how its options are made).
GOVUK_CLASSES: dict[str, tuple[str, OptionsFactory]] = {
    "faithfulness": ("deepeval.metrics:FaithfulnessMetric", _faithfulness_options),
    "relevance": ("deepeval.metrics:AnswerRelevancyMetric", _no_options),
    "bias": ("deepeval.metrics:BiasMetric", _no_options),
    "factual_precision": (f"{_THEIRS}:FactualPrecisionRecall", _factual_options("PRECISION")),
    "factual_correctness": (f"{_THEIRS}:FactualPrecisionRecall", _factual_options("PRECISION")),
    "factual_recall": (f"{_THEIRS}:FactualPrecisionRecall", _factual_options("RECALL")),
    "absence_of_factual_contradictions": (f"{_THEIRS}:AbsenceOfFactualContradictions", _no_options),
    "context_relevancy": (f"{_THEIRS}:ContextRelevancyMetric", _no_options),
    "coherence": (f"{_THEIRS}:CoherenceMetric", _no_options),
}


def importable(module: str) -> bool:
    """The top package can be found (nothing is imported)."""
    try:
        return importlib.util.find_spec(module.split(".", 1)[0]) is not None
    except (ImportError, ValueError):
        return False


def deepeval_installed() -> bool:
    return importable("deepeval")


def load_class(path: str) -> type:
    """``package.module:Class`` -> the class, checked to be built on DeepEval's BaseMetric.

    Raises ``ValueError`` with what went wrong (no DeepEval, no module, no class...)."""
    if not deepeval_installed():
        raise ValueError("DeepEval is not installed (pip install 'pytest-evals[deepeval]')")
    quiet_deepeval()
    from deepeval.metrics import BaseMetric

    module_name, _, attr = path.partition(":")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            found = getattr(found, part)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    except AttributeError:
        raise ValueError(f"{module_name!r} has no {attr!r}") from None
    if not (inspect.isclass(found) and issubclass(found, BaseMetric)):
        raise ValueError(f"{path} is not a class built on DeepEval's BaseMetric")
    return found


def required_fields(cls: type) -> tuple[str, ...]:
    """The case fields a metric class needs (its ``_required_params``)."""
    params = getattr(cls, "_required_params", None)
    fields: list[str] = ["question"]
    if isinstance(params, (list, tuple)):
        for param in params:
            value = str(getattr(param, "value", param))
            for field in PARAM_FIELDS.get(value, ()):
                if field not in fields:
                    fields.append(field)
    return tuple(fields)


def effective_specs(config: RagConfig, govuk: bool, offline: bool) -> list[RagMetricSpec]:
    """The suite's metrics, with GOV.UK's classes filled in where their mapping applies.

    Offline (no endpoint) nothing is mapped: our offline rules score our names."""
    mode = config.deepeval_metrics
    if offline or mode == "never" or (mode == "auto" and not govuk) or not deepeval_installed():
        return list(config.metrics)
    out: list[RagMetricSpec] = []
    for spec in config.metrics:
        mapped = GOVUK_CLASSES.get(spec.name) if spec.deepeval is None else None
        if mapped is not None and importable(mapped[0].split(":", 1)[0]):
            path, options = mapped
            spec = spec.model_copy(update={"deepeval": path, "options": {**options(config), **spec.options}})
        out.append(spec)
    return out


def mapping_settings(config: RagConfig, specs: Sequence[RagMetricSpec]) -> dict[str, Any]:
    """What :func:`effective_specs` chose, for the run's settings: ``mapping`` is ``govuk``
    when any of our names is scored by the class GOV.UK's config builds, ``ours`` when
    none is (DeepEval missing, or ``deepeval_metrics: never``)."""
    mapped = {s.name: s.deepeval for s in specs
              if s.deepeval and not any(c.name == s.name and c.deepeval for c in config.metrics)}
    return {
        "mode": config.deepeval_metrics,
        "mapping": "govuk" if mapped else "ours",
        "deepeval": deepeval_version(),
        "classes": mapped,
    }


def deepeval_system(resolved: ResolvedJudge) -> str | None:
    """The system message sent with a DeepEval metric's prompts: only a suite's own wording
    (DeepEval's prompts carry their instructions themselves, and GOV.UK's run sends none)."""
    if resolved.persona in ("system_prompt", "domain") or resolved.criteria or resolved.examples:
        return resolved.system_message()
    return None


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (list, tuple)):
        return [_dump(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _dump(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


#: Intermediate steps a DeepEval metric keeps on itself, shown as the case's evidence.
STEPS: tuple[str, ...] = ("truths", "claims", "verdicts", "statements", "opinions", "score_breakdown")


def _counts(metric: Any) -> dict[str, int]:
    verdicts = getattr(metric, "verdicts", None)
    if not isinstance(verdicts, (list, tuple)):
        return {}
    counts: dict[str, int] = {}
    for item in verdicts:
        word = str(getattr(item, "verdict", "")).strip().lower()
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts


class DeepEvalCaseJudge:
    """Measures one case with DeepEval metric classes, asking through our judge."""

    def __init__(
        self,
        judge: Judge,
        inputs: MetricInputs,
        contexts: Sequence[StructuredContext],
        case_id: str,
        judges: Mapping[str, ResolvedJudge],
        default_model: str,
        record: Mapping[str, Any] | None = None,
    ) -> None:
        #: The case's other fields, as GOV.UK's test case carries them in its metadata
        #: (``expected_opensearch_index``, ``actual_opensearch_index``, ``model``).
        self.record = dict(record or {})
        self.judge = judge
        self.inputs = inputs
        self.contexts = list(contexts)
        self.case_id = case_id
        self.judges = dict(judges)
        self.default_model = default_model

    def test_case(self) -> Any:
        from deepeval.test_case import LLMTestCase

        chunks = self.inputs.judge_contexts if self.inputs.judge_contexts is not None else self.inputs.contexts
        return LLMTestCase(
            input=self.inputs.question,
            actual_output=self.inputs.answer,
            expected_output=self.inputs.ideal_answer or None,
            retrieval_context=list(chunks),
            name=self.case_id,
            metadata={"structured_contexts": govuk_chunks(self.contexts),
                      **{k: self.record.get(k) for k in METADATA_FIELDS}},
        )

    def _system(self, metric: str) -> str | None:
        resolved = self.judges.get(metric)
        return None if resolved is None else deepeval_system(resolved)

    async def run(self, metric: str, spec: RagMetricSpec, repeat: int) -> RunOutcome:
        assert spec.deepeval is not None
        resolved = self.judges.get(metric)
        model_name = (resolved.model if resolved else spec.model) or self.default_model
        temperature = resolved.temperature if resolved else spec.temperature
        try:
            cls = load_class(spec.deepeval)
        except ValueError as exc:
            raise JudgeError(f"{metric}: metric class {spec.deepeval}: {exc}") from None
        model = make_model(self.judge, model=model_name, temperature=temperature, repeat=repeat,
                           system=self._system(metric))
        try:
            instance = cls(threshold=spec.effective_threshold, model=model, **spec.options)
        except TypeError as exc:
            raise JudgeError(f"{metric}: {spec.deepeval}(threshold, model, **options): {exc}") from None
        measure = instance.a_measure
        kwargs = {"_show_indicator": False} if "_show_indicator" in inspect.signature(measure).parameters else {}
        try:
            score = await measure(self.test_case(), **kwargs)
        except (EvalsError, asyncio.CancelledError):
            # ours (a judge error, a failed request, a dry run's skip) pass through as they are
            raise
        except Exception as exc:  # DeepEval's own failures: a judge error naming the class
            raise JudgeError(f"{metric}: {spec.deepeval} failed: {type(exc).__name__}: {exc}") from None
        if score is None:
            score = getattr(instance, "score", None)
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not math.isfinite(float(score)):
            raise JudgeError(f"{metric}: {spec.deepeval} gave no score ({score!r})")
        steps = {name: _dump(getattr(instance, name)) for name in STEPS if getattr(instance, name, None) is not None}
        evidence = {
            **steps,
            "deepeval": {
                "class": spec.deepeval,
                "version": deepeval_version(),
                "score": float(score),
                "success": getattr(instance, "success", None),
                "threshold": getattr(instance, "threshold", None),
                "strict_mode": getattr(instance, "strict_mode", None),
                "requests": len(model.calls),
                "cached_requests": sum(1 for c in model.calls if c["cached"]),
            },
        }
        outcome = RunOutcome(float(score), str(getattr(instance, "reason", "") or ""), evidence, _counts(instance))
        outcome.cached = bool(model.calls) and all(c["cached"] for c in model.calls)
        outcome.model = model_name
        return outcome
