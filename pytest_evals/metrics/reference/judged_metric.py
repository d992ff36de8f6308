"""An LLM judge that rates an output on a rubric, through the session's judge.

The judge sees the prompt, the output and (unless ``use_references`` is false) every
reference at once, and answers ``{"rating": n, "reasoning": "..."}`` on the rubric's
scale; the score is the rating rescaled to [0, 1]. One request per instance, all of
them in flight together on the session's client (cached, rate-limited, retried).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from pytest_evals.metrics.reference.reference_metric import (
    MetricParams,
    Pair,
    ReferenceMetric,
    Result,
)

if TYPE_CHECKING:
    from pytest_evals.tasks.eval_context import EvalContext

DEFAULT_RUBRIC = (
    "How well does the response do what the prompt asks? Judge correctness and "
    "completeness of meaning first, then fluency. When reference answers are given, a "
    "response that conveys the same meaning as any one of them deserves the top rating, "
    "even if its wording differs."
)

JUDGE_SYSTEM = (
    "You are a careful evaluator of language model outputs. You rate one response on the "
    "rubric you are given and explain the rating in one or two sentences. You answer with "
    "a single JSON object and nothing else."
)

JUDGE_TEMPLATE = """Rubric: {rubric}

Rating scale: integers from {low} (worst) to {high} (best).

Prompt given to the model:
<prompt>
{prompt}
</prompt>
{references}
Model response to rate:
<response>
{response}
</response>

Answer with JSON: {{"reasoning": "<why>", "rating": <integer from {low} to {high}>}}"""

REFERENCES_BLOCK = "\nReference answers (any one of them is a correct answer):\n{items}\n"


class JudgeParams(MetricParams):
    rubric: str = Field(default=DEFAULT_RUBRIC, min_length=1)
    scale_min: int = 1
    scale_max: int = 5
    #: Show the instance's references to the judge (when it has any).
    use_references: bool = True
    #: Judge model and temperature; default: the session's (--evals-model).
    model: str | None = None
    temperature: float | None = None

    @model_validator(mode="after")
    def _scale(self) -> JudgeParams:
        if self.scale_max <= self.scale_min:
            raise ValueError("scale_max must be greater than scale_min")
        return self


class Rating(BaseModel):
    reasoning: str = ""
    rating: int


class LlmJudge(ReferenceMetric):
    id = "llm_judge"
    params_model = JudgeParams
    keys = ("score",)
    primary = "score"
    bounds = (("score", 0.0, 1.0),)
    supervised = False
    uses_judge = True
    library = "pytest_evals judge (LLM layer)"
    description = "LLM rating on a rubric, rescaled to [0, 1] (references shown when given)"
    params: JudgeParams

    def messages(self, pair: Pair) -> list[dict[str, str]]:
        p = self.params
        refs = ""
        if p.use_references and pair.references:
            items = "\n".join(f"<reference>\n{r}\n</reference>" for r in pair.references)
            refs = REFERENCES_BLOCK.format(items=items)
        user = JUDGE_TEMPLATE.format(
            rubric=p.rubric, low=p.scale_min, high=p.scale_max, prompt=pair.input,
            references=refs, response=pair.hypothesis,
        )
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def result_from(self, rating: Rating) -> Result:
        from pytest_evals.model.errors import JudgeError

        p = self.params
        if not p.scale_min <= rating.rating <= p.scale_max:
            raise JudgeError(f"llm_judge: rating {rating.rating} is outside the scale {p.scale_min}-{p.scale_max}")
        score = (rating.rating - p.scale_min) / (p.scale_max - p.scale_min)
        return {"score": score, "rating": rating.rating, "reasoning": rating.reasoning}

    async def judge(self, pair: Pair, ctx: EvalContext, *, namespace: str) -> Result:
        """Rate one pair; ``namespace`` is the response cache's (the calling task's name)."""
        rating, _response = await ctx.judge.json(
            self.messages(pair), schema=Rating, namespace=namespace,
            model=self.params.model, temperature=self.params.temperature,
        )
        return self.result_from(rating)

    def warm_up(self) -> None:
        """Nothing to load: the judge is the session's LLM client."""

    def score_single(self, hypotheses: Sequence[str], references: Sequence[str]) -> list[Result]:
        raise TypeError("llm_judge is asynchronous: use LlmJudge.judge(pair, ctx, namespace=...)")

    def mean_score(self, results: Sequence[Result]) -> Result:
        score = super().mean_score(results)
        ratings = [float(r["rating"]) for r in results if r.get("rating") is not None]
        score["rating"] = sum(ratings) / len(ratings) if ratings else None
        return score

    def describe(self) -> dict[str, Any]:
        return {"rubric": self.params.rubric}
