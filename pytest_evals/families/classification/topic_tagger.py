"""``task: topic_tagger``: GOV.UK Chat's primary/secondary topic tagging.

A case holds the expected primary (and optional secondary) topic and what the tagger
chose. Rows the tagger could not tag (``status: error``) are counted apart: they are
neither right nor wrong, and they do not enter the other counts, as in their tool.

Counts over the successfully tagged rows (GOV.UK Chat's aggregate, with a Clopper-Pearson
interval on each as a share of the evaluated rows):

- correct_primary_and_secondary: both topics right, each in its place;
- correct_topics_any_order: the same set of topics;
- primary_matched_with_primary: the true primary is the tagged primary;
- primary_matched_with_either: the true primary is one of the tagged topics;
- matched_any_topic: the two sets share a topic.

A case passes when both topics are right in any order (``pass_when`` picks another).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator

from pytest_evals.families.classification.config import ChatSuiteConfig
from pytest_evals.families.classification.govuk_rows import check_row
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import ErrorKind, TargetError
from pytest_evals.model.metric_value import MetricTree, count, proportion
from pytest_evals.tasks.task_contract import CaseRef, Task, validate

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

#: Check name -> GOV.UK Chat's aggregate label.
CHECKS: dict[str, str] = {
    "correct_primary_and_secondary": "Correct Primary and Secondary",
    "correct_topics_any_order": "Correct Topics (any order)",
    "primary_matched_with_primary": "Matched True primary with primary",
    "primary_matched_with_either": "Matched True primary with either topic",
    "matched_any_topic": "Matched Any Topic",
}

PassRule = Literal[
    "correct_primary_and_secondary",
    "correct_topics_any_order",
    "primary_matched_with_primary",
    "primary_matched_with_either",
    "matched_any_topic",
]


class TopicCase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: str
    status: Literal["success", "error"] = "success"
    expected_primary_topic: str
    actual_primary_topic: str | None = None
    expected_secondary_topic: str | None = None
    actual_secondary_topic: str | None = None
    error_message: str | None = None
    model: str | None = None

    @field_validator("status", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class TopicTaggerConfig(ChatSuiteConfig):
    #: Which check decides whether a single case passes.
    pass_when: PassRule = "correct_topics_any_order"


def topic_checks(case: TopicCase) -> dict[str, bool]:
    expected = {t for t in (case.expected_primary_topic, case.expected_secondary_topic) if t is not None}
    actual = {t for t in (case.actual_primary_topic, case.actual_secondary_topic) if t is not None}
    return {
        "correct_primary_and_secondary": case.expected_primary_topic == case.actual_primary_topic
        and case.expected_secondary_topic == case.actual_secondary_topic,
        "correct_topics_any_order": expected == actual,
        "primary_matched_with_primary": case.expected_primary_topic == case.actual_primary_topic,
        "primary_matched_with_either": case.expected_primary_topic in actual,
        "matched_any_topic": bool(expected & actual),
    }


class TopicTagger(Task[TopicCase]):
    name = "topic_tagger"
    config_model = TopicTaggerConfig
    input_fields = ("question", "expected_primary_topic", "expected_secondary_topic")

    def validate_case(self, data: Any, ref: CaseRef) -> TopicCase:
        case: TopicCase = validate(TopicCase, data, ref.source)
        check_row(self.name, data, ref.source, getattr(self.config, "govuk_layout", False), self.config.generate)
        return case

    async def generate(self, case: TopicCase, ref: CaseRef, ctx: EvalContext) -> TopicCase:
        from pytest_evals.families.classification.label_task import generation_model

        target = ctx.target(self.suite)
        output = await target.run(case.model_dump(mode="json"))
        where = f"{ref.source}: target {target.description}"
        if not isinstance(output, dict):
            raise TargetError(f"{where}: expected a JSON object with 'actual_primary_topic'")
        fields = ("status", "actual_primary_topic", "actual_secondary_topic", "error_message")
        data = {**case.model_dump(), **{k: output[k] for k in fields if k in output}}
        data["model"] = generation_model(output, self.config)
        checked: TopicCase = validate(TopicCase, data, where)
        return checked

    async def evaluate(self, case: TopicCase, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        result = self.new_result(ref)
        row = case.model_dump()
        if case.status == "error":
            result.data = {"tagged": False, "model": case.model, "row": row}
            result.details = row
            result.status = "error"
            result.error_kind = ErrorKind.TARGET
            result.message = f"the tagger reported an error: {case.error_message or '(no message)'}"
            return result
        checks = topic_checks(case)
        result.data = {"tagged": True, "checks": checks, "model": case.model, "row": {**row, **checks}}
        result.scores = {name: float(ok) for name, ok in checks.items()}
        result.details = {**row, **checks}
        rule = self.config.pass_when  # type: ignore[attr-defined]
        if not checks[rule]:
            result.status = "failed"
            result.message = (
                f"{rule} is false: expected {case.expected_primary_topic!r} / {case.expected_secondary_topic!r}, "
                f"tagged {case.actual_primary_topic!r} / {case.actual_secondary_topic!r}\nquestion: {case.question}"
            )
        return result

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        ordered = sorted(results, key=lambda r: (r.index, r.case_id))
        tagged = [r for r in ordered if r.data.get("tagged")]
        errored = [r for r in ordered if r.data.get("tagged") is False]
        tree: MetricTree = {"evaluated": count(len(tagged)), "errored": count(len(errored))}
        for name in CHECKS:
            hits = sum(1 for r in tagged if r.data["checks"][name])
            tree[name] = {"count": count(hits), "rate": proportion(hits, len(tagged), "no row was tagged")}
        model = next((str(r.data["model"]) for r in tagged if r.data.get("model")), None)
        return tree, ({"model": model} if model else {})
