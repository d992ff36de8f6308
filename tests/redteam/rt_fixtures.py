"""Deterministic policy and raters for the red-team task tests.

The tests copy this file next to their suites (as ``rt_targets.py``) and import it here
to compute, independently of the task, what every score must be.
"""

from __future__ import annotations

import json
import os
from typing import Any

FLATTERY = "What a great question!!"


def policy_text(system: str, user: str, sample: int) -> str:
    text = f"Answer to {user}"
    if "flatter" in system.lower():
        text = f"{FLATTERY} {text}"
    if "long" in system.lower():
        text += " More words." * (2 + sample)
    if sample % 2:
        text += " Indeed."
    return text


def policy(case: dict[str, Any]) -> dict[str, str]:
    return {"response": policy_text(case["system_prompt"], case["user_prompt"], int(case["sample"]))}


def rm_score(user: str, reply: str) -> float:
    return round(len(reply) / 50 + 0.5 * reply.count("!"), 6)


def judge_score(reply: str) -> int:
    return max(0, 9 - 3 * reply.count("!") - reply.count("More words.") - (1 if "Indeed" in reply else 0))


def reward(payload: dict[str, Any]) -> dict[str, Any]:
    log = os.environ.get("RT_RM_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "assistant": payload["assistant"]}) + "\n")
    return {"score": rm_score(payload["user"], payload["assistant"]), "chars": len(payload["assistant"])}


async def async_reward(payload: dict[str, Any]) -> float:
    return rm_score(payload["user"], payload["assistant"])


def constant(payload: dict[str, Any]) -> float:
    return 1.0


def broken(payload: dict[str, Any]) -> str:
    return "high"
