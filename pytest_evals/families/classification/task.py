"""GOV.UK Chat's classification evaluations: jailbreak and output guardrails, the router.

With ``generate: false`` the case carries the component's actual output; with
``generate: true`` the suite's target produces it. A case passes when the actual
classification equals the expected one; the suite's aggregates are the usual
confusion-matrix metrics with intervals.
"""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar, TypedDict, cast

from pydantic import BaseModel, ConfigDict, StrictBool

from pytest_evals.families.classification.config import ChatSuiteConfig
from pytest_evals.families.classification.govuk_rows import check_row
from pytest_evals.families.classification.label_set import VERDICT_WORD
from pytest_evals.families.classification.label_task import (
    LabelTask,
    first_model,
    generation_model,
    in_order,
)
from pytest_evals.metrics.label_metrics import binary_metrics, multiclass_metrics
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError, TargetError
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.tasks.task_contract import CaseRef, validate

#: The words GOV.UK Chat's data and targets use for a positive verdict.
POSITIVE_WORDS = frozenset({"jailbreak", "triggered"})
_TRUE = {"true", "yes", "1", *POSITIVE_WORDS}
_FALSE = {"false", "no", "0", "no-jailbreak", "not triggered", "none"}


class BinaryData(TypedDict):
    """``CaseResult.data`` of the jailbreak guardrails task: what its aggregation, the
    regression gates' label rules and the report's row read (a plain JSON object)."""

    expected: bool
    actual: bool
    #: The model that classified, when the data or the target names it.
    model: str | None
    #: The case as GOV.UK Chat's results.csv row, with its ``classification`` column.
    row: dict[str, Any]


class GuardrailsData(BinaryData):
    """``CaseResult.data`` of the output guardrails task: the binary verdict plus one
    ``[expected, actual]`` pair per guardrail named in the case."""

    guardrails: dict[str, list[bool]]


class RouterData(TypedDict):
    """``CaseResult.data`` of the question router: expected and chosen route labels."""

    expected: str
    actual: str
    model: str | None
    row: dict[str, Any]


def binary_data(result: CaseResult) -> BinaryData:
    """A binary task's result data as the task wrote it (typed; no copy, no check)."""
    return cast(BinaryData, result.data)


def guardrails_data(result: CaseResult) -> GuardrailsData:
    return cast(GuardrailsData, result.data)


def router_data(result: CaseResult) -> RouterData:
    return cast(RouterData, result.data)


def as_bool(value: Any, what: str) -> bool:
    """Read a target's verdict: a JSON bool, or text such as "true"/"no"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().strip(".").lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    raise TargetError(f"{what}: expected true/false, got {value!r}")


def reply_bool(output: Any, field: str, what: str) -> bool:
    """The verdict of a target's output: its ``field``, or a model's reply text.

    A model rarely answers with the verdict word alone ("No, I'm sorry..."): its reply
    is read as HaluEval reads a judge, the first whole word yes/no/true/false deciding;
    a reply with none is the target's ERROR quoting it. A value the target returned in
    ``field`` itself must be a verdict (a callable's "perhaps" is an error)."""
    value = _target_field(output, field)
    if not (isinstance(output, dict) and field not in output and isinstance(value, str)):
        return as_bool(value, what)
    with contextlib.suppress(TargetError):
        return as_bool(value, what)
    first = VERDICT_WORD.search(value)
    if first is None:
        raise TargetError(f"{what} replied {value!r}, which has no yes/no (or true/false) word")
    return first.group(1).casefold() in ("yes", "true")


def _target_field(output: Any, field: str) -> Any:
    """A target returns the field itself, {field: value}, or a model's {"text": value}."""
    if isinstance(output, dict):
        if field in output:
            return output[field]
        if "text" in output:
            return output["text"]
        raise TargetError(f"target output has no field {field!r}; got keys {sorted(output)}")
    return output


class _Case(BaseModel):
    # Extra fields are allowed and ignored (seed 001). Outcomes are StrictBool: pydantic's
    # lax mode turns "yes", "off", 0 and 1 into booleans, so a mislabelled or quoted value
    # would be scored as a guess instead of reported as the data error it is.
    model_config = ConfigDict(extra="ignore")


def binary_classification(expected: bool, actual: bool) -> str:
    """GOV.UK Chat's ``classification`` column of results.csv."""
    if expected:
        return "true_positive" if actual else "false_negative"
    return "false_positive" if actual else "true_negative"


class JailbreakCase(_Case):
    question: str
    expected_outcome: StrictBool
    actual_outcome: StrictBool
    #: The model that classified (GOV.UK Chat's generated.jsonl carries it).
    model: str | None = None


class JailbreakInput(_Case):
    question: str
    expected_outcome: StrictBool
    actual_outcome: StrictBool | None = None
    model: str | None = None


class _GovukLabelTask(LabelTask):
    """GOV.UK Chat's label tasks: pydantic case models, their config fields."""

    config_model = ChatSuiteConfig
    case_model: ClassVar[type[BaseModel]]
    input_model: ClassVar[type[BaseModel]]
    positive_labels = POSITIVE_WORDS

    def validate_case(self, data: Any, ref: CaseRef) -> Any:
        model = self.input_model if self.config.generate else self.case_model
        case = validate(model, data, ref.source)
        check_row(self.name, data, ref.source, getattr(self.config, "govuk_layout", False), self.config.generate)
        return case

    def generated_record(self, case: Any, ref: CaseRef) -> Any:
        record = super().generated_record(case, ref)
        # Only a known generation model is recorded; an unknown one is left out, not null.
        if isinstance(record, dict) and record.get("model") is None:
            record.pop("model", None)
        return record


class JailbreakGuardrails(_GovukLabelTask):
    name = "jailbreak_guardrails"
    case_model = JailbreakCase
    input_model = JailbreakInput
    input_fields = ("question", "expected_outcome")

    def labels_of(self, case: Any) -> tuple[bool, bool]:
        return case.expected_outcome, case.actual_outcome

    def target_label(self, output: Any, where: str) -> bool:
        return reply_bool(output, "actual_outcome", where)

    def completed(self, case: Any, label: Any, output: Any) -> JailbreakCase:
        return JailbreakCase(question=case.question, expected_outcome=case.expected_outcome, actual_outcome=label,
                             model=generation_model(output, self.config))

    def miss(self, case: Any, expected: Any, actual: Any) -> str:
        kind = "false positive (flagged a non-jailbreak)" if actual else "false negative (missed a jailbreak)"
        return f"expected_outcome={expected}, actual_outcome={actual}: {kind}\nquestion: {case.question}"

    def details(self, case: Any) -> dict[str, Any]:
        return {"question": case.question, "expected_outcome": case.expected_outcome,
                "actual_outcome": case.actual_outcome}

    def row(self, case: Any, expected: Any, actual: Any) -> dict[str, Any]:
        return {**case.model_dump(), "classification": binary_classification(expected, actual)}

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        pairs = [(bool(d["expected"]), bool(d["actual"])) for d in map(binary_data, results)]
        model = first_model(in_order(results))
        return binary_metrics(pairs), ({"model": model} if model else {})


class OutputGuardrailsCase(_Case):
    #: GOV.UK Chat's current data names the checked text ``message``.
    message: str | None = None
    question: str | None = None
    llm_answer: str | None = None
    expected_triggered: StrictBool
    actual_triggered: StrictBool
    expected_guardrails: dict[str, StrictBool] | None = None
    actual_guardrails: dict[str, StrictBool] | None = None
    model: str | None = None


class OutputGuardrailsInput(_Case):
    message: str | None = None
    question: str | None = None
    llm_answer: str | None = None
    model: str | None = None
    expected_triggered: StrictBool
    actual_triggered: StrictBool | None = None
    expected_guardrails: dict[str, StrictBool] | None = None
    actual_guardrails: dict[str, StrictBool] | None = None


class OutputGuardrails(_GovukLabelTask):
    """Whether any output guardrail fired, plus one binary problem per guardrail."""

    name = "output_guardrails"
    case_model = OutputGuardrailsCase
    input_model = OutputGuardrailsInput
    # The checked text (``message``, or the question and its answer) and the verdicts
    # expected of the guardrails; ``actual_*`` and ``model`` are the system's.
    input_fields = ("message", "question", "llm_answer", "expected_triggered", "expected_guardrails")

    def labels_of(self, case: Any) -> tuple[bool, bool]:
        return case.expected_triggered, case.actual_triggered

    def target_label(self, output: Any, where: str) -> tuple[bool, Any]:
        # The verdict and, when the target gives them, the per-guardrail verdicts.
        if isinstance(output, dict) and "actual_triggered" in output:
            triggered = as_bool(output["actual_triggered"], where)
            guardrails = output.get("actual_guardrails")
        else:
            triggered = reply_bool(output, "actual_triggered", where)
            guardrails = None
        if guardrails is not None and not (
            isinstance(guardrails, dict) and all(isinstance(v, bool) for v in guardrails.values())
        ):
            raise TargetError(f"{where}: actual_guardrails must map guardrail names to true/false")
        return triggered, guardrails

    def completed(self, case: Any, label: Any, output: Any) -> OutputGuardrailsCase:
        triggered, guardrails = label
        data = {**case.model_dump(), "actual_triggered": triggered, "actual_guardrails": guardrails,
                "model": generation_model(output, self.config)}
        return OutputGuardrailsCase.model_validate(data)

    def extra_data(self, case: Any, ref: CaseRef) -> dict[str, Any]:
        expected_g = case.expected_guardrails or {}
        actual_g = case.actual_guardrails or {}
        if expected_g and case.actual_guardrails is None:
            # Raised at evaluation, as before: the case is an input ERROR naming the field.
            raise CaseInputError(f"{ref.source}: field 'actual_guardrails' is required when "
                                 "'expected_guardrails' is given")
        names = sorted(set(expected_g) | set(actual_g))
        return {"guardrails": {name: [bool(expected_g.get(name, False)), bool(actual_g.get(name, False))]
                               for name in names}}

    def extra_misses(self, case: Any, data: dict[str, Any]) -> list[str]:
        return [f"guardrail {name!r}: expected {e}, actual {a}" for name, (e, a) in data["guardrails"].items()
                if e != a]

    def miss(self, case: Any, expected: Any, actual: Any) -> str:
        return f"expected_triggered={expected}, actual_triggered={actual}"

    def row(self, case: Any, expected: Any, actual: Any) -> dict[str, Any]:
        row = {k: v for k, v in case.model_dump().items() if v is not None or k == "model"}
        row["classification"] = binary_classification(expected, actual)
        return row

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        data = [guardrails_data(r) for r in results]
        tree = binary_metrics([(bool(d["expected"]), bool(d["actual"])) for d in data])
        names = sorted({name for d in data for name in d.get("guardrails", {})})
        per: MetricTree = {}
        for name in names:
            pairs = [tuple(d["guardrails"].get(name, [False, False])) for d in data]
            per[name] = binary_metrics([(bool(e), bool(a)) for e, a in pairs])
        if per:
            tree["per_guardrail"] = per
        model = first_model(in_order(results))
        return tree, ({"model": model} if model else {})


class RouterCase(_Case):
    question: str
    expected_outcome: str
    actual_outcome: str
    #: The router's own confidence and canned answer, as GOV.UK Chat records them.
    confidence_score: float | None = None
    answer: str | None = None
    model: str | None = None


class RouterInput(_Case):
    question: str
    expected_outcome: str
    actual_outcome: str | None = None
    confidence_score: float | None = None
    answer: str | None = None
    model: str | None = None


class QuestionRouter(_GovukLabelTask):
    """Multiclass: which route (label) the router chose for a question."""

    name = "question_router"
    case_model = RouterCase
    input_model = RouterInput
    input_fields = ("question", "expected_outcome")

    def labels_of(self, case: Any) -> tuple[str, str]:
        return case.expected_outcome, case.actual_outcome

    def target_label(self, output: Any, where: str) -> str:
        label = _target_field(output, "actual_outcome")
        if not isinstance(label, str) or not label.strip():
            raise TargetError(f"{where} returned {label!r}, expected a label")
        return label.strip()

    def completed(self, case: Any, label: Any, output: Any) -> RouterCase:
        extra = output if isinstance(output, dict) else {}
        return RouterCase(question=case.question, expected_outcome=case.expected_outcome, actual_outcome=label,
                          confidence_score=extra.get("confidence_score"), answer=extra.get("answer"),
                          model=generation_model(output, self.config))

    def miss(self, case: Any, expected: Any, actual: Any) -> str:
        return f"expected {expected!r}, routed to {actual!r}\nquestion: {case.question}"

    def details(self, case: Any) -> dict[str, Any]:
        return {"question": case.question, "expected_outcome": case.expected_outcome,
                "actual_outcome": case.actual_outcome, "confidence_score": case.confidence_score,
                "answer": case.answer}

    def row(self, case: Any, expected: Any, actual: Any) -> dict[str, Any]:
        return dict(case.model_dump())

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        ordered = in_order(results)
        tree, tables = multiclass_metrics([(str(d["expected"]), str(d["actual"])) for d in map(router_data, ordered)])
        tables["miscategorised_cases"] = miscategorised_cases(ordered)
        tables["model"] = first_model(ordered)
        return tree, tables


def miscategorised_cases(results: list[CaseResult]) -> list[dict[str, Any]]:
    """The router's misses, in case order, with GOV.UK Chat's column names.

    Their table puts the expected label under ``predicted_classification`` and the
    router's label under ``actual_classification``; the same columns are kept so their
    spreadsheets read it, next to the unambiguous ``expected_outcome``/``actual_outcome``.
    """
    rows = []
    for r in results:
        data = router_data(r)
        expected, actual = data["expected"], data["actual"]
        if expected == actual:
            continue
        row = data.get("row") or {}
        rows.append({
            "question": row.get("question"),
            "predicted_classification": expected,
            "actual_classification": actual,
            "confidence_score": row.get("confidence_score"),
            "answer": row.get("answer"),
            "case_id": r.case_id,
            "expected_outcome": expected,
            "actual_outcome": actual,
        })
    return rows
