"""The one implementation of the tasks that compare an expected label with an actual one.

A case passes when its actual label equals the expected one; the suite's aggregates are
the confusion-matrix metrics of :mod:`pytest_evals.metrics.label_metrics`. The generic
``classification`` task (labels named by the suite) and GOV.UK Chat's guardrail and
router tasks are specialisations of :class:`LabelTask`: each says where a case keeps its
two labels, how a target's output becomes a label, what a miss is called and how the
labels are aggregated; running the target, scoring and the result's data are shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.tasks.task_contract import CaseRef, Task

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext


def generation_model(output: Any, config: Any) -> str | None:
    """The model that produced a generated output: the target's ``model`` field (GOV.UK
    Chat's rake tasks report it), else the suite's ``claude_generation_model``."""
    if isinstance(output, dict) and isinstance(output.get("model"), str):
        return str(output["model"])
    return getattr(config, "claude_generation_model", None)


class LabelTask(Task[Any]):
    """Expected label vs actual label, one case at a time.

    ``CaseResult.data`` is ``{"expected", "actual", "model", ...}`` (plus the task's
    ``row`` when it has one): what aggregation, the regression gates and ``pytest-evals
    compare`` read back.
    """

    # -- what a specialisation says ----------------------------------------------------
    def labels_of(self, case: Any) -> tuple[Any, Any]:
        """The case's (expected, actual) labels, as compared and stored."""
        raise NotImplementedError

    def target_label(self, output: Any, where: str) -> Any:
        """The actual label in a target's output (raise TargetError naming ``where``)."""
        raise NotImplementedError

    def completed(self, case: Any, label: Any, output: Any) -> Any:
        """The case with the label its target produced."""
        raise NotImplementedError

    def miss(self, case: Any, expected: Any, actual: Any) -> str:
        """A failed case's message: what was expected, what came, in the task's words."""
        raise NotImplementedError

    def details(self, case: Any) -> dict[str, Any]:
        """The case as the reports show it."""
        dump = getattr(case, "model_dump", None)
        return dict(dump()) if dump else dict(case)

    def row(self, case: Any, expected: Any, actual: Any) -> dict[str, Any] | None:
        """The case as a results.csv row in the task's own tool's shape (None: no row)."""
        return None

    def model_of(self, case: Any) -> str | None:
        return getattr(case, "model", None)

    def target_input(self, case: Any) -> dict[str, Any]:
        dump = getattr(case, "model_dump", None)
        return dict(dump(mode="json")) if dump else dict(case)

    # -- shared ---------------------------------------------------------------------------
    async def generate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> Any:
        target = ctx.target(self.suite)
        output = await target.run(self.target_input(case))
        label = self.target_label(output, f"{ref.source}: target {target.description}")
        return self.completed(case, label, output)

    def extra_data(self, case: Any, ref: CaseRef) -> dict[str, Any]:
        """Fields of the result's data besides the labels (before ``model``)."""
        return {}

    def extra_misses(self, case: Any, data: dict[str, Any]) -> list[str]:
        """Further reasons the case fails besides its label (e.g. one guardrail's)."""
        return []

    async def evaluate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        result = self.new_result(ref)
        expected, actual = self.labels_of(case)
        data: dict[str, Any] = {"expected": expected, "actual": actual, **self.extra_data(case, ref),
                                "model": self.model_of(case)}
        row = self.row(case, expected, actual)
        if row is not None:
            data["row"] = row
        result.data = data
        misses = ([] if expected == actual else [self.miss(case, expected, actual)]) + self.extra_misses(case, data)
        result.scores = {"correct": float(not misses)}
        result.details = self.details(case)
        if misses:
            result.status = "failed"
            result.message = "; ".join(misses)
        return result


def first_model(results: list[CaseResult]) -> str | None:
    """The model an aggregate names: the first case's (a suite runs one model)."""
    return next((str(r.data["model"]) for r in results if r.data.get("model")), None)


def in_order(results: list[CaseResult]) -> list[CaseResult]:
    return sorted(results, key=lambda r: (r.index, r.case_id))
