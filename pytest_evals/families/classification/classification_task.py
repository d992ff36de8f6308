"""``task: classification``: expected vs actual labels, the labels named by the suite.

```yaml
task: classification
input_path: data/escalation.jsonl      # {"question": ..., "expected": "escalate", "actual": "answer"}
labels: [escalate, answer, refuse]
positive_label: escalate               # binary: required; multiclass: adds its precision, recall...
thresholds:
  per_class: {escalate: {recall: {min: 0.8}}}
```

A case passes when its actual label is its expected one. The fields that hold them are
``expected`` and ``actual`` unless ``expected_field``/``actual_field`` (or a ``fields:``
mapping) name others; a value that is not one of ``labels`` is the case's ERROR naming the
line and the field. With ``generate: true`` the target's output is the label, a mapping
with the actual field, or a model's reply naming one label. The aggregates are in
:mod:`.label_aggregates`; GOV.UK Chat's tasks (:mod:`.task`) share the implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import Field, ValidationInfo, field_validator, model_validator

from pytest_evals.families.classification.label_aggregates import (
    label_aggregates,
    label_contribution,
    regression_problem,
)
from pytest_evals.families.classification.label_set import LabelSet, key_of, kind_of, show
from pytest_evals.families.classification.label_task import (
    LabelTask,
    first_model,
    generation_model,
    in_order,
)
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError, SuiteConfigError, TargetError
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.suites.suite_config import SuiteConfig
from pytest_evals.tasks.task_contract import CaseRef, Contribution

#: The keys of a ``fields:`` mapping.
FIELD_ROLES = ("expected", "actual", "input")


class ClassificationConfig(SuiteConfig):
    #: The labels, in the order reports list them (text, true/false or whole numbers).
    labels: list[Any]
    #: The label whose precision, recall and F-scores are reported at the top level (and
    #: what a false positive or negative is); required with two labels.
    positive_label: Any = Field(default=None, validate_default=True)
    #: Where a case keeps its expected and actual labels, and the text shown with a miss.
    expected_field: str = "expected"
    actual_field: str = "actual"
    input_field: str = "question"
    #: The same three as one mapping: ``fields: {expected: gold, actual: predicted}``.
    fields: dict[str, str] = Field(default_factory=dict)
    #: An F-beta of your own besides F1 and F2 (``fbeta``, ``macro_fbeta``, ...).
    beta: float | None = Field(default=None, gt=0)

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: list[Any]) -> list[Any]:
        from pytest_evals.families.classification.label_set import declared_problem

        problem = declared_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("positive_label")
    @classmethod
    def _positive(cls, value: Any, info: ValidationInfo) -> Any:
        labels = info.data.get("labels")
        if labels is None:
            return value  # the labels' own error says why
        found = LabelSet(tuple(labels)).find(value) if value is not None else None
        if value is not None and found is None:
            raise ValueError(f"{show(value)} "
                             f"({kind_of(value)}) is not one of the labels {LabelSet(tuple(labels)).listed()}")
        if value is None and len(labels) == 2:
            if True in labels and False in labels and all(isinstance(x, bool) for x in labels):
                return True
            raise ValueError(f"with two labels, name the positive one (the class a false positive claims), "
                             f"e.g. positive_label: {labels[0]}")
        return found

    @field_validator("fields")
    @classmethod
    def _fields(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        defaults = {"expected": "expected", "actual": "actual", "input": "question"}
        for role, name in value.items():
            if role not in FIELD_ROLES:
                raise ValueError(f"unknown key {role!r}; the keys are {', '.join(FIELD_ROLES)}")
            if not isinstance(name, str) or not name:
                raise ValueError(f"{role}: expected a field name, got {name!r}")
            given = info.data.get(f"{role}_field")
            if given is not None and given not in (defaults[role], name):
                raise ValueError(f"{role}: {name!r} contradicts {role}_field: {given!r}; give one of them")
        return value

    @model_validator(mode="after")
    def _distinct(self) -> ClassificationConfig:
        if self.expected_key == self.actual_key:
            raise ValueError(f"the expected and actual labels cannot both be field {self.expected_key!r}")
        # A regression gate on an average over classes has no paired test: said here,
        # where the suite is read, rather than as a failed gate after the run.
        from pytest_evals.regression.drop_gates import parse_regression_gates

        try:
            gates = parse_regression_gates(self.thresholds)
        except SuiteConfigError:
            return self  # the regression plugin reports malformed gates
        positive = key_of(self.positive_label) if self.positive_label is not None else None
        for gate in gates:
            problem = regression_problem(gate.metric, positive)
            if problem:
                raise ValueError(f"thresholds.{gate.metric}.{gate.op}: {problem}")
        return self

    @property
    def expected_key(self) -> str:
        return self.fields.get("expected", self.expected_field)

    @property
    def actual_key(self) -> str:
        return self.fields.get("actual", self.actual_field)

    @property
    def input_key(self) -> str:
        return self.fields.get("input", self.input_field)


@dataclass
class LabelledCase:
    """One case: its record as written and its label keys (actual None until generated)."""

    record: dict[str, Any]
    expected: str
    actual: str | None


class Classification(LabelTask):
    name = "classification"
    config_model = ClassificationConfig

    def __init__(self, suite: Any) -> None:
        super().__init__(suite)
        config: ClassificationConfig = suite.config
        self.cfg = config
        self.label_set = LabelSet(tuple(config.labels))
        self.keys = self.label_set.keys
        self.positive = key_of(config.positive_label) if config.positive_label is not None else None
        self.binary = len(self.keys) == 2

    # -- reading --------------------------------------------------------------------------
    def input_fingerprint(self, record: Any) -> str | None:
        from pytest_evals.tasks.input_fingerprint import fingerprint, input_part

        return fingerprint(input_part(record, None, {self.cfg.actual_key, "model"}))

    def validate_case(self, data: Any, ref: CaseRef) -> LabelledCase:
        if not isinstance(data, dict):
            raise CaseInputError(f"{ref.source}: a case must be a JSON object, got {type(data).__name__}")
        problems: list[str] = []
        labels: list[str | None] = []
        for key, required in ((self.cfg.expected_key, True), (self.cfg.actual_key, not self.config.generate)):
            if key not in data:
                labels.append(None)
                if required:
                    role = "expected" if key == self.cfg.expected_key else "actual"
                    problems.append(f"field {key!r}: Field required (the {role} label; "
                                    f"{role}_field names another field)")
                continue
            try:
                labels.append(self.label_set.from_data(data[key], key))
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise CaseInputError(f"{ref.source}: " + "; ".join(problems))
        expected, actual = labels
        assert expected is not None
        return LabelledCase(dict(data), expected, actual)

    # -- the label task's parts -------------------------------------------------------------
    def labels_of(self, case: LabelledCase) -> tuple[str, str | None]:
        return case.expected, case.actual

    def target_label(self, output: Any, where: str) -> str:
        value = output
        if isinstance(output, dict):
            if self.cfg.actual_key in output:
                value = output[self.cfg.actual_key]
            elif "text" in output:
                value = output["text"]
            else:
                raise TargetError(f"{where}: the output has no field {self.cfg.actual_key!r} (nor a model's "
                                  f"'text'); got keys {sorted(output)}")
        try:
            return self.label_set.from_reply(value)
        except ValueError as exc:
            raise TargetError(f"{where} {exc}") from None

    def completed(self, case: LabelledCase, label: Any, output: Any) -> LabelledCase:
        record = dict(case.record)
        record[self.cfg.actual_key] = self.label_set.labels[self.keys.index(label)]
        model = generation_model(output, self.config)
        if model is not None:
            record["model"] = model
        return LabelledCase(record, case.expected, label)

    def generated_record(self, case: LabelledCase, ref: CaseRef) -> Any:
        return dict(case.record)

    def target_input(self, case: LabelledCase) -> dict[str, Any]:
        return dict(case.record)

    def details(self, case: LabelledCase) -> dict[str, Any]:
        return dict(case.record)

    def model_of(self, case: LabelledCase) -> str | None:
        model = case.record.get("model")
        return model if isinstance(model, str) else None

    def _shown(self, key: str) -> str:
        return show(self.label_set.labels[self.keys.index(key)])

    def miss(self, case: LabelledCase, expected: Any, actual: Any) -> str:
        text = f"expected {self._shown(expected)}, got {self._shown(actual)}"
        if self.binary and self.positive is not None:
            text = ("false positive: " if actual == self.positive else "false negative: ") + text
        shown = case.record.get(self.cfg.input_key)
        if isinstance(shown, str):
            text += f"\n{self.cfg.input_key}: {shown}"
        return text

    # -- aggregation --------------------------------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        ordered = in_order(results)
        pairs = [(str(r.data["expected"]), str(r.data["actual"])) for r in ordered]
        tree, tables = label_aggregates(pairs, self.keys, self.positive, self.cfg.beta)
        model = first_model(ordered)
        if model:
            tables["model"] = model
        return tree, tables

    def paired_contribution(
        self, data: Mapping[str, Any], scores: Mapping[str, Any], status: str, metric: str
    ) -> Contribution | None:
        got: Contribution | None = label_contribution(data, metric, self.positive, self.cfg.beta)
        return got
