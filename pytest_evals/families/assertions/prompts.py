"""The judged assertions' prompts: your criteria, steps and examples in the judge's words.

Every prompt ends by asking for one JSON object; the judge layer re-asks (a distinct
cache entry) when a reply is not one, and a case whose judge never answers usably is an
ERROR carrying the reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_evals.families.assertions.config import JudgeBlock

DEFAULT_SYSTEM = (
    "You are an impartial evaluator of an AI system's outputs. You judge only by the "
    "criteria you are given, explain your judgement briefly, and reply with only the "
    "JSON object you are asked for."
)

RUBRIC_REPLY = (
    'Reply with a JSON object: {"reason": "<one or two sentences>", "score": <a number '
    "from 0 to 1>}, where 1 means the output fully meets the criteria and 0 that it does "
    "not meet them at all."
)

FACT_CHOICES = (
    '- "consistent": the submitted answer states the same facts as the ideal answer.\n'
    '- "subset": the submitted answer states only part of the ideal answer\'s facts and '
    "is consistent with it.\n"
    '- "superset": the submitted answer states all of the ideal answer\'s facts and more, '
    "consistent with it.\n"
    '- "disagrees": the submitted answer and the ideal answer disagree on a fact.'
)

RELEVANCE_CRITERIA = (
    "The output is relevant to the input: it addresses what was asked, answers it "
    "directly, and does not wander into unrelated topics. Correctness is not judged here."
)


def _block(title: str, text: str | None) -> str:
    return f"{title}:\n{text.strip()}\n\n" if text and text.strip() else ""


def _examples(judge: JudgeBlock, scale_text: str) -> str:
    if not judge.examples:
        return ""
    lines = [f"Examples of graded outputs ({scale_text}):"]
    for i, ex in enumerate(judge.examples, 1):
        lines.append(f"Example {i}:")
        if ex.input:
            lines.append(f"  Input: {ex.input}")
        lines.append(f"  Output: {ex.output}")
        lines.append(f"  Score: {ex.score:g}")
        if ex.reason:
            lines.append(f"  Reason: {ex.reason}")
    return "\n".join(lines) + "\n\n"


DOMAIN_SYSTEM = (
    "You are an impartial evaluator of the outputs of {domain}. You judge only by the "
    "criteria you are given, explain your judgement briefly, and reply with only the "
    "JSON object you are asked for."
)


def system_message(judge: JudgeBlock) -> str:
    if judge.system_prompt:
        return judge.system_prompt
    return DOMAIN_SYSTEM.format(domain=judge.domain.strip()) if judge.domain else DEFAULT_SYSTEM


def _messages(judge: JudgeBlock, user: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": system_message(judge)},
        {"role": "user", "content": user},
    ]


def _io(input_text: str | None, output: str) -> str:
    return _block("Input", input_text) + f"Output:\n{output}\n\n"


def rubric_messages(criteria: str, judge: JudgeBlock, input_text: str | None, output: str) -> list[dict[str, str]]:
    user = (
        "Grade the output against the criteria.\n\n"
        + _block("Criteria", criteria)
        + _block("Additional criteria", judge.criteria)
        + _examples(judge, "scores from 0 to 1")
        + _io(input_text, output)
        + RUBRIC_REPLY
    )
    return _messages(judge, user)


def default_steps(scale: tuple[int, int]) -> list[str]:
    lo, hi = scale
    return [
        "Read the input and the output carefully.",
        "Check, point by point, how well the output meets the evaluation criteria.",
        f"Assign a score from {lo} to {hi}, where {lo} means the criteria are not met at all "
        f"and {hi} that they are fully met.",
    ]


def g_eval_messages(
    criteria: str,
    steps: Sequence[str],
    scale: tuple[int, int],
    judge: JudgeBlock,
    input_text: str | None,
    output: str,
) -> list[dict[str, str]]:
    lo, hi = scale
    numbered = "\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1))
    user = (
        "You will rate an output on one metric, following the evaluation steps.\n\n"
        + _block("Evaluation criteria", criteria)
        + _block("Additional criteria", judge.criteria)
        + _block("Evaluation steps", numbered)
        + _examples(judge, f"scores from {lo} to {hi}")
        + _io(input_text, output)
        + f'Reply with a JSON object whose first key is the score: {{"score": <a whole number '
        f'from {lo} to {hi}>, "reason": "<one or two sentences>"}}.'
    )
    return _messages(judge, user)


def factuality_messages(
    judge: JudgeBlock, input_text: str | None, ideal: str, output: str
) -> list[dict[str, str]]:
    user = (
        "Compare the factual content of a submitted answer with an ideal answer. Ignore "
        "differences of style, wording, grammar or punctuation.\n\n"
        + _block("Question", input_text)
        + _block("Ideal answer", ideal)
        + _block("Submitted answer", output)
        + _block("Additional criteria", judge.criteria)
        + _examples(judge, "scores from 0 to 1")
        + f"Which one is true?\n{FACT_CHOICES}\n\n"
        + 'Reply with a JSON object: {"reason": "<one or two sentences>", "verdict": '
        '"consistent" | "subset" | "superset" | "disagrees"}.'
    )
    return _messages(judge, user)


def relevance_messages(judge: JudgeBlock, input_text: str, output: str) -> list[dict[str, str]]:
    return rubric_messages(RELEVANCE_CRITERIA, judge, input_text, output)
