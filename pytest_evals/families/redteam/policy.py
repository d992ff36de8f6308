"""The policy: the model under attack, which writes n responses per (system, user) pair.

- ``target: {model: ..., temperature: ..., max_tokens: ...}`` or no target at all: an
  OpenAI-compatible model through the session's cached client, with the attack's system
  prompt; sample ``i`` is the cache's ``repeat=i``, so reruns reuse the same samples.
- ``target: "package.module:function"`` (or ``{callable: ...}`` / ``{command: [...]}``): the
  core's target, called with ``{"id", "system_prompt", "user_prompt", "sample"}`` and
  returning a string or ``{"response": str}`` (``{"text": str}`` is accepted too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pytest_evals.model.errors import TargetError

if TYPE_CHECKING:
    from pytest_evals.families.redteam.config import RedTeamConfig
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.targets.target_kinds import Target
    from pytest_evals.tasks.eval_context import EvalContext

POLICY_NAMESPACE = "redteam-policy"


class Policy(Protocol):
    description: str

    async def respond(self, case_id: str, system_prompt: str, user_prompt: str, sample: int) -> str: ...


class ModelPolicy:
    def __init__(self, ctx: EvalContext, model: str | None, temperature: float | None, max_tokens: int | None) -> None:
        self.ctx = ctx
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.description = f"model {model or '(session default)'}"

    async def respond(self, case_id: str, system_prompt: str, user_prompt: str, sample: int) -> str:
        messages = []
        if system_prompt.strip():
            messages.append({"role": "system", "content": system_prompt})
        messages.append({"role": "user", "content": user_prompt})
        response = await self.ctx.llm.chat(
            messages,
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            repeat=sample,
            namespace=POLICY_NAMESPACE,
        )
        return response.text


def response_text(output: Any, where: str) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, dict):
        for key in ("response", "text"):
            if isinstance(output.get(key), str):
                return str(output[key])
        raise TargetError(f"{where} returned an object without a string 'response' (keys: {sorted(output)[:10]})")
    raise TargetError(f"{where} returned {type(output).__name__}, expected a string or {{'response': str}}")


class TargetPolicy:
    def __init__(self, target: Target) -> None:
        self.target = target
        self.description = target.description

    async def respond(self, case_id: str, system_prompt: str, user_prompt: str, sample: int) -> str:
        output = await self.target.run(
            {"id": case_id, "system_prompt": system_prompt, "user_prompt": user_prompt, "sample": sample}
        )
        return response_text(output, f"target {self.description}")


def make_policy(suite: Suite, config: RedTeamConfig, ctx: EvalContext) -> Policy:
    target = config.target
    if target is None or (isinstance(target, dict) and "model" in target and "command" not in target and "callable" not in target):
        spec = target or {}
        policy = config.policy
        return ModelPolicy(
            ctx,
            model=spec.get("model", policy.model),
            temperature=spec.get("temperature", policy.temperature),
            max_tokens=spec.get("max_tokens", policy.max_tokens),
        )
    return TargetPolicy(ctx.target(suite))
