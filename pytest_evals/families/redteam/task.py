"""``task: redteam``: adversarial scores of attacks on a reward model, one item per attack.

An attack is a (system prompt, user prompt) pair from the suite's JSONL. The policy
writes ``n_responses`` responses to it (or the case brings them), every rater scores
every response, scores are normalised with each rater's baseline statistics and the
attack's adversarial score is computed from the default rater pair (the first two
raters). The item fails when that score is above ``adversarial_threshold``; the suite
gates on ``mean_adversarial`` / ``max_adversarial``. With ``output_dir`` the attacks are
also written in the viewer's layout (see :mod:`pytest_evals.families.redteam`): each case carries
its attack in its result's details and the controller writes the store once the run's
verdict is decided (:mod:`pytest_evals.families.redteam.plugin`), as every other artifact is.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals.families.redteam.config import RedTeamCase, RedTeamConfig
from pytest_evals.families.redteam.convert import hash_system_prompt
from pytest_evals.families.redteam.rating import (
    NormStats,
    build_attack,
    rate_responses,
    stats_from_scores,
)
from pytest_evals.families.redteam.schema import AttackAuxInfo, dump
from pytest_evals.families.redteam.scoring import (
    compute_adversarial_score,
    mean_normalized,
    missing_reason,
    score_stats,
)
from pytest_evals.families.redteam.writer import StoreRecord
from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError, JudgeError
from pytest_evals.model.metric_value import Metric, MetricTree, mean_metric, proportion
from pytest_evals.tasks.task_contract import CaseRef, Task, validate

if TYPE_CHECKING:
    from pytest_evals.families.redteam.policy import Policy
    from pytest_evals.families.redteam.raters import Rater
    from pytest_evals.tasks.eval_context import EvalContext

#: Characters of a system prompt kept in the light result (for the summary table).
PROMPT_PREVIEW = 200


class RedTeam(Task[RedTeamCase]):
    name = "redteam"
    config_model = RedTeamConfig
    # The attack; its ``responses`` (saved, or the policy's) are outputs.
    input_fields = ("system_prompt", "user_prompt", "seed_id", "step", "operation")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._raters: list[Rater] | None = None
        self._policy: Policy | None = None
        from pytest_evals.families.redteam.raters import register_rater_secrets

        # Every process that reads the suite (the controller writes its configuration
        # into the summary and the run folder) knows the raters' credentials as secrets.
        for spec in self.rt.raters:
            register_rater_secrets(spec)

    @property
    def rt(self) -> RedTeamConfig:
        assert isinstance(self.config, RedTeamConfig)
        return self.config

    def run_settings(self) -> dict[str, Any]:
        # The policy answering (when no target does) and the raters scoring decide the
        # results as much as the attacks do; headers (secrets) and retry knobs do not.
        out = super().run_settings()
        if self.rt.generate:
            out["n_responses"] = self.rt.n_responses
            if self.rt.target is None:
                out["policy"] = self.rt.policy.model_dump(mode="json")
        out["raters"] = [r.model_dump(mode="json", exclude={"headers", "timeout", "retries"}) for r in self.rt.raters]
        return out

    # -- cases ------------------------------------------------------------------------
    def validate_case(self, data: Any, ref: CaseRef) -> RedTeamCase:
        case: RedTeamCase = validate(RedTeamCase, data, ref.source)
        if not self.config.generate:
            if case.responses is None:
                raise CaseInputError(
                    f"{ref.source}: field 'responses' is required when generate is false "
                    "(or set generate: true to have the policy write them)"
                )
            if not case.responses:
                raise CaseInputError(f"{ref.source}: field 'responses' is empty")
        if self.rt.output_dir:
            from pytest_evals.families.redteam.store import seed_dir

            try:  # a clear case error now, rather than a file the controller cannot write
                seed_dir(".", case.seed_id)
            except ValueError as exc:
                raise CaseInputError(f"{ref.source}: field 'seed_id': {exc}") from None
        return case

    def needs_engine(self) -> bool:
        return True

    # -- the policy and the raters (built once per process) -------------------------------
    def policy(self, ctx: EvalContext) -> Policy:
        if self._policy is None:
            from pytest_evals.families.redteam.policy import make_policy

            self._policy = make_policy(self.suite, self.rt, ctx)
        return self._policy

    def raters(self, ctx: EvalContext) -> list[Rater]:
        if self._raters is None:
            from pytest_evals.families.redteam.raters import build_rater

            raters = [build_rater(spec, ctx, str(self.suite.path.parent)) for spec in self.rt.raters]
            names = [r.name for r in raters]
            if len(set(names)) != len(names):
                raise CaseInputError(
                    f"{self.suite.path}: raters resolve to the same name ({', '.join(names)}); give each a 'name'"
                )
            self._raters = raters
        return self._raters

    async def generate(self, case: RedTeamCase, ref: CaseRef, ctx: EvalContext) -> RedTeamCase:
        policy = self.policy(ctx)
        responses = await asyncio.gather(
            *(policy.respond(ref.case_id, case.system_prompt, case.user_prompt, i) for i in range(self.rt.n_responses))
        )
        return case.model_copy(update={"responses": list(responses)})

    # -- normalisation ------------------------------------------------------------------------
    def given_stats(self, raters: list[Rater]) -> dict[str, NormStats]:
        return {
            rater.name: NormStats(spec.stats.mean, spec.stats.stdev, "suite")
            for spec, rater in zip(self.rt.raters, raters, strict=True)
            if spec.stats is not None
        }

    def input_user_prompts(self) -> list[str]:
        """Distinct user prompts of the input file, in order (unreadable lines are left to their cases)."""
        if not self.config.input_path:
            return []
        from pytest_evals.hardening.input_limits import max_depth
        from pytest_evals.suites.jsonl_cases import OversizedLine, iter_lines, too_deep

        seen: dict[str, None] = {}
        path = self.suite.resolve(self.config.input_path)
        # The case reader's bounds: a regular file only, long lines skipped, deep ones too.
        for _line_no, _offset, _length, body in iter_lines(path):
            if isinstance(body, OversizedLine) or too_deep(body, max_depth()) is not None:
                continue
            try:
                data = json.loads(body.decode("utf-8", errors="replace"))
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict) and isinstance(data.get("user_prompt"), str) and data["user_prompt"]:
                seen.setdefault(data["user_prompt"], None)
        return list(seen)

    async def normalization(self, ctx: EvalContext, raters: list[Rater]) -> dict[str, NormStats]:
        given = self.given_stats(raters)
        if len(given) == len(raters):
            return given
        from pytest_evals.families.redteam.baseline import (
            baseline_key,
            once_per_process,
            shared_across_workers,
        )

        baseline = self.rt.baseline
        assert baseline is not None  # the config validator requires it when stats are missing
        key = baseline_key({
            "suite": str(self.suite.path.resolve()),
            "baseline": baseline.model_dump(mode="json"),
            "raters": [spec.model_dump(mode="json") for spec in self.rt.raters],
            "names": [r.name for r in raters],
            "policy": self.policy(ctx).description,
            "n": self.rt.n_responses,
        })
        workerinput = getattr(ctx.config, "workerinput", None)
        run_uid = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None

        async def compute() -> dict[str, NormStats]:
            return await self.compute_baseline(ctx, raters, given)

        return await once_per_process(
            key, lambda: shared_across_workers(key, run_uid, compute, baseline.timeout)
        )

    async def compute_baseline(
        self, ctx: EvalContext, raters: list[Rater], given: dict[str, NormStats]
    ) -> dict[str, NormStats]:
        baseline = self.rt.baseline
        assert baseline is not None
        prompts = list(baseline.user_prompts) if baseline.user_prompts is not None else self.input_user_prompts()
        if baseline.max_user_prompts is not None:
            prompts = prompts[: baseline.max_user_prompts]
        if not prompts:
            raise CaseInputError(f"{self.suite.path}: baseline: no user prompts (set baseline.user_prompts)")
        n = baseline.n_responses or self.rt.n_responses
        policy = self.policy(ctx)

        async def one(j: int, user: str) -> tuple[list[str], list[list[Any]]]:
            responses = await asyncio.gather(
                *(policy.respond(f"baseline-{j}", baseline.system_prompt, user, i) for i in range(n))
            )
            return list(responses), await rate_responses(user, responses, raters)

        rows = await asyncio.gather(*(one(j, user) for j, user in enumerate(prompts)))
        stats = dict(given)
        for k, rater in enumerate(raters):
            if rater.name not in stats:
                scores = [rating[k].score for _responses, raw in rows for rating in raw]
                stats[rater.name] = stats_from_scores(rater.name, scores)
        run_path = self.run_path()
        if run_path is not None:
            attacks = [
                build_attack(baseline.system_prompt, user, responses, raw, raters, stats)
                for user, (responses, raw) in zip(prompts, rows, strict=True)
            ]
            meta = {"step": 0, "operation": "baseline", "normalization": {k: v.to_json() for k, v in stats.items()}}
            # Computed once per run (in one process): the controller gets it from this
            # process's list, or from the worker's ``workeroutput``, and writes it.
            from pytest_evals.families.redteam.plugin import record_baseline

            record_baseline(ctx.config, StoreRecord(
                run_path=str(run_path),
                seed_id=str(baseline.seed_id),
                system_prompt=baseline.system_prompt,
                attacks=[dump(a) for a in attacks],
                meta=meta,
            ))
        return stats

    # -- output --------------------------------------------------------------------------------
    def run_path(self) -> Path | None:
        if not self.rt.output_dir:
            return None
        return self.suite.resolve(self.rt.output_dir) / self.rt.runner / (self.rt.run_name or self.suite.name)

    # -- evaluation ------------------------------------------------------------------------------
    async def evaluate(self, case: RedTeamCase, ref: CaseRef, ctx: EvalContext) -> CaseResult:
        if not case.responses:
            raise CaseInputError(f"{ref.source}: no responses to rate")
        raters = self.raters(ctx)
        stats = await self.normalization(ctx, raters)
        raw = await rate_responses(case.user_prompt, case.responses, raters)
        attack = build_attack(case.system_prompt, case.user_prompt, case.responses, raw, raters, stats)
        adv = compute_adversarial_score(attack)
        if adv is None:
            raise JudgeError(f"{ref.source}: adversarial score is N/A: {missing_reason(attack)}")
        attack.aux_info = AttackAuxInfo(adversarial_score=adv)
        run_path = self.run_path()

        per_rater = {}
        for k, rater in enumerate(raters):
            raws = [row[k].score for row in raw]
            per_rater[rater.name] = {
                "mean_raw": sum(raws) / len(raws),
                "mean_normalized": mean_normalized(attack, rater.name),
            }
        threshold = self.rt.adversarial_threshold
        failed = adv > threshold
        z1, z2 = (per_rater[r.name]["mean_normalized"] for r in raters[:2])
        result = self.new_result(ref)
        result.status = "failed" if failed else "passed"
        result.scores = {"adversarial": adv}
        result.message = (
            f"adversarial score {adv:.3f} {'>' if failed else '<='} threshold {threshold:g} "
            f"({raters[0].name}: mean z {z1:+.2f}; {raters[1].name}: mean z {z2:+.2f})"
        )
        result.data = {
            "adversarial": adv,
            "seed_id": str(case.seed_id),
            "system_hash": hash_system_prompt(case.system_prompt),
            "system_prompt": case.system_prompt[:PROMPT_PREVIEW],
            "raters": per_rater,
            "normalization": {name: s.to_json() for name, s in stats.items()},
        }
        result.details = {
            "system_prompt": case.system_prompt,
            "user_prompt": case.user_prompt,
            "attack": dump(attack),
            "policy": self.policy(ctx).description if self.config.generate else "responses given in the case",
            "run_path": str(run_path) if run_path is not None else None,
            # What the store writer needs besides the attack (see redteam.plugin).
            "meta": {**case.meta, "step": case.step, "operation": case.operation},
        }
        return result

    # -- aggregation (controller) -------------------------------------------------------------------
    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        scored = [r for r in results if isinstance(r.data.get("adversarial"), int | float)]
        advs = [float(r.data["adversarial"]) for r in scored]
        empty = "0/0: no scored attacks"
        _mean, stdev = score_stats(advs)
        threshold = self.rt.adversarial_threshold
        # Flat names: "max"/"min" under a mapping would read as gate bounds in thresholds.
        tree: MetricTree = {
            "mean_adversarial": mean_metric(advs, empty="no scored attacks"),
            "max_adversarial": Metric(max(advs) if advs else None, None, len(advs), None if advs else empty, "score"),
            "min_adversarial": Metric(min(advs) if advs else None, None, len(advs), None if advs else empty, "score"),
            "std_adversarial": Metric(stdev, None, len(advs), None if advs else empty, "score"),
            "above_threshold": proportion(sum(1 for a in advs if a > threshold), len(advs), "no scored attacks"),
        }
        names: list[str] = []
        for r in scored:
            for name in r.data.get("raters", {}):
                if name not in names:
                    names.append(name)
        raters_tree: MetricTree = {}
        for name in names:
            raws = [r.data["raters"][name]["mean_raw"] for r in scored if name in r.data["raters"]]
            norms = [
                r.data["raters"][name]["mean_normalized"]
                for r in scored
                if name in r.data["raters"] and r.data["raters"][name]["mean_normalized"] is not None
            ]
            raters_tree[name] = {"mean_raw": mean_metric(raws), "mean_normalized": mean_metric(norms)}
        if raters_tree:
            tree["raters"] = raters_tree
        return tree, self.tables(scored)

    def tables(self, scored: list[CaseResult]) -> dict[str, Any]:
        groups: dict[tuple[str, str], list[CaseResult]] = {}
        for r in scored:
            groups.setdefault((r.data["seed_id"], r.data["system_hash"]), []).append(r)
        rows = []
        for (seed_id, prompt_hash), members in groups.items():
            values = [float(m.data["adversarial"]) for m in members]
            mean, stdev = score_stats(values)
            rows.append({
                "seed_id": seed_id,
                "hash": prompt_hash,
                "system_prompt": members[0].data["system_prompt"],
                "attacks": len(values),
                "mean_adversarial": mean,
                "stdev_adversarial": stdev,
                "max_adversarial": max(values),
            })
        rows.sort(key=lambda row: (-(row["mean_adversarial"] if row["mean_adversarial"] is not None else -math.inf), row["hash"]))
        tables: dict[str, Any] = {"system_prompts": rows}
        if scored:
            tables["normalization"] = scored[0].data.get("normalization", {})
        run_path = self.run_path()
        if run_path is not None:
            tables["run_path"] = str(run_path)
        return tables
