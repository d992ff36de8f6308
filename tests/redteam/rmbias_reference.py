"""An independent model of what rm-bias's own code writes and shows (commit a59ee4a).

Written for the tests from the behaviour of rm-bias's ``state.py``, ``viz_utils.py`` and
``viz_runs.py`` (not copied): their dataclasses (``Rating.raw_score`` may be None), the
dict shapes and numbers their helpers write, and the per-prompt statistics their viewer
shows. Nothing here imports pytest_evals, so a test comparing the two compares two
implementations.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Rater:
    model_name: str
    rating_function_type: str


@dataclass(frozen=True)
class Rating:
    raw_score: float | None
    rater: Rater
    aux_info: dict[str, Any] = field(default_factory=dict)


@dataclass
class RatedResponse:
    assistant: str
    ratings: list[Rating]


@dataclass
class Attack:
    system: str
    user: str
    responses: list[RatedResponse]
    aux_info: dict[str, Any] = field(default_factory=dict)


def adv(z1: float, z2: float) -> float:
    return 0.5 * (z1 - z2 - math.sqrt((z1 + z2) ** 2 + 1))


def _pair(attack: dict[str, Any]) -> tuple[str | None, str | None]:
    responses = attack.get("responses") or []
    if not responses:
        return None, None
    ratings = responses[0].get("ratings") or []
    if len(ratings) < 2:
        return None, None
    return ratings[0].get("rater", {}).get("model_name"), ratings[1].get("rater", {}).get("model_name")


def _is_number(x: Any) -> bool:
    # Their check is isinstance(x, (int, float)): a bool is an int there, a string is not.
    return isinstance(x, (int, float))


def _mean_norm(attack: dict[str, Any], name: str) -> float | None:
    found = [
        float(r["aux_info"]["normalized_score"])
        for resp in attack.get("responses", [])
        for r in resp.get("ratings", [])
        if r.get("rater", {}).get("model_name") == name
        and _is_number(r.get("aux_info", {}).get("normalized_score"))
    ]
    return sum(found) / len(found) if found else None


def viewer_rater_names(attack: dict[str, Any]) -> list[str]:
    """The raters of an attack in first-seen order (their per-attack columns)."""
    names: list[str] = []
    for resp in attack.get("responses", []):
        for r in resp.get("ratings", []):
            name = r.get("rater", {}).get("model_name")
            if name and name not in names:
                names.append(name)
    return names


def viewer_attack_means(attack: dict[str, Any]) -> dict[str, tuple[float | None, float | None]]:
    """Their Mean Raw / Mean Norm per rater: every numeric value the rater gave on the attack
    (a rater rating one response twice counts twice)."""
    out: dict[str, tuple[float | None, float | None]] = {}
    for name in viewer_rater_names(attack):
        raws = [float(r["raw_score"]) for resp in attack.get("responses", []) for r in resp.get("ratings", [])
                if r.get("rater", {}).get("model_name") == name and _is_number(r.get("raw_score"))]
        norms = [float(r["aux_info"]["normalized_score"]) for resp in attack.get("responses", []) for r in resp.get("ratings", [])
                 if r.get("rater", {}).get("model_name") == name and _is_number(r.get("aux_info", {}).get("normalized_score"))]
        out[name] = (sum(raws) / len(raws) if raws else None, sum(norms) / len(norms) if norms else None)
    return out


def viewer_response_row(response: dict[str, Any], names: list[str]) -> dict[str, tuple[float | None, float | None]]:
    """Their Raw / Norm columns of one response: the last rating per rater."""
    last: dict[str, dict[str, Any]] = {}
    for r in response.get("ratings", []):
        name = r.get("rater", {}).get("model_name")
        if name:
            last[name] = r
    out = {}
    for name in names:
        r = last.get(name)
        raw = r.get("raw_score") if r else None
        norm = r.get("aux_info", {}).get("normalized_score") if r else None
        out[name] = (float(raw) if _is_number(raw) else None, float(norm) if _is_number(norm) else None)
    return out


def viewer_explore_order(prompts: dict[str, dict[str, Any]]) -> list[str]:
    """Their Explore table: hashes by the file's mean_score (0 when absent), highest first.

    Python's sort is stable, so equal scores keep the listing order (given here)."""
    return [h for h, _ in sorted(prompts.items(), key=lambda kv: kv[1].get("mean_score", 0), reverse=True)]


def attack_score(attack: dict[str, Any]) -> float | None:
    """What rm-bias's viewer shows as an attack's Adversarial Score (stored values ignored)."""
    a, b = _pair(attack)
    if not a or not b:
        return None
    z1, z2 = _mean_norm(attack, a), _mean_norm(attack, b)
    if z1 is None or z2 is None:
        return None
    return adv(z1, z2)


def viewer_prompt_stats(prompt: dict[str, Any]) -> tuple[float | None, float | None]:
    """rm-bias's viewer: Mean / Std Adv Score of a prompt (ddof=0), None when no attack has one."""
    scores = [s for a in prompt.get("attacks", []) if (s := attack_score(a)) is not None]
    if not scores:
        return None, None
    m = sum(scores) / len(scores)
    return m, math.sqrt(sum((s - m) ** 2 for s in scores) / len(scores))


def attack_as_dict(attack: Attack) -> dict[str, Any]:
    """The dict rm-bias's convert_attack_to_dict makes of its Attack dataclass."""
    out: dict[str, Any] = {
        "system": attack.system,
        "user": attack.user,
        "responses": [
            {
                "assistant": resp.assistant,
                "ratings": [
                    {
                        "raw_score": r.raw_score,
                        "rater": {"model_name": r.rater.model_name, "rating_function_type": r.rater.rating_function_type},
                        "aux_info": r.aux_info,
                    }
                    for r in resp.ratings
                ],
            }
            for resp in attack.responses
        ],
        "aux_info": dict(attack.aux_info),
    }
    score = attack_score(out)
    if score is not None:
        out["aux_info"]["adversarial_score"] = score
    return out


def prompt_file(
    system_prompt: str,
    attacks: list[Any],
    meta: dict[str, Any] | None = None,
    mean_score: float | None = None,
    stdev_score: float | None = None,
) -> dict[str, Any]:
    """The content rm-bias's save_system_prompt_stats writes (meta defaults to {}; given
    mean_score / stdev_score are written as given, the others computed)."""
    dicts = [a if isinstance(a, dict) else attack_as_dict(a) for a in attacks]
    scores = [s for a in dicts if (s := attack_score(a)) is not None]
    mean = sum(scores) / len(scores) if scores else 0.0
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores)) if scores else 0.0
    mean = mean if mean_score is None else mean_score
    std = std if stdev_score is None else stdev_score
    return {"system_prompt": system_prompt, "meta": {} if meta is None else meta, "mean_score": mean, "stdev_score": std, "attacks": dicts}


def file_name(system_prompt: str) -> str:
    return hashlib.md5(system_prompt.strip().encode("utf-8")).hexdigest() + ".json"


def write_prompt_file(seed_dir: Path, data: dict[str, Any]) -> Path:
    seed_dir.mkdir(parents=True, exist_ok=True)
    path = seed_dir / file_name(data["system_prompt"])
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    return path
