"""Rating an attack's responses and turning raw scores into schema ratings."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pytest_evals.families.redteam.raters import Rater, RawRating
from pytest_evals.families.redteam.schema import (
    Attack,
    AttackAuxInfo,
    RatedResponse,
    RaterInfo,
    Rating,
    RatingAuxInfo,
)
from pytest_evals.families.redteam.scoring import normalize
from pytest_evals.model.errors import JudgeError


@dataclass
class NormStats:
    """A rater's normalisation statistics and where they came from."""

    mean: float
    stdev: float
    #: "suite" (given in the suite file) or "baseline" (computed from baseline responses).
    source: str
    #: Number of baseline ratings they were computed from (None when given).
    n: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NormStats:
        return cls(float(data["mean"]), float(data["stdev"]), str(data["source"]), data.get("n"))


async def rate_responses(user: str, responses: Sequence[str], raters: Sequence[Rater]) -> list[list[RawRating]]:
    """Every response rated by every rater, concurrently; [response][rater]."""
    jobs = [rater.rate(user, response) for response in responses for rater in raters]
    flat = await asyncio.gather(*jobs)
    width = len(raters)
    return [list(flat[i * width : (i + 1) * width]) for i in range(len(responses))]


def stats_from_scores(name: str, scores: Sequence[float]) -> NormStats:
    """Mean and population std of a rater's baseline scores; a constant rater is an error."""
    if len(scores) < 2:
        raise JudgeError(f"baseline: rater {name} has {len(scores)} rating(s); at least 2 are needed for a stdev")
    mean = sum(scores) / len(scores)
    stdev = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    if stdev == 0:
        raise JudgeError(
            f"baseline: rater {name} gave every one of its {len(scores)} baseline responses the same "
            f"score ({scores[0]:g}), so its stdev is 0 and normalized scores would be meaningless; "
            "add baseline user prompts or responses, or give 'stats: {mean, stdev}' for this rater"
        )
    return NormStats(mean, stdev, "baseline", len(scores))


def build_attack(
    system: str,
    user: str,
    responses: Sequence[str],
    raw: Sequence[Sequence[RawRating]],
    raters: Sequence[Rater],
    stats: dict[str, NormStats],
) -> Attack:
    """The schema Attack with raw and normalized scores (and the judge's reasoning)."""
    rated = []
    for text, row in zip(responses, raw, strict=True):
        ratings = []
        for rater, r in zip(raters, row, strict=True):
            norm = stats[rater.name]
            fields: dict[str, Any] = {**r.aux, "normalized_score": normalize(r.score, norm.mean, norm.stdev)}
            if r.reasoning is not None:
                fields["reasoning"] = r.reasoning
            aux = RatingAuxInfo(**fields)
            ratings.append(Rating(raw_score=r.score, rater=RaterInfo(model_name=rater.name, rating_function_type=rater.kind), aux_info=aux))
        rated.append(RatedResponse(assistant=text, ratings=ratings))
    return Attack(system=system, user=user, responses=rated, aux_info=AttackAuxInfo())
