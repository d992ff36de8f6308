"""Turn attacks given as dicts, schema models or runner dataclasses into schema data."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from pytest_evals.families.redteam.edge_rules import CONTEXT_KEY
from pytest_evals.families.redteam.schema import Attack, SystemPromptMeta, SystemPromptStats, dump
from pytest_evals.families.redteam.scoring import compute_adversarial_score


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


#: Writing validates scores strictly (a bad score is an error naming its field, a number
#: written as text is stored as the number), whatever rules the reader uses.
WRITE_CONTEXT = {CONTEXT_KEY: "ours"}


def to_attack(attack: Any) -> Attack:
    """An :class:`Attack` from a dict, an Attack, or any object with the same attributes."""
    if isinstance(attack, Attack):
        return attack
    try:
        if isinstance(attack, Mapping):
            return Attack.model_validate(dict(attack), context=WRITE_CONTEXT)
        if isinstance(attack, BaseModel):
            return Attack.model_validate(attack.model_dump(), context=WRITE_CONTEXT)
        # Runner dataclasses (system, user, responses[*].assistant/ratings, aux_info).
        return Attack.model_validate(attack, from_attributes=True, context=WRITE_CONTEXT)
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
            rating.setdefault("raw_score", None)
            rating.setdefault("aux_info", {})
    return data


def _attack_from_attributes(attack: Any) -> dict[str, Any]:
    """rm-bias's ``state.Attack`` (or any object shaped like it) as the attack dict."""
    try:
        responses = []
        for resp in getattr(attack, "responses", None) or []:
            ratings = [
                {
                    "raw_score": rating.raw_score,
                    "rater": {
                        "model_name": rating.rater.model_name,
                        "rating_function_type": rating.rater.rating_function_type,
                    },
                    "aux_info": rating.aux_info,
                }
                for rating in getattr(resp, "ratings", None) or []
            ]
            responses.append({"assistant": resp.assistant, "ratings": ratings})
        return {
            "system": attack.system,
            "user": attack.user,
            "responses": responses,
            # A copy: the adversarial score inserted below must not change the caller's object.
            "aux_info": dict(getattr(attack, "aux_info", None) or {}),
        }
    except AttributeError as exc:
        raise ValueError(f"invalid attack: {type(attack).__name__} has no attribute {exc.name!r}") from None


def convert_attack_to_dict(attack: Any) -> dict[str, Any]:
    """An attack as the normalized dict, the way rm-bias's ``viz_utils`` does it.

    A dict that already has ``user`` and ``responses`` is returned as it is (rm-bias
    takes it as normalized). A dataclass such as rm-bias's ``state.Attack`` (``raw_score``
    may be None) or a schema :class:`Attack` becomes a dict with ``system``, ``user``,
    ``responses[*].assistant``, ``responses[*].ratings[*].{raw_score, rater, aux_info}``
    and ``aux_info``, plus ``aux_info.adversarial_score`` when the default rater pair
    gives one (rm-bias's "average" rule). Unlike rm-bias, an object that is not an
    attack raises ``ValueError`` naming the problem instead of becoming an empty attack.
    """
    if isinstance(attack, Mapping) and "responses" in attack and "user" in attack:
        return attack  # type: ignore[return-value]
    if isinstance(attack, (BaseModel, Mapping)):
        data = attack_to_dict(to_attack(attack))
    else:
        data = _attack_from_attributes(attack)
    score = compute_adversarial_score(to_attack(data), "average")
    if score is not None:
        data["aux_info"]["adversarial_score"] = float(score)
    return data


def validate_stats(data: Mapping[str, Any]) -> SystemPromptStats:
    try:
        return SystemPromptStats.model_validate(dict(data), context=WRITE_CONTEXT)
    except ValidationError as exc:
        raise ValueError(f"invalid system prompt stats: {describe_validation_error(exc)}") from None


def validate_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` as given (``{}`` is valid, as in rm-bias); ``step`` / ``operation`` type-checked when present."""
    if not isinstance(meta, Mapping):
        raise ValueError(f"invalid system prompt stats: field 'meta': expected a mapping, got {type(meta).__name__}")
    try:
        SystemPromptMeta.model_validate(dict(meta))
    except ValidationError as exc:
        raise ValueError(f"invalid system prompt stats: {describe_validation_error(exc, 'meta')}") from None
    return dict(meta)
