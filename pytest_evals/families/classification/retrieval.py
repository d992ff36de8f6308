"""``task: retrieval``: GOV.UK Chat's search evaluation, chunk by chunk.

Each case is one question with the chunks that should be found (``expected_chunk_uids``,
with their ``expected_exact_paths`` for people to read) and the search results the
system returned (``actual_search_results``). Per question, precision, recall, F1 and F2
are taken over the union of expected and retrieved chunk uids; a question with nothing
expected and nothing retrieved has no score (0/0), as in their tool.

The suite reports mean (with an interval inside [0, 1]), median, max and population standard
deviation of each score over the questions where it is defined, as their aggregate
does (rounded there to 4 places, kept whole here). A case passes when every per-case
threshold in ``metrics`` holds; by default that is recall 1.0 (every expected chunk
was retrieved).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_evals.families.classification.config import ChatSuiteConfig
from pytest_evals.families.classification.govuk_rows import check_row
from pytest_evals.metrics.label_metrics import f_beta
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import ErrorKind, TargetError
from pytest_evals.model.metric_value import Metric, MetricTree, count, mean_metric
from pytest_evals.stats import intervals as stats
from pytest_evals.suites.suite_config import MetricSpec
from pytest_evals.tasks.task_contract import CaseRef, Task, validate

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

#: Per-question scores, in the order reports list them.
SCORES: tuple[str, ...] = ("precision", "recall", "f1", "f2")

#: The per-case check when a suite lists no metrics: every expected chunk retrieved.
DEFAULT_CASE_METRICS: tuple[tuple[str, float], ...] = (("recall", 1.0),)


class SearchResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    exact_path: str
    chunk_uid: str
    weighted_score: float | None = None
    semantic_score: float | None = None


class RetrievalCase(BaseModel):
    model_config = ConfigDict(extra="ignore")

    question: str
    expected_exact_paths: list[str] = Field(default_factory=list)
    expected_chunk_uids: list[str]
    expected_opensearch_index: str | None = None
    actual_opensearch_index: str | None = None
    actual_search_results: list[SearchResult]


class RetrievalInput(RetrievalCase):
    actual_search_results: list[SearchResult] | None = None  # type: ignore[assignment]


class RetrievalMetricSpec(MetricSpec):
    """A per-case threshold on one of the per-question scores."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(default=None, ge=0.0, le=1.0)

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in SCORES:
            raise ValueError(f"unknown retrieval metric {value!r}; known: {', '.join(SCORES)}")
        return value


class RetrievalConfig(ChatSuiteConfig):
    metrics: list[RetrievalMetricSpec] = Field(default_factory=list)  # type: ignore[assignment]


def chunk_scores(expected: Sequence[str], actual: Sequence[str]) -> dict[str, float | None]:
    """Precision, recall, F1, F2 over the union of expected and retrieved uids (None: 0/0)."""
    want, got = set(expected), set(actual)
    if not want | got:
        return {name: None for name in SCORES}
    tp, fp, fn = len(want & got), len(got - want), len(want - got)
    return {
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": f_beta(tp, fp, fn, 1.0),
        "f2": f_beta(tp, fp, fn, 2.0),
    }


def path_lists(case: RetrievalCase) -> dict[str, list[str]]:
    """True/false positive and false negative pages, by path (people read paths, not uids)."""
    expected = set(case.expected_chunk_uids)
    actual = {r.chunk_uid for r in case.actual_search_results}
    paths = case.expected_exact_paths
    return {
        "true_positives_exact_paths": [r.exact_path for r in case.actual_search_results if r.chunk_uid in expected],
        "false_positives_exact_paths": [r.exact_path for r in case.actual_search_results if r.chunk_uid not in expected],
        # Expected paths pair with expected uids by position, as in their data.
        "false_negatives_exact_paths": [
            paths[i] if i < len(paths) else uid for i, uid in enumerate(case.expected_chunk_uids) if uid not in actual
        ],
    }


def summary_metrics(values: Sequence[float], undefined: int) -> MetricTree:
    """mean (bounded interval: every score is in [0, 1]), median, max, population std:
    GOV.UK Chat's four, plus n."""
    vals = list(values)
    empty = "0/0: no question has this score defined"
    std = stats.std(vals, ddof=0)
    return {
        "mean": mean_metric(vals, empty="no question has this score defined", bounds=(0.0, 1.0)),
        "median": Metric(stats.median(vals), None, len(vals), None if vals else empty, "score"),
        "max": Metric(max(vals) if vals else None, None, len(vals), None if vals else empty, "score"),
        "std": Metric(std, None, len(vals), None if std is not None else empty, "score"),
        "undefined": count(undefined),
    }


class Retrieval(Task[Any]):
    name = "retrieval"
    config_model = RetrievalConfig
    input_fields = ("question", "expected_exact_paths", "expected_chunk_uids", "expected_opensearch_index")

    @property
    def case_metrics(self) -> list[tuple[str, float]]:
        specs = [(m.name, m.threshold) for m in self.config.metrics if m.threshold is not None]
        return specs or list(DEFAULT_CASE_METRICS)

    def validate_case(self, data: Any, ref: CaseRef) -> Any:
        case = validate(RetrievalInput if self.config.generate else RetrievalCase, data, ref.source)
        check_row(self.name, data, ref.source, getattr(self.config, "govuk_layout", False), self.config.generate)
        return case

    async def generate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> Any:
        target = ctx.target(self.suite)
        output = await target.run(case.model_dump(mode="json"))
        where = f"{ref.source}: target {target.description}"
        if not isinstance(output, dict) or "actual_search_results" not in output:
            raise TargetError(f"{where}: expected a JSON object with 'actual_search_results'")
        data = {**case.model_dump(), **{k: v for k, v in output.items() if k.startswith("actual_")}}
        return validate(RetrievalCase, data, where)

    async def evaluate(self, case: Any, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        result = self.new_result(ref)
        actual = [r.chunk_uid for r in case.actual_search_results]
        scores = chunk_scores(case.expected_chunk_uids, actual)
        lists = path_lists(case)
        result.scores = dict(scores)
        row = {
            "question": case.question,
            "expected_exact_paths": case.expected_exact_paths,
            "expected_chunk_uids": case.expected_chunk_uids,
            "actual_search_results": [
                [r.exact_path, r.chunk_uid, r.weighted_score, r.semantic_score] for r in case.actual_search_results
            ],
            "expected_opensearch_index": case.expected_opensearch_index,
            "actual_opensearch_index": case.actual_opensearch_index,
            **{("f1_score" if k == "f1" else "f2_score" if k == "f2" else k): v for k, v in scores.items()},
            **lists,
        }
        result.data = {"scores": scores, "row": row}
        result.details = {**row, "actual_chunk_uids": actual}
        if scores["precision"] is None and scores["recall"] is None:
            result.status = "error"
            result.error_kind = ErrorKind.INPUT
            result.message = "0/0: nothing expected and nothing retrieved, so no score is defined"
            return result
        misses = []
        for name, threshold in self.case_metrics:
            value = scores[name]
            if value is None or value < threshold - 1e-9:
                shown = "undefined (0/0)" if value is None else f"{value:.4f}"
                misses.append(f"{name} {shown} < {threshold:g}")
        if misses:
            result.status = "failed"
            parts = ["; ".join(misses)]
            if lists["false_negatives_exact_paths"]:
                parts.append(f"missed: {', '.join(lists['false_negatives_exact_paths'])}")
            if lists["false_positives_exact_paths"]:
                parts.append(f"not expected: {', '.join(lists['false_positives_exact_paths'])}")
            parts.append(f"question: {case.question}")
            result.message = "\n".join(parts)
        return result

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        ordered = sorted(results, key=lambda r: (r.index, r.case_id))
        scored = [r for r in ordered if isinstance(r.data.get("scores"), dict)]
        tree: MetricTree = {"evaluated": count(len(scored))}
        for name in SCORES:
            values = [float(v) for r in scored if (v := r.data["scores"].get(name)) is not None]
            tree[name] = summary_metrics(values, len(scored) - len(values))
        return tree, {}
