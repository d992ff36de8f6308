"""A scripted judge for the loopback OpenAI-compatible server.

DeepEval's prompts are answered by :mod:`.deepeval_script`'s rules.

The responder recognises which metric a request is for (by the opening line of its
prompt) and which case (by the question in the prompt), and replies from a script:
``{(metric, question): [reply for call 1, reply for call 2, ...]}``; the last reply
repeats. It records every request in full (the server's own log keeps 200 characters).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from pytest_evals.families.rag.prompts import PROMPTS
from pytest_evals.testing.fake_openai import last_user_message

from .deepeval_script import deepeval_reply

#: metric -> opening line of its prompt; both factual metrics share one prompt ("facts").
OPENINGS: dict[str, str] = {
    ("facts" if m.startswith("factual") else m): p.splitlines()[0] for m, p in PROMPTS.items()
}


def first_user_message(request: dict[str, Any]) -> str:
    for message in request.get("messages") or []:
        if message.get("role") == "user":
            return str(message.get("content"))
    return ""


def metric_of(prompt: str) -> str | None:
    for metric, opening in OPENINGS.items():
        if prompt.startswith(opening):
            return metric
    return None


def section(prompt: str, name: str) -> str:
    """The text under ``NAME:`` (or ``NAME (...):``) up to the next blank line + header."""
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(name) and line.endswith(":"):
            body: list[str] = []
            for follow in lines[i + 1 :]:
                if follow.isupper() and follow.endswith(":"):
                    break
                body.append(follow)
            return "\n".join(body).strip()
    return ""


def relevance(*verdicts: str, reason: str = "relevance reason") -> str:
    return json.dumps({"statements": [{"statement": f"s{i}", "verdict": v, "reason": "r"}
                                      for i, v in enumerate(verdicts)], "reason": reason})


def faithfulness(*verdicts: str, reason: str = "faithfulness reason") -> str:
    return json.dumps({"truths": ["t"], "claims": [{"claim": f"c{i}", "verdict": v}
                                                   for i, v in enumerate(verdicts)], "reason": reason})


def context_relevancy(*verdicts: str, reason: str = "context reason") -> str:
    return json.dumps({"needs": [{"need": f"n{i}", "verdict": v} for i, v in enumerate(verdicts)],
                       "reason": reason})


def coherence(score: int, reason: str = "coherence reason") -> str:
    return json.dumps({"reason": reason, "score": score})


def facts(tp: int, fp: int, fn: int, reason: str = "facts reason") -> str:
    return json.dumps({"TP": [f"tp{i}" for i in range(tp)], "FP": [f"fp{i}" for i in range(fp)],
                       "FN": [f"fn{i}" for i in range(fn)], "reason": reason})


def bias(*verdicts: str, reason: str = "bias reason") -> str:
    return json.dumps({"opinions": [{"opinion": f"o{i}", "verdict": v} for i, v in enumerate(verdicts)],
                       "reason": reason})


def contradictions(*verdicts: str, reason: str = "contradictions reason") -> str:
    return json.dumps({"truths": ["t"], "claims": [{"claim": f"c{i}", "verdict": v}
                                                   for i, v in enumerate(verdicts)], "reason": reason})


DEFAULTS: dict[str, str] = {
    "bias": bias("no"),
    "absence_of_factual_contradictions": contradictions("yes"),
    "relevance": relevance("yes"),
    "faithfulness": faithfulness("yes"),
    "context_relevancy": context_relevancy("yes"),
    "coherence": coherence(5),
    "facts": facts(1, 0, 0),
}


class ScriptedJudge:
    """Responder for ``FakeOpenAI(responder=...)``; targets (no known prompt) get ``target_reply``."""

    def __init__(self, script: dict[tuple[str, str], list[str] | str] | None = None,
                 target_reply: str = "An answer.") -> None:
        self.script = {k: ([v] if isinstance(v, str) else list(v)) for k, v in (script or {}).items()}
        self.target_reply = target_reply
        self.requests: list[dict[str, Any]] = []
        self.calls: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        prompt = first_user_message(request)
        metric = metric_of(prompt)
        with self._lock:
            self.requests.append(request)
            if metric is None:
                # DeepEval's own prompts (GOV.UK-shaped suites with DeepEval installed)
                # get rule-based replies; anything else is a target's question.
                return deepeval_reply(prompt) or self.target_reply
            key = (metric, section(prompt, "QUESTION"))
            n = self.calls[key]
            self.calls[key] += 1
        replies = self.script.get(key)
        if not replies:
            return DEFAULTS[metric]
        return replies[min(n, len(replies) - 1)]

    def prompts(self, metric: str) -> list[str]:
        """First user message of every request for ``metric`` (retries included)."""
        with self._lock:
            return [first_user_message(r) for r in self.requests if metric_of(first_user_message(r)) == metric]

    def last_messages(self) -> list[str]:
        with self._lock:
            return [last_user_message(r) for r in self.requests]
