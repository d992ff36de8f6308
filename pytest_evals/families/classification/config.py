"""The suite configuration of GOV.UK Chat's tasks: the core's fields and theirs.

GOV.UK Chat's ``config/defaults/<task>.yaml`` files carry fields the core has no use
for; they are accepted here so those files load unchanged.

Their config models (``govuk_chat_evaluation/config.py`` and each task's ``cli.py``) are
pydantic models with the default ``extra="ignore"``: a field they do not know is dropped
without a word, so a config written for their next version still runs. A file in their
layout (no ``task:``, named after its task) is read the same way: such a field is kept
(in :attr:`ChatSuiteConfig.govuk_unknown_fields` and the suite's raw data) and noted
once per file in the run's summaries (:mod:`.config_checks`), never an error. A pytest_evals suite
(``task:`` given) still rejects unknown fields, so a misspelt ``tresholds`` cannot turn a
gate off silently. The value checks their models do make are made in both, with the file
and field named: ``guardrail_type`` of output_guardrails is one of their two literals.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pytest_evals.families.classification.config_checks import (
    GUARDRAIL_TYPES,
    UNKNOWN_FIELDS,
    their_layout,
    warn_unknown_fields,
)
from pytest_evals.suites.suite_config import SuiteConfig


class ChatSuiteConfig(SuiteConfig):
    # A dumped config (config.json of a run folder, read back by `pytest-evals rescore`) names
    # the two GOV.UK fields by their Python names.
    model_config = ConfigDict(populate_by_name=True)

    #: Fields of a file in GOV.UK's layout that no pytest_evals task knows (kept, not used).
    govuk_unknown_fields: dict[str, Any] = Field(default_factory=dict, alias="__govuk_unknown_fields__")
    #: Whether the file is in GOV.UK's layout (no ``task:``, named after its task): where their
    #: data rules (e.g. ``model`` required in a row) may apply.
    govuk_layout: bool = Field(default=False, alias="__govuk_layout__")

    #: The model the system under test generates with (recorded in generated.jsonl when
    #: the target does not report one; given to a command target as the
    #: CLAUDE_GENERATION_MODEL environment variable, see docs/govuk.md).
    claude_generation_model: str | None = None
    #: output_guardrails' guardrail set: "answer_guardrails" or "question_routing_guardrails".
    guardrail_type: str | None = None
    #: The judge provider (informational: the endpoint comes from the LLM settings).
    provider: str | None = None

    @field_validator("guardrail_type")
    @classmethod
    def _guardrail_type(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Only output_guardrails has the field in their models; elsewhere it is unknown to them.
        if info.data.get("task") == "output_guardrails" and value is not None and value not in GUARDRAIL_TYPES:
            raise ValueError(
                f"{value!r} is not a guardrail type of GOV.UK Chat's output_guardrails; "
                f"expected one of {', '.join(repr(t) for t in GUARDRAIL_TYPES)}"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _keep_unknown_fields(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or not their_layout(info.context):
            return data
        data = {**data, "__govuk_layout__": True}
        known = {f.alias or name for name, f in cls.model_fields.items()} | set(cls.model_fields)
        unknown = {k: v for k, v in data.items() if k not in known}
        if not unknown:
            return data
        warn_unknown_fields(str(data.get("task", "")), unknown, info.context)
        kept = {k: v for k, v in data.items() if k in known}
        kept[UNKNOWN_FIELDS] = unknown
        return kept
