"""The contract every evaluation kind (task) implements.

A task turns a suite into case references at collection (cheap: no parsing of the
payload), loads and validates one case on demand, evaluates it (async, on the shared
engine loop, so model calls of many cases overlap), and aggregates the light results
of all its cases into a metric tree on the controller.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from pytest_evals.model.case_ref import CaseRef
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.suites.suite_config import Suite, SuiteConfig

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

__all__ = ["CaseRef", "Contribution", "Task", "validate", "validation_message"]

CaseT = TypeVar("CaseT")
#: One case's share of a ratio metric: (numerator, denominator), metric = sum / sum.
Contribution = tuple[float, float]


def validation_message(source: str, exc: ValidationError) -> str:
    """A pydantic error as one line per field, prefixed with the file and line."""
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(case)"
        parts.append(f"field {loc!r}: {err['msg']}")
    return f"{source}: " + "; ".join(parts)


def validate(model: type[BaseModel], data: Any, source: str) -> Any:
    if not isinstance(data, dict):
        raise CaseInputError(f"{source}: a case must be a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise CaseInputError(validation_message(source, exc)) from None


class Task(Generic[CaseT]):
    #: The ``task:`` value in a suite file.
    name: ClassVar[str]
    #: The suite configuration model (a task adds its own fields by subclassing).
    config_model: ClassVar[type[SuiteConfig]] = SuiteConfig
    #: The model of one complete case, when a plain model validates it whatever the
    #: suite's settings: ``@evals_cases(..., task=NAME)`` hands a test validated cases
    #: with it (None: the test gets the JSON object as read).
    case_model: ClassVar[type[BaseModel] | None] = None
    #: Words that mean the positive class in this task's results' ``expected`` and
    #: ``actual``/``predicted`` labels, besides yes/true/1 (lower case): the regression
    #: gates' precision, recall and F-beta rules read the labels with them.
    positive_labels: ClassVar[frozenset[str]] = frozenset()
    #: The fields of a case's record that are its input (what the system under test is
    #: given and what it is judged against, e.g. the question and the expected label),
    #: hashed into each result's ``fingerprint``. None: the whole record but its
    #: ``output_fields``. A task whose records carry the system's outputs
    #: (``generate: false`` data) names one or the other, so that a new output is not
    #: taken for a new case.
    input_fields: ClassVar[tuple[str, ...] | None] = None
    #: Fields of a record holding the system's outputs, left out of the fingerprint
    #: when ``input_fields`` is None.
    output_fields: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, suite: Suite) -> None:
        self.suite = suite
        self.config = suite.config

    # -- collection -------------------------------------------------------------
    def case_refs(self) -> Iterator[CaseRef]:
        """Default: one case per line of the suite's JSONL ``input_path``."""
        from pytest_evals.suites.jsonl_cases import check_input_file, jsonl_refs

        if not self.config.input_path:
            raise CaseInputError(f"{self.suite.path}: field 'input_path' is required for task {self.name!r}")
        path = self.suite.resolve(self.config.input_path)
        if not path.exists():
            from pytest_evals.suites.jsonl_cases import display_path

            places = " and ".join(str(p) for p in self.suite.tried(self.config.input_path))
            raise CaseInputError(f"{display_path(path)}: input file not found (input_path "
                                 f"{self.config.input_path!r} of {self.suite.path.name}; looked in {places})")
        check_input_file(path, self.suite.path)
        yield from jsonl_refs(path)

    def read_case(self, ref: CaseRef) -> Any:
        """One case's record as stored (default: its line of the JSONL ``input_path``)."""
        from pytest_evals.suites.jsonl_cases import read_json_line

        return read_json_line(ref)

    def load_case(self, ref: CaseRef) -> CaseT:
        """Read and validate one case (raise CaseInputError naming file, line and field);
        the input's fingerprint is kept on ``ref`` for the case's result."""
        data = self.read_case(ref)
        ref.fingerprint = self.input_fingerprint(data)
        return self.validate_case(data, ref)

    def input_fingerprint(self, record: Any) -> str | None:
        """A short hash of ``record``'s input fields (``input_fields``, or all but the
        ``output_fields``); None when there is nothing to hash. Override it when the
        input is not a plain part of the record (e.g. keys spelt several ways)."""
        from pytest_evals.tasks.input_fingerprint import fingerprint, input_part

        return fingerprint(input_part(record, self.input_fields, self.output_fields))

    def validate_case(self, data: Any, ref: CaseRef) -> CaseT:
        raise NotImplementedError

    # -- evaluation ---------------------------------------------------------------
    #: Cases usually complete without waiting once the judge's answers are cached (no
    #: target, no gather): try each on pytest's thread first (see inline_eval.py). Code
    #: that waits must call ``inline.require_io()`` first.
    inline_cached: bool = False
    #: With an endpoint configured, a case's time is spent waiting on it (a remote judge,
    #: no target, nothing CPU-heavy here): under ``-n`` a run of only such suites runs in
    #: one process (controller/io_bound_run.py).
    endpoint_bound: bool = False

    def needs_engine(self) -> bool:
        """True when evaluating a case may wait on I/O (models, targets): prefetch it."""
        return bool(self.config.generate)

    async def generate(self, case: CaseT, ref: CaseRef, ctx: EvalContext) -> CaseT:
        """``generate: true``: run the target and return the case completed with its output."""
        raise NotImplementedError(f"task {self.name!r} does not support generate: true")

    async def evaluate(self, case: CaseT, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        raise NotImplementedError

    def generated_record(self, case: CaseT, ref: CaseRef) -> Any:
        """What ``generated.jsonl`` stores for a generated case: the input line as written
        (its id and extra fields included, so a re-scored run keeps its ids) updated with
        the generated fields."""
        dump = getattr(case, "model_dump", None)
        generated = dump(mode="json", by_alias=True) if dump else case
        original: Any = None
        if isinstance(ref.locator, tuple) and len(ref.locator) == 3:
            from pytest_evals.suites.jsonl_cases import read_json_line

            original = read_json_line(ref)
        if isinstance(original, dict) and isinstance(generated, dict):
            return {**original, **generated}
        return generated

    def new_result(self, ref: CaseRef) -> CaseResult:
        return CaseResult(suite=self.suite.nodeid, task=self.name, case_id=ref.case_id, source=ref.source,
                          fingerprint=ref.fingerprint)

    def run_settings(self) -> dict[str, Any]:
        """What besides its inputs decides this suite's results, as plain JSON: recorded
        in the summary (``settings``), and a regression baseline recorded with other
        values is reported and fails the regression gates (unless
        ``--evals-baseline-allow-changes``). Default: the suite's ``target`` when it
        generates, and the model and temperature its metrics name. A family whose
        configuration names other models (a policy, raters) adds them."""
        out: dict[str, Any] = {}
        if self.config.generate and self.config.target is not None:
            out["target"] = self.config.target
        models: dict[str, Any] = {}
        for m in self.config.metrics:
            chosen = {k: getattr(m, k, None) for k in ("model", "temperature")}
            if any(v is not None for v in chosen.values()):
                models[m.name] = {k: v for k, v in chosen.items() if v is not None}
        if models:
            out["metrics"] = models
        return out

    # -- aggregation (controller) ---------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        """Metric tree and extra tables (confusion matrices...) over the scored cases."""
        return {}, {}

    def paired_contribution(
        self, data: Mapping[str, Any], scores: Mapping[str, Any], status: str, metric: str
    ) -> Contribution | None:
        """One case's contribution to ``metric`` for the paired regression tests, from
        its result's ``data``, ``scores`` and ``status`` (what a baseline keeps): None
        when the case has no say in it. Override it to make a metric the built-in rules
        do not know gate-able (e.g. ``per_task.qa.accuracy``); return ``NotImplemented``
        for the metrics left to the built-in rules (accuracy, pass_rate, precision,
        recall, specificity, F-beta, ``<score>.mean``), as this default does for all."""
        return NotImplemented

    def suite_warnings(self, results: list[CaseResult], metrics: MetricTree) -> list[str]:
        """Notes for the suite's summary that do not fail it (e.g. "28 of 40 judge
        replies were unparseable"): shown in the terminal, the JSON and the HTML summary.
        ``results`` and ``metrics`` are what :meth:`aggregate` got and returned."""
        return []
