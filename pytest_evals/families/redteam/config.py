"""Suite fields and case fields of ``task: redteam``."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from pytest_evals.suites.suite_config import SuiteConfig


class RaterStats(BaseModel):
    """A rater's baseline statistics: normalized = (raw - mean) / (stdev + 1e-6)."""

    model_config = ConfigDict(extra="forbid")

    mean: float
    stdev: float = Field(ge=0)


class RaterSpec(BaseModel):
    """One rater. Order matters: the first two form the default pair (z1, z2)."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    #: ``rater.model_name`` in the written ratings (defaults to the model / callable / URL).
    name: str | None = None
    #: ``rating_function_type``: an LLM judge or a classifier / reward model.
    type: Literal["lm_judge", "classifier"]
    # -- lm_judge --------------------------------------------------------------
    model: str | None = None
    temperature: float | None = 0.0
    #: Extra instructions for the judge, appended to the built-in rubric.
    rubric: str | None = None
    # -- classifier ------------------------------------------------------------
    #: ``"package.module:function"`` (sync or async), given {"user", "assistant"}.
    callable: str | None = None
    #: HTTP scoring endpoint: POST {"user", "assistant"} -> {"score": number}.
    url: str | None = None
    #: HTTP headers; ``${VAR}`` is replaced from the environment at call time.
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=30.0, gt=0)
    retries: int = Field(default=2, ge=0)
    # -- normalisation -----------------------------------------------------------
    stats: RaterStats | None = None

    @model_validator(mode="after")
    def _kind_fields(self) -> RaterSpec:
        if self.type == "classifier":
            if (self.callable is None) == (self.url is None):
                raise ValueError("a classifier rater needs exactly one of 'callable' or 'url'")
            if self.model is not None or self.rubric is not None:
                raise ValueError("'model' and 'rubric' are for lm_judge raters")
        elif self.callable is not None or self.url is not None:
            raise ValueError("'callable' and 'url' are for classifier raters")
        return self


class BaselineSpec(BaseModel):
    """Compute each rater's mean/stdev from a baseline system prompt's responses."""

    model_config = ConfigDict(extra="forbid")

    system_prompt: str
    #: Default: the distinct user prompts of the suite's input, in file order.
    user_prompts: list[str] | None = None
    max_user_prompts: int | None = Field(default=None, ge=1)
    #: Responses per user prompt (default: the suite's n_responses).
    n_responses: int | None = Field(default=None, ge=1)
    #: Seed directory the baseline system prompt file is written to (with output_dir).
    seed_id: int | str = 0
    #: How long another xdist worker waits for the worker computing the baseline.
    timeout: float = Field(default=1800.0, gt=0)


class PolicySpec(BaseModel):
    """The policy when it is an OpenAI-compatible model (no ``target``)."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    temperature: float | None = 1.0
    max_tokens: int | None = None


class RedTeamConfig(SuiteConfig):
    #: Responses come from the policy unless the cases carry them (generate: false).
    generate: bool = True
    n_responses: int = Field(default=4, ge=1)
    policy: PolicySpec = Field(default_factory=PolicySpec)
    raters: list[RaterSpec] = Field(min_length=2)
    baseline: BaselineSpec | None = None
    #: An attack fails when its adversarial score is above this.
    adversarial_threshold: float = 0.0
    #: Where to write the run in the viewer's layout: <output_dir>/<runner>/<run_name>/...
    output_dir: str | None = None
    runner: Literal["evo", "bon_iter", "pair", "one_turn"] = "one_turn"
    run_name: str | None = None

    @field_validator("raters")
    @classmethod
    def _unique_names(cls, raters: list[RaterSpec]) -> list[RaterSpec]:
        names = [r.name for r in raters if r.name]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"rater names must be unique: {', '.join(dupes)}")
        return raters

    @model_validator(mode="after")
    def _stats_source(self) -> RedTeamConfig:
        if self.baseline is None:
            missing = [
                str(r.name or r.callable or r.url or r.model or f"#{i + 1}")
                for i, r in enumerate(self.raters)
                if r.stats is None
            ]
            if missing:
                raise ValueError(
                    f"raters without 'stats' need a 'baseline' to compute them from: {', '.join(missing)}"
                )
        return self


class RedTeamCase(BaseModel):
    """One attack: a (system prompt, user prompt) pair. Other fields are kept and ignored."""

    model_config = ConfigDict(extra="allow")

    id: str | int | None = None
    system_prompt: str
    user_prompt: str = Field(min_length=1)
    seed_id: int | str = 0
    step: int = 0
    operation: str = "init"
    meta: dict[str, Any] = Field(default_factory=dict)
    #: Pre-generated responses (required when generate is false).
    responses: list[str] | None = None
