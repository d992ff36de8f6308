"""A minimal LLM-judged task used by the LLM layer's end-to-end tests.

Each case is ``{"id", "prompt", "expect"}``: the task asks the model ``prompt`` (through
``ctx.llm``, so the cache, concurrency and retries are all on the path) and the case
passes when the reply equals ``expect``. Copied into pytester directories and registered
as ``task: llm_probe`` by their conftest.
"""

from __future__ import annotations

from typing import Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.errors import CaseInputError
from pytest_evals.model.metric_value import MetricTree, proportion
from pytest_evals.tasks.eval_context import EvalContext
from pytest_evals.tasks.task_contract import CaseRef, Task


class Probe(Task[dict[str, Any]]):
    name = "llm_probe"

    def validate_case(self, data: Any, ref: CaseRef) -> dict[str, Any]:
        if not isinstance(data, dict) or not isinstance(data.get("prompt"), str):
            raise CaseInputError(f"{ref.source}: field 'prompt' is required")
        return data

    def needs_engine(self) -> bool:
        return True

    async def evaluate(self, case: dict[str, Any], ref: CaseRef, ctx: EvalContext) -> CaseResult:
        result = self.new_result(ref)
        response = await ctx.llm.chat(case["prompt"], namespace="probe")
        ok = response.text == case.get("expect", case["prompt"])
        result.status = "passed" if ok else "failed"
        result.scores = {"ok": float(ok)}
        result.data = {"ok": ok, "cached": response.cached}
        result.details = {"reply": response.text}
        result.message = None if ok else f"expected {case.get('expect')!r}, got {response.text!r}"
        return result

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        ok = sum(1 for r in results if r.data.get("ok"))
        return {"accuracy": proportion(ok, len(results), "no cases")}, {}
