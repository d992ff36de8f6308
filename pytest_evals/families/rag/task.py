"""``task: rag_answers``: GOV.UK Chat-style answers scored by judge metrics.

The pieces live in :mod:`pytest_evals.families.rag`; this class wires them to the core: load and
check a case against what its metrics need, run the target for ``generate: true``,
score every metric (LLM judge, or the embedding baseline when no endpoint is set) and
aggregate per metric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_evals.families.rag.aggregation import aggregate_results
from pytest_evals.families.rag.cases import RagCase, describe_missing, missing_fields
from pytest_evals.families.rag.config import RagConfig, RagMetricSpec
from pytest_evals.families.rag.evaluate import Runner, fill_result, score_case
from pytest_evals.families.rag.generation import merge_output
from pytest_evals.families.rag.govuk_shape import is_govuk_shaped
from pytest_evals.families.rag.inputs import MetricInputs
from pytest_evals.families.rag.judge_block import ResolvedJudge, resolve_judge
from pytest_evals.families.rag.outcome import RunOutcome
from pytest_evals.families.rag.prompts import JUDGE_SYSTEM
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError, JudgeError
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.tasks.task_contract import CaseRef, Task, validate

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

#: Fields a ``generate: true`` case must bring itself (the target makes the rest).
GIVEN_WHEN_GENERATING: tuple[str, ...] = ("question", "ideal_answer")


def offline_runner(rule: Runner) -> Runner:
    """Our offline rules; a DeepEval class has none, and says so (never a silent pass)."""

    async def run(metric: str, spec: RagMetricSpec, repeat: int) -> RunOutcome:
        if spec.deepeval is not None:
            raise JudgeError(f"{metric}: {spec.deepeval} is a DeepEval metric and needs a model endpoint "
                             "(no offline version); set --evals-base-url or remove it for offline runs")
        return await rule(metric, spec, repeat)

    return run


def either(ours: Runner, deepeval: Runner) -> Runner:
    """Metrics given by a DeepEval class go to DeepEval, the others to our judge."""

    async def run(metric: str, spec: RagMetricSpec, repeat: int) -> RunOutcome:
        return await (deepeval if spec.deepeval else ours)(metric, spec, repeat)

    return run


class RagAnswers(Task[RagCase]):
    name = "rag_answers"
    config_model = RagConfig
    # The answer and the retrieved contexts are the system's outputs (saved, or made
    # by the target): a new answer to the same question is the same case.
    input_fields = ("question", "ideal_answer")

    @property
    def rag_config(self) -> RagConfig:
        assert isinstance(self.config, RagConfig)
        return self.config

    @property
    def metric_names(self) -> list[str]:
        return [m.name for m in self.rag_config.metrics]

    @property
    def govuk(self) -> bool:
        """GOV.UK Chat's wording, context text and metrics apply (:mod:`.govuk_shape`)."""
        return is_govuk_shaped(self.suite, self.rag_config)

    def judges(self) -> dict[str, ResolvedJudge]:
        """metric -> its judge: the suite's ``judge:``, the metric's ``model``/``temperature``,
        then the metric's own ``judge:``, over the suite's ``n_runs``."""
        cfg = self.rag_config
        persona = JUDGE_SYSTEM if self.govuk else None
        return {
            spec.name: resolve_judge([cfg.judge, spec.own_judge_fields(), spec.judge],
                                     n_runs=cfg.n_runs, govuk_persona=persona)
            for spec in cfg.metrics
        }

    def metric_needs(self) -> dict[str, tuple[str, ...]]:
        """The case fields of each metric given by a DeepEval class of one's own (the
        class's required parameters); a class that cannot be loaded is named here."""
        from pytest_evals.families.rag.cases import METRIC_FIELDS

        needs: dict[str, tuple[str, ...]] = {}
        for i, spec in enumerate(self.rag_config.metrics):
            if spec.deepeval is None or spec.name in METRIC_FIELDS:
                continue
            from pytest_evals.families.rag.deepeval_metric import load_class, required_fields

            try:
                needs[spec.name] = required_fields(load_class(spec.deepeval))
            except ValueError as exc:
                raise CaseInputError(f"{self.suite.path}: field 'metrics[{i}].deepeval': {exc}") from None
        return needs

    def validate_case(self, data: Any, ref: CaseRef) -> RagCase:
        case: RagCase = validate(RagCase, data, ref.source)
        if self.rag_config.govuk_layout and not self.config.generate:
            from pytest_evals.families.rag.govuk_rules import row_problems

            found = row_problems(data)  # their EvaluationTestCase's rules (:mod:`.govuk_rules`)
            if found:
                raise CaseInputError(f"{ref.source}: " + "; ".join(found))
        fields = GIVEN_WHEN_GENERATING if self.config.generate else None
        missing = missing_fields(case, self.metric_names, fields, self.metric_needs())
        if missing:
            raise CaseInputError(f"{ref.source}: {describe_missing(missing)}")
        return case

    def needs_engine(self) -> bool:
        # Every metric waits on a judge (or the embedding model's worker thread).
        return True

    async def generate(self, case: RagCase, ref: CaseRef, ctx: EvalContext) -> RagCase:
        target = ctx.target(self.suite)
        output = await target.run(case.model_dump(mode="json"))
        return merge_output(case, output, f"{ref.source}: target {target.description}", self.metric_names)

    async def evaluate(self, case: RagCase, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        govuk = self.govuk
        inputs = MetricInputs.from_case(case, ref.source, govuk=govuk)
        from pytest_evals.families.rag.deepeval_metric import effective_specs

        specs = effective_specs(self.rag_config, govuk, ctx.offline)
        judges = self.judges()
        combine = {name: j.combine for name, j in judges.items()}
        runner: Runner
        #: metric -> what the truncate policy cut (filled while the judged metrics run).
        truncations: dict[str, Any] = {}
        repeats: int | dict[str, int]
        if ctx.offline:
            from pytest_evals.families.rag.offline import OfflineCaseJudge

            offline = OfflineCaseJudge(ctx.embedder, inputs)
            runner = offline_runner(offline.run)
            # The embedding baseline is deterministic: repeating it would only fake a spread.
            judge, judge_name, repeats = "offline", f"offline embedding baseline: {offline.name}", 1
            models = {spec.name: judge_name for spec in specs}
        else:
            from pytest_evals.families.rag.judged import CaseJudge

            cfg = self.rag_config
            case_judge = CaseJudge(ctx.judge, inputs, cfg.penalize_ambiguous_claims, judges,
                                   cfg.truncate, cfg.context_tokens)
            ours = case_judge.run
            truncations = case_judge.truncations
            runner = ours
            if any(spec.deepeval for spec in specs):
                from pytest_evals.families.rag.deepeval_metric import DeepEvalCaseJudge

                theirs = DeepEvalCaseJudge(ctx.judge, inputs, case.structured_contexts or [], ref.case_id,
                                           judges, ctx.llm.model, case.model_extra).run
                runner = either(ours, theirs)
            judge, repeats = "llm", {name: j.n_runs for name, j in judges.items()}
            # A metric's own ``model`` is sent with its requests; name every one used.
            models = {name: j.model or ctx.llm.model for name, j in judges.items()}
            judge_name = f"LLM judge ({', '.join(sorted(set(models.values())))})"
        outcomes = await score_case(specs, repeats, runner, judge, combine)
        extra: dict[str, Any] = {"n_runs": repeats if isinstance(repeats, int) else max(repeats.values())}
        if judge == "llm":
            extra["judge_personas"] = {name: j.persona for name, j in judges.items()}
            if inputs.judge_contexts is not None:
                extra["judge_contexts"] = list(inputs.judge_contexts)
        if govuk:
            from pytest_evals.families.rag.govuk_results import DETAILS_KEY, case_fields

            # what GOV.UK's own result files hold (--evals-govuk-outputs): the case as read
            extra[DETAILS_KEY] = case_fields(case)
        result = fill_result(self.new_result(ref), outcomes, inputs, judge, judge_name, extra)
        result.data["judge_models"] = models
        if truncations:
            # What the truncate policy cut, per metric (llm/truncation.py).
            result.data["truncation"] = dict(truncations)
        classes = {spec.name: spec.deepeval for spec in specs if spec.deepeval and judge == "llm"}
        if classes:
            # Which metrics DeepEval's classes scored (GOV.UK's mapping included).
            result.data["deepeval_classes"] = classes
        return result

    def run_settings(self) -> dict[str, Any]:
        """The core's settings, plus what a ``judge:`` block or a DeepEval class changes:
        a baseline judged in other words or by other code is not comparable. A GOV.UK-shaped
        suite also records which mapping scores its metric names (``deepeval_metrics``:
        their DeepEval classes or ours) for judged runs; offline runs use our offline rules
        either way."""
        out = super().run_settings()
        cfg = self.rag_config
        from pytest_evals.families.rag.deepeval_metric import (
            deepeval_system,
            effective_specs,
            mapping_settings,
        )

        govuk = self.govuk
        specs = effective_specs(cfg, govuk, offline=False)
        if govuk or cfg.deepeval_metrics == "always":
            out["deepeval_metrics"] = mapping_settings(cfg, specs)
        if cfg.judge is None and not any(s.judge or s.deepeval for s in specs):
            return out
        import hashlib

        judges: dict[str, Any] = {}
        resolved = self.judges()
        for spec in specs:
            j = resolved[spec.name]
            # DeepEval's prompts carry their own wording: a system message only from a judge: block
            system = deepeval_system(j) if spec.deepeval else j.system_message()
            judges[spec.name] = {
                "persona": j.persona if system is not None else None,
                # the wording itself is in the suite file; its hash tells two runs apart
                "system_sha256": None if system is None else hashlib.sha256(system.encode()).hexdigest()[:16],
                "n_runs": j.n_runs, "combine": j.combine,
                **({"deepeval": spec.deepeval, "options": spec.options} if spec.deepeval else {}),
            }
        out["judges"] = judges
        return out

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        runs = {name: j.n_runs for name, j in self.judges().items()}
        return aggregate_results(self.rag_config.metrics, runs, results)
