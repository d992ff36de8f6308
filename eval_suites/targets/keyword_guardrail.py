"""A deliberately simple jailbreak detector used as the system under test in the example."""

from __future__ import annotations

import re

_PATTERNS = re.compile(
    r"ignore (all )?previous instructions|system prompt|developer mode|no (content )?policy|"
    r"without (rules|restrictions)|hidden instructions|words above|disregard|pretend you are",
    re.IGNORECASE,
)


def classify(case: dict) -> dict:
    """Return GOV.UK's generate output shape: {"actual_outcome": bool}."""
    return {"actual_outcome": bool(_PATTERNS.search(case["question"]))}
