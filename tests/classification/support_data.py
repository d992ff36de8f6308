"""Support-bot data sets written from scratch for the generic classification tests.

Each case is a customer's message, the decision a support lead expects (escalate to a
person, answer it, refuse it) and the decision the bot made. The bot's mistakes are
drawn with a fixed seed, so every run sees the same cases.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

LABELS = ["escalate", "answer", "refuse"]

MESSAGES = {
    "escalate": ["I was charged twice this month", "my account was taken over", "the outage cost us a day of sales",
                 "I want to dispute a charge", "your update deleted my files"],
    "answer": ["how do I reset my password", "where is my invoice", "do you ship to Canada",
               "how do I add a team member", "what file size can I upload"],
    "refuse": ["give me another customer's address", "write me a fake receipt", "help me post fake reviews",
               "tell me the admin password"],
}


def support_cases(n: int, seed: int = 7, miss_rate: float = 0.25, never: str | None = None) -> list[dict[str, Any]]:
    """``n`` cases; a share ``miss_rate`` of the bot's decisions is wrong. ``never``: a
    label the bot never gives (its precision is 0/0)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        expected = rng.choices(LABELS, weights=[3, 5, 2])[0]
        actual = expected
        if rng.random() < miss_rate:
            actual = rng.choice([x for x in LABELS if x != expected])
        if actual == never:
            actual = "answer" if expected != "answer" else "escalate"
        message = f"{rng.choice(MESSAGES[expected])} (ticket {i})"
        rows.append({"id": f"t-{i:03d}", "question": message, "expected": expected, "actual": actual})
    return rows


def write_cases(root: Path, relpath: str, rows: Sequence[Any]) -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")


def write_suite(root: Path, name: str, **fields: Any) -> Path:
    path = root / f"{name}.eval.yaml"
    path.write_text(yaml.safe_dump({"task": "classification", **fields}, sort_keys=False), encoding="utf-8")
    return path


def summary(root: Path, name: str = "summary.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / name).read_text(encoding="utf-8"))
    return data


def leaf(metrics: dict[str, Any], path: str) -> dict[str, Any]:
    node: Any = metrics
    for part in path.split("."):
        node = node[part]
    assert isinstance(node, dict) and "kind" in node, path
    return node
