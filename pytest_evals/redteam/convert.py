"""Turn attacks given as dicts, schema models or runner dataclasses into schema data."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from pytest_evals.redteam.schema import Attack, SystemPromptMeta, SystemPromptStats, dump
from pytest_evals.redteam.scoring import compute_adversarial_score


def hash_system_prompt(system_prompt: str) -> str:
    """md5 hex digest of the stripped prompt: the system prompt's file name (without .json)."""
    return hashlib.md5(system_prompt.strip().encode("utf-8")).hexdigest()


def field_path(loc: tuple[int | str, ...]) -> str:
    """``("attacks", 3, "user")`` -> ``"attacks[3].user"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def describe_validation_error(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for err in exc.errors():
        loc = field_path(tuple(err["loc"]))
        if prefix:
            loc = f"{prefix}.{loc}" if loc != "(top level)" else prefix
        parts.append(f"field {loc!r}: {err['msg']}")
    return "; ".join(parts)


def to_attack(attack: Any) -> Attack:
    """An :class:`Attack` from a dict, an Attack, or any object with the same attributes."""
    if isinstance(attack, Attack):
        return attack
    try:
        if isinstance(attack, Mapping):
            return Attack.model_validate(dict(attack))
        if isinstance(attack, BaseModel):
            return Attack.model_validate(attack.model_dump())
        # Runner dataclasses (system, user, responses[*].assistant/ratings, aux_info).
        return Attack.model_validate(attack, from_attributes=True)
    except ValidationError as exc:
        raise ValueError(f"invalid attack: {describe_validation_error(exc)}") from None


def scored_attack(attack: Any) -> Attack:
    """:func:`to_attack`, with ``aux_info.adversarial_score`` filled in when computable.

    A stored adversarial score is kept as given. The caller's object is never modified.
    """
    model = to_attack(attack)
    if model is attack:
        model = model.model_copy(deep=True)
    if model.aux_info.adversarial_score is None:
        score = compute_adversarial_score(model)
        if score is not None:
            aux = model.aux_info
            aux.adversarial_score = score
            # Re-assigning marks aux_info as given, so dump() keeps it.
            model.aux_info = aux
    return model


def attack_to_dict(model: Attack) -> dict[str, Any]:
    """Schema data of an attack; every rating and the attack carry an ``aux_info`` mapping."""
    data = dump(model)
    data.setdefault("aux_info", {})
    for response in data["responses"]:
        for rating in response["ratings"]:
            rating.setdefault("aux_info", {})
    return data


def convert_attack_to_dict(attack: Any) -> dict[str, Any]:
    """The normalized attack dict; ``aux_info.adversarial_score`` inserted when computable.

    Accepts a dict, a schema :class:`Attack`, or a runner's dataclass with the same
    fields. Readers never need to test for a missing ``aux_info``.
    """
    return attack_to_dict(scored_attack(attack))


def validate_stats(data: Mapping[str, Any]) -> SystemPromptStats:
    try:
        return SystemPromptStats.model_validate(dict(data))
    except ValidationError as exc:
        raise ValueError(f"invalid system prompt stats: {describe_validation_error(exc)}") from None


def validate_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return dump(SystemPromptMeta.model_validate(dict(meta)))
    except ValidationError as exc:
        raise ValueError(f"invalid system prompt stats: {describe_validation_error(exc, 'meta')}") from None
