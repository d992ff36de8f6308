"""The run visualization schema (seed 004): one JSON file per system prompt.

``SystemPromptStats`` -> ``Attack`` (a (system, user) pair) -> ``RatedResponse`` ->
``Rating`` (a rater's raw score plus ``aux_info.normalized_score``). Required and
optional fields follow the seed. Every model keeps unknown keys (``extra="allow"``),
so a file read and written back loses nothing a runner put in ``meta`` or ``aux_info``.

Where rm-bias's own code is looser than the seed's text, the models follow the code
(commit a59ee4a): ``raw_score`` may be ``null`` (their rater writes it when a judge
call fails; it is kept and shown as missing), ``meta`` may be ``{}`` (their
``save_system_prompt_stats`` default) or absent, and ``attacks`` may be absent.
Optional scores written by other tools as ``NaN`` mean "not available" and become
``None``; a raw score that is given must be finite.

Two readings depend on the edge rules (:mod:`.edge_rules`), passed as the validation
context ``{"edges": ...}``: under rm-bias's rules (the default, also without a context)
a score that is not a JSON number is ignored (``None``) and a non-finite raw score too,
as their viewer's ``isinstance(x, (int, float))`` and pandas' NaN-skipping mean do; under
ours a number written as text is read. ``rating_function_type`` and ``ratings`` may be
absent (their viewer reads such files); the loader skips them under ours.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from pytest_evals.families.redteam.edge_rules import CONTEXT_KEY, edges_of

#: File names inside ``seed_<id>/`` that are not system prompt files.
CLUSTER_INFO_FILE = "cluster_info.json"
POPULATION_FILE = "population_history.json"

#: The runner directories the viewer recognises under ``data/``.
RUNNER_DIRS: tuple[str, ...] = ("evo", "bon_iter", "pair", "one_turn")


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _score(value: Any, info: ValidationInfo, finite_only: bool) -> Any:
    """A score as the edge rules read it (see the module docstring)."""
    if edges_of(info.context) == "ours":
        return _finite_or_none(value) if not finite_only else value
    if isinstance(value, bool):
        return float(value)  # a Python int to rm-bias's isinstance check
    if not isinstance(value, int | float):
        return None
    return _finite_or_none(value)


class _Open(BaseModel):
    # ``model_name`` is a seed field name; pydantic would warn about its "model_" prefix.
    model_config = ConfigDict(extra="allow", protected_namespaces=(), allow_inf_nan=False)


def _unnamed(data: Any, info: ValidationInfo, key: str, value: Any) -> Any:
    """When a file is read under rm-bias's rules, a missing or null ``key`` reads as ``value``
    (their viewer's ``.get``). Only when the context names the rules (as the loader's does):
    a model validated without one still requires a rater and its name."""
    named = isinstance(info.context, dict) and info.context.get(CONTEXT_KEY) == "rm-bias"
    if named and isinstance(data, dict) and data.get(key) is None:
        return {**data, key: value}
    return data


class RaterInfo(_Open):
    #: "" when a file read under rm-bias's rules leaves it out: an unnamed rater, which
    #: their viewer neither shows as a column nor takes for the default pair.
    model_name: str
    #: "classifier" (reward model), "lm_judge", or any other kind a runner uses; None when
    #: the file leaves it out (rm-bias's viewer reads such ratings, see edge_rules).
    rating_function_type: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _lenient_name(cls, data: Any, info: ValidationInfo) -> Any:
        return _unnamed(data, info, "model_name", "")

    @field_validator("rating_function_type", mode="before")
    @classmethod
    def _any_type(cls, value: Any, info: ValidationInfo) -> Any:
        # rm-bias's viewer never reads the type: under its rules a non-text one is not an error.
        if edges_of(info.context) == "rm-bias" and value is not None and not isinstance(value, str):
            return None
        return value


class RatingAuxInfo(_Open):
    #: Needed for adversarial statistics; without it the viewer shows N/A.
    normalized_score: float | None = None
    reasoning: str | None = None

    @field_validator("normalized_score", mode="before")
    @classmethod
    def _nan_is_missing(cls, value: Any, info: ValidationInfo) -> Any:
        return _score(value, info, finite_only=False)


class Rating(_Open):
    #: None: the rater gave no score (rm-bias writes null when a judge call fails).
    raw_score: float | None = None
    rater: RaterInfo
    aux_info: RatingAuxInfo = Field(default_factory=RatingAuxInfo)

    @model_validator(mode="before")
    @classmethod
    def _lenient_rater(cls, data: Any, info: ValidationInfo) -> Any:
        # rm-bias's viewer reads ``rating.get("rater", {})``: a rating without a rater is unnamed.
        return _unnamed(data, info, "rater", {})

    @field_validator("raw_score", mode="before")
    @classmethod
    def _raw(cls, value: Any, info: ValidationInfo) -> Any:
        # Under ours a given raw score must be finite (allow_inf_nan=False says so).
        return _score(value, info, finite_only=True)


class RatedResponse(_Open):
    assistant: str
    #: Absent in some files; rm-bias's viewer reads them as no ratings (see edge_rules).
    ratings: list[Rating] = Field(default_factory=list)


class AttackAuxInfo(_Open):
    #: Optional: computed from the default rater pair when absent.
    adversarial_score: float | None = None

    @field_validator("adversarial_score", mode="before")
    @classmethod
    def _nan_is_missing(cls, value: Any) -> Any:
        return _finite_or_none(value)


class Attack(_Open):
    system: str
    user: str
    responses: list[RatedResponse]
    aux_info: AttackAuxInfo = Field(default_factory=AttackAuxInfo)


class SystemPromptMeta(_Open):
    #: Both optional: rm-bias's save_system_prompt_stats writes ``meta={}`` by default.
    step: int | None = None
    operation: str | None = None


class SystemPromptStats(_Open):
    system_prompt: str
    meta: SystemPromptMeta = Field(default_factory=SystemPromptMeta)
    #: Optional: mean / population std of the attacks' adversarial scores.
    mean_score: float | None = None
    stdev_score: float | None = None
    attacks: list[Attack] = Field(default_factory=list)

    @field_validator("mean_score", "stdev_score", mode="before")
    @classmethod
    def _nan_is_missing(cls, value: Any) -> Any:
        return _finite_or_none(value)


class ClusterInfo(_Open):
    """``cluster_info.json``: what the seed's prompts are about (all fields optional)."""

    summary: str | None = None
    train_batch_size: int | None = None
    sample_train_prompts: list[str] = Field(default_factory=list)


def dump(model: BaseModel) -> dict[str, Any]:
    """A model as JSON data, with exactly the keys that were given (nothing invented)."""
    return model.model_dump(mode="json", exclude_unset=True)
