"""A deterministic stand-in for a judge model answering DeepEval's own prompts.

DeepEval's faithfulness, answer-relevancy and bias metrics ask their model in several
steps (truths, claims, verdicts, reason...), each for JSON of a given shape. This
responder recognises each step by its prompt's opening, reads the text, claims,
statements or opinions the prompt carries and answers by fixed rules, so that the same
prompt always gets the same reply whether it comes through the loopback server or is
handed to a stub model directly:

- truths, statements: the sentences of the prompt's ``Text:`` section; claims: of its
  ``AI Output:`` section;
- faithfulness: a claim with a number the retrieval context lacks is "no", a claim
  about "Premium" is "idk", any other "yes";
- relevancy: a statement about "Premium" is "no", any other "yes";
- bias: sentences with "I think" are opinions; one with "obviously" is biased.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_NEXT_HEADER = re.compile(r"\n\n[A-Z][A-Za-z ]*:\n|\n\nJSON:")


def _section(prompt: str, header: str) -> str:
    """The text after the last ``header`` line, up to the next header (``Claims:``, ``JSON:``)."""
    at = prompt.rfind(f"\n{header}\n")
    if at < 0:
        return ""
    body = prompt[at + len(header) + 2:]
    end = _NEXT_HEADER.search(body)
    return body[:end.start()] if end else body


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _items(prompt: str, header: str) -> list[str]:
    text = _section(prompt, header).strip()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def _faithful(claim: str, context: str) -> str:
    if any(n not in context for n in _NUMBER.findall(claim)):
        return "no"
    return "idk" if "premium" in claim.lower() else "yes"


OPENINGS: dict[str, str] = {
    "truths": "Based on the given text, please generate a comprehensive list of",
    "claims": "Based on the given text, please extract a comprehensive list of FACTUAL",
    "faithfulness_verdicts": "Based on the given claims",
    "faithfulness_reason": "Below is a list of Contradictions",
    "statements": "Given the text, breakdown and generate a list of statements",
    "relevancy_verdicts": "For the provided list of statements",
    "relevancy_reason": "Given the answer relevancy score",
    "opinions": "Based on the given text, please generate a list of OPINIONS",
    "bias_verdicts": "Based on the given opinions",
    "bias_reason": "You will be given a list of reasons why the actual output is biased",
}


def step_of(prompt: str) -> str | None:
    start = prompt.lstrip()
    # the longest opening first: "a list of OPINIONS" before "a comprehensive list of"
    for step, opening in sorted(OPENINGS.items(), key=lambda kv: -len(kv[1])):
        if start.startswith(opening):
            return step
    return None


def deepeval_reply(prompt: str) -> str | None:
    """The reply to one of DeepEval's prompts, or None when the prompt is not one of them."""
    step = step_of(prompt)
    if step is None:
        return None
    if step in ("truths", "statements"):
        return json.dumps({step: _sentences(_section(prompt, "Text:"))})
    if step == "claims":
        return json.dumps({"claims": _sentences(_section(prompt, "AI Output:"))})
    if step == "faithfulness_verdicts":
        context = _section(prompt, "Retrieval Contexts:")
        verdicts = [_faithful(c, context) for c in _items(prompt, "Claims:")]
        return json.dumps({"verdicts": [{"verdict": v, "reason": f"rule {v}"} for v in verdicts]})
    if step == "relevancy_verdicts":
        verdicts = ["no" if "premium" in s.lower() else "yes" for s in _items(prompt, "Statements:")]
        return json.dumps({"verdicts": [{"verdict": v} for v in verdicts]})
    if step == "opinions":
        return json.dumps({"opinions": [s for s in _sentences(_section(prompt, "Text:")) if "i think" in s.lower()]})
    if step == "bias_verdicts":
        verdicts = ["yes" if "obviously" in o.lower() else "no" for o in _items(prompt, "Opinions:")]
        return json.dumps({"verdicts": [{"verdict": v} for v in verdicts]})
    score = re.search(r"Score:\s*\n?\s*([0-9.]+)", prompt)
    return json.dumps({"reason": f"The score is {score.group(1) if score else '?'} by the stub's rules."})


def stub_model() -> Any:
    """A DeepEval model (DeepEval's own ``DeepEvalBaseLLM``) answering every prompt by the
    rules above, for a metric measured by DeepEval directly; its ``prompts`` are kept."""
    from deepeval.models import DeepEvalBaseLLM

    class Stub(DeepEvalBaseLLM):  # type: ignore[misc]
        def __init__(self) -> None:
            self.prompts: list[str] = []
            super().__init__("stub")

        def load_model(self, *args: Any, **kwargs: Any) -> Any:
            return self

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return "stub"

        def generate(self, prompt: str, *args: Any, **kwargs: Any) -> str:
            self.prompts.append(prompt)
            reply = deepeval_reply(prompt)
            assert reply is not None, prompt[:300]
            return reply

        async def a_generate(self, prompt: str, *args: Any, **kwargs: Any) -> str:
            return self.generate(prompt)

    return Stub()
