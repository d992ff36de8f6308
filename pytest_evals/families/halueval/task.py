"""``task: halueval``: the HaluEval hallucination benchmark, one test per item.

Each paired item shows the judge either its right or its hallucinated output (a seeded
per-item choice); each general item shows its response. The judge answers Yes
(hallucinated) or No; the item passes when that matches the truth. The suite's
metrics are accuracy, precision, recall and F1 per task and overall, with the trivial
baselines on the same items. See docs/halueval.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from pydantic import Field, field_validator, model_validator

from pytest_evals.families.halueval import sampling
from pytest_evals.families.halueval.items import TASK_TYPES, HaluEvalItem, TaskType
from pytest_evals.families.halueval.layout import GeneralVersion, data_file, require_file
from pytest_evals.families.halueval.metrics import Denominator, Outcome, aggregate
from pytest_evals.families.halueval.notices import WARNINGS_KEY, suite_warnings
from pytest_evals.families.halueval.offline import OfflineRule
from pytest_evals.families.halueval.parsing import ParseMode, Verdict, parse_judgement
from pytest_evals.families.halueval.prompts import REPORT_DOCUMENT_CHARS, PromptSet, PromptStyle
from pytest_evals.families.halueval.records import to_item
from pytest_evals.llm.call_errors import ContextLengthError
from pytest_evals.llm.truncation import TruncatePolicy, requested_tokens
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import (
    CaseInputError,
    InfrastructureError,
    JudgeTruncatedError,
    error_kind,
)
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.suites.suite_config import SuiteConfig
from pytest_evals.tasks.task_contract import CaseRef, Task

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

DEFAULT_DATA_DIR = "data/halueval"


class _ShownData(TypedDict):
    task_type: str
    #: What the judge was shown: "hallucinated" or "right" (paired), "response" (general).
    shown: str
    expected: Verdict
    shown_len: int
    #: Length of the pair's other output; None for a general item.
    other_len: int | None
    #: The judge's verdict; None when it gave none or its request failed.
    predicted: Verdict | None


class HaluEvalData(_ShownData, total=False):
    """``CaseResult.data`` of a HaluEval item: what aggregation (:class:`Outcome`),
    ``pytest-evals compare --group-by task_type`` and the report read."""

    unparseable: bool
    ambiguous: bool
    #: The judge request failed after its retries (an ERROR aggregation still sees).
    errored: bool
    #: The temperature the judge was asked at (absent offline).
    temperature: float | None


def halueval_data(result: CaseResult) -> HaluEvalData:
    """A HaluEval result's data as the task wrote it (typed; no copy, no check)."""
    return cast(HaluEvalData, result.data)


class HaluEvalConfig(SuiteConfig):
    #: The official files (relative to the suite file). Unset: the first
    #: ``data/halueval`` found in the suite's directory or one of its parents.
    data_dir: str = DEFAULT_DATA_DIR
    #: A Hub dataset with one configuration per task, or a save_to_disk directory.
    hf_dataset: str | None = None
    hf_split: str = "data"
    tasks: list[TaskType] = Field(default_factory=lambda: list(TASK_TYPES))
    general_version: GeneralVersion = "current"
    prompts: PromptStyle = "seed"
    with_knowledge: bool = False
    #: Total items (split over tasks in proportion to their sizes) or sizes per task.
    sample: int | dict[TaskType, int] | None = None
    seed: int = 0
    #: first (seed, default), strict (ours) or official (evaluate.py's rule exactly).
    parse: ParseMode = "first"
    #: judged: accuracy over the items the judge answered; all: items whose request
    #: failed after its retries count as wrong (the official script's accuracy).
    accuracy_denominator: Denominator = "judged"
    #: The judge model (default: the session's model) and its sampling settings. An
    #: explicit --evals-temperature on the command line wins over ``temperature``.
    model: str | None = None
    temperature: float = 0.0
    #: Unset: --evals-max-tokens, else 16 (judge_request.py).
    max_tokens: int | None = None
    #: A prompt longer than the model's context: none (send it), longest (cut the
    #: longest shown field, never the judged text) or skip; ``context_tokens`` sets the
    #: limit (default: the server's, or the first refusal's). See docs/local-models.md.
    truncate: TruncatePolicy = "none"
    context_tokens: int | None = Field(default=None, gt=0)
    #: Ask for {"verdict": "Yes" | "No"} where the endpoint enforces a JSON schema.
    structured: bool = False
    #: The judge without a model endpoint: lexical grounding or embedding similarity.
    offline_judge: OfflineRule = "lexical"

    @field_validator("tasks")
    @classmethod
    def _tasks(cls, value: list[TaskType]) -> list[TaskType]:
        if not value:
            raise ValueError("name at least one of qa, dialogue, summarization, general")
        if len(set(value)) != len(value):
            raise ValueError("a task is listed twice")
        return value

    @field_validator("sample")
    @classmethod
    def _sample(cls, value: int | dict[str, int] | None) -> int | dict[str, int] | None:
        sizes = value.values() if isinstance(value, dict) else [value] if value is not None else []
        if any(v < 0 for v in sizes):
            raise ValueError("sample sizes must be >= 0")
        return value

    @model_validator(mode="after")
    def _structured_plain_official(self) -> HaluEvalConfig:
        if self.structured and self.prompts == "official":
            raise ValueError("structured: true changes the request: not with prompts: official")
        return self

    @model_validator(mode="after")
    def _sample_tasks(self) -> HaluEvalConfig:
        if isinstance(self.sample, dict):
            extra = [t for t in self.sample if t not in self.tasks]
            if extra:
                raise ValueError(f"sample names tasks that are not in 'tasks': {', '.join(extra)}")
        return self


class HaluEval(Task[HaluEvalItem]):
    name = "halueval"
    #: The word results of hallucination detectors use for the positive class.
    positive_labels = frozenset({"hallucinated"})
    config_model = HaluEvalConfig
    config: HaluEvalConfig

    def run_settings(self) -> dict[str, Any]:
        # The judge is the system under test: its model, sampling, prompts and parsing.
        fields = ("model", "temperature", "max_tokens", "prompts", "with_knowledge", "parse", "offline_judge",
                  "accuracy_denominator", "truncate", "context_tokens", "structured")
        return {**super().run_settings(), "judge": self.config.model_dump(mode="json", include=set(fields))}

    # -- where the data is ----------------------------------------------------------
    @cached_property
    def data_dir(self) -> Path:
        if "data_dir" in self.config.model_fields_set:
            # Resolved so sources read "/data/halueval/qa_data.json:17", not "a/../../b".
            return self.suite.resolve(self.config.data_dir).resolve()
        start = self.suite.path.parent.resolve()
        for folder in (start, *start.parents):
            candidate = folder / DEFAULT_DATA_DIR
            if candidate.is_dir():
                return candidate
        return start / DEFAULT_DATA_DIR

    @cached_property
    def hf_name(self) -> str | None:
        name = self.config.hf_dataset
        if name is None:
            return None
        local = self.suite.resolve(name)
        # A Hub name ("owner/dataset") is kept unless it names an existing directory.
        return str(local) if local.exists() else name

    @cached_property
    def prompt_set(self) -> PromptSet:
        return PromptSet.load(
            self.config.prompts, self.config.with_knowledge, self.data_dir, list(self.config.tasks)
        )

    # -- collection ---------------------------------------------------------------
    def _task_rows(self, task: str) -> tuple[list[tuple[str, Any]], Callable[[str, Any], CaseRef]]:
        """(case id, row) of every record of one task, and how a kept row becomes a ref:
        refs are made only for the records a sample keeps."""
        if self.hf_name is not None:
            from pytest_evals.families.halueval.hf import hf_refs

            refs = hf_refs(self.hf_name, task, self.config.hf_split)
            return [(ref.case_id, ref) for ref in refs], lambda _case_id, ref: ref
        from pytest_evals.families.halueval.index import file_rows, row_ref

        path = require_file(data_file(self.data_dir, task, self.config.general_version), self.data_dir)
        return file_rows(path, task, self.config.general_version), partial(row_ref, path, task)

    def case_refs(self) -> Iterator[CaseRef]:
        if self.config.prompts == "official":
            # Missing instruction files are a suite problem: report it once, at collection.
            _ = self.prompt_set
        found = {t: self._task_rows(t) for t in self.config.tasks}
        strata: dict[str, list[tuple[str, Any]]] = {t: rows for t, (rows, _make) in found.items()}
        ids: dict[str, list[str]] = {t: [case_id for case_id, _row in rows] for t, rows in strata.items()}
        sample: int | dict[str, int] | None = (
            {str(k): v for k, v in self.config.sample.items()}
            if isinstance(self.config.sample, dict)
            else self.config.sample
        )
        chosen = sampling.stratified(strata, ids, sample, self.config.seed)
        for task in self.config.tasks:
            make = found[task][1]
            for case_id, row in chosen[task]:
                yield make(case_id, row)

    def read_case(self, ref: CaseRef) -> Any:
        # A HaluEval record is input through and through (knowledge, question, the
        # answer to judge, its label): the default fingerprint hashes all of it, and
        # validate_case adds which answer of a pair is shown (see there).
        if ref.locator and ref.locator[0] == "hf":
            from pytest_evals.families.halueval.hf import read_row

            return read_row(ref)
        from pytest_evals.families.halueval.index import read_record

        return read_record(ref)

    def validate_case(self, data: Any, ref: CaseRef) -> HaluEvalItem:
        task = ref.meta.get("task_type")
        if task not in TASK_TYPES:
            raise CaseInputError(f"{ref.source}: unknown HaluEval task type {task!r}")
        item = to_item(data, task, ref.case_id, ref.source)
        if item.paired and ref.fingerprint is not None:
            # The seed picks the right or the hallucinated answer of a pair, so the text
            # judged and the expected verdict: two runs (or two variants with other
            # seeds) showing different answers did not judge the same case.
            from pytest_evals.tasks.input_fingerprint import fingerprint

            ref.fingerprint = fingerprint({"record": ref.fingerprint, "shown": self.shown(item)[0]})
        return item

    # -- evaluation -----------------------------------------------------------------
    inline_cached = True
    endpoint_bound = True

    def needs_engine(self) -> bool:
        return True

    def shown(self, item: HaluEvalItem) -> tuple[str, str, Verdict, int | None]:
        """(shown kind, shown text, expected verdict, length of the other output)."""
        if not item.paired:
            return "response", item.response or "", item.label or "no", None
        right, wrong = item.right_answer or "", item.hallucinated_answer or ""
        # A variant's item is ``id[variant]``: the choice is the item's (docs/halueval.md:
        # the same item shows the same output in every run with that seed), so variants
        # with one seed judge the same answers and their pairs compare like with like.
        suffix = f"[{self.suite.variant}]" if self.suite.variant else None
        item_id = item.id[: -len(suffix)] if suffix and item.id.endswith(suffix) else item.id
        if sampling.shows_hallucinated(item_id, self.config.seed):
            return "hallucinated", wrong, "yes", len(right)
        return "right", right, "no", len(wrong)

    async def evaluate(self, case: HaluEvalItem, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        kind, output, expected, other_len = self.shown(case)
        details: dict[str, Any] = {}
        if ctx.offline:
            from pytest_evals.families.halueval.offline import JUDGE_NAMES, offline_verdict

            rule = self.config.offline_judge
            encoder = ctx.embedder if rule == "embedding" else None
            verdict = await offline_verdict(case, output, rule, encoder)
            judge = JUDGE_NAMES[rule] + (f" ({encoder.name})" if encoder is not None else "")
            reply = verdict.reply
            # No prompt was sent: show the judged text and what the baseline measured.
            details = {
                "shown_output": output,
                "offline_score": round(verdict.score, 4),
                "offline_threshold": verdict.threshold,
            }
        else:
            from pytest_evals.families.halueval import judge_request as jr

            settings = ctx.llm.settings
            # None lets the client send the session's value: the command line's, when given.
            temperature = None if settings.temperature_explicit else self.config.temperature
            long_document = bool(case.context) and len(case.context or "") > REPORT_DOCUMENT_CHARS
            # The prompt as sent, rendered once for the report and the request alike
            # (a long document is shown cut in the report only).
            sent = None if long_document else self.prompt_set.messages(case, output)
            details = {
                "prompt": self.prompt_set.messages(case, output, REPORT_DOCUMENT_CHARS) if sent is None else sent,
                "temperature": settings.temperature if temperature is None else temperature,
            }
            c = self.config
            request = jr.JudgeRequest(c.model, temperature, c.max_tokens, c.truncate, c.context_tokens,
                                      c.structured, c.parse, c.with_knowledge, c.prompts == "official")
            try:
                answer = await jr.ask(request, self.prompt_set, case, output, ctx.llm, sent)
            except (InfrastructureError, JudgeTruncatedError) as exc:
                # Still an ERROR, but one aggregation can see: accuracy_denominator: all
                # counts it as wrong, as the official script's accuracy does.
                if isinstance(exc, ContextLengthError):
                    details["context_length"] = {"prompt_tokens": exc.prompt_tokens, "limit": exc.limit,
                                                 "requested_tokens": requested_tokens(exc.cause)}
                return self._errored(ref, case, kind, output, expected, other_len, exc, details)
            resp = answer.response
            if answer.truncation is not None:
                details["truncation"] = answer.truncation.to_json()
            if answer.format != "text":
                details["response_format"] = answer.format
            reply, judge = resp.text, resp.model or self.config.model or ctx.llm.model
        judgement = parse_judgement(reply, self.config.parse)
        correct = judgement.correct(expected)

        result = self.new_result(ref)
        result.status = "passed" if correct else "failed"
        result.scores = {"correct": 1.0 if correct else 0.0}
        data = self._outcome_data(case, kind, output, expected, other_len, judgement.predicted)
        data["unparseable"], data["ambiguous"] = judgement.unparseable, judgement.ambiguous
        if "temperature" in details:
            data["temperature"] = details["temperature"]
        result.data = dict(data)
        if "truncation" in details:
            result.data["truncation"] = details["truncation"]
        result.details = {
            "judge": judge,
            "shown": kind,
            **details,
            "reply": reply,
            "expected": expected.capitalize(),
            "predicted": (judgement.predicted or "none").capitalize(),
        }
        if not correct:
            said = judgement.predicted or "neither/both Yes and No"
            what = "the hallucinated output" if kind == "hallucinated" else (
                "the right output" if kind == "right" else f"a response labelled {expected!r}"
            )
            note = " (unparseable reply)" if judgement.unparseable else ""
            result.message = f"shown {what}: expected {expected!r}, judge said {said!r}{note}"
        return result

    @staticmethod
    def _outcome_data(
        case: HaluEvalItem, kind: str, output: str, expected: Verdict, other_len: int | None,
        predicted: Verdict | None,
    ) -> HaluEvalData:
        return HaluEvalData(task_type=case.task_type, shown=kind, expected=expected, shown_len=len(output),
                            other_len=other_len, predicted=predicted)

    def _errored(
        self,
        ref: CaseRef,
        case: HaluEvalItem,
        kind: str,
        output: str,
        expected: Verdict,
        other_len: int | None,
        exc: InfrastructureError | JudgeTruncatedError,
        details: dict[str, Any],
    ) -> CaseResult:
        result = self.new_result(ref)
        result.status, result.error_kind, result.message = "error", error_kind(exc), str(exc)
        data = self._outcome_data(case, kind, output, expected, other_len, None)
        data["errored"] = True
        if "temperature" in details:
            data["temperature"] = details["temperature"]
        result.data = dict(data)
        if "context_length" in details:
            result.data["context_length"] = details["context_length"]
        result.details = {"shown": kind, **details, "expected": expected.capitalize()}
        return result

    # -- aggregation ------------------------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        """Metrics, report tables and, under ``tables["warnings"]``, the suite's warnings."""
        outcomes = [
            Outcome.from_data(halueval_data(r))
            for r in results
            if "expected" in r.data
            and (r.status in ("passed", "failed") or (r.status == "error" and r.data.get("errored")))
        ]
        tree, tables = aggregate(outcomes, self.config.accuracy_denominator)
        tables[WARNINGS_KEY] = suite_warnings(
            tree,
            parse=self.config.parse,
            denominator=self.config.accuracy_denominator,
            temperature_note=self._temperature_note(results),
        )
        return tree, tables

    def suite_warnings(self, results: list[CaseResult], metrics: MetricTree) -> list[str]:
        """The same notes as ``tables["warnings"]``, for the summary's warning lines."""
        return suite_warnings(
            metrics,
            parse=self.config.parse,
            denominator=self.config.accuracy_denominator,
            temperature_note=self._temperature_note(results),
        )

    def _temperature_note(self, results: list[CaseResult]) -> str | None:
        """Said when the suite file's own temperature gave way to --evals-temperature."""
        if "temperature" not in self.config.model_fields_set:
            return None
        used = {data["temperature"] for data in map(halueval_data, results) if "temperature" in data}
        other = sorted((t for t in used if t != self.config.temperature), key=str)
        if not other:
            return None
        return (
            f"the suite sets temperature: {self.config.temperature:g} but the judge was asked "
            f"at temperature {', '.join('none (not sent)' if t is None else f'{t:g}' for t in other)}: "
            "--evals-temperature on the command line wins over the suite's value"
        )
