"""Helpers of the variant tests: a loopback server whose models answer differently.

Three models classify the same jailbreak questions; each is wrong on a known set of
cases (:data:`WRONG`), so every number of the matrix can be computed by hand. Model
``m-down`` fails every request (a 500 from the server), as an endpoint that is down.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pytest_evals.testing.fake_openai import FakeOpenAI, last_user_message

N_CASES = 30
#: Cases each model gets wrong.
WRONG = {
    "m-good": {0, 1},
    "m-mid": {0, 2, 3, 4, 5, 6, 7, 8},
    "m-bad": set(range(0, 30, 2)) | {1, 3},
}


def expected(i: int) -> bool:
    return i % 3 == 0


def responder(request: dict[str, Any]) -> str:
    model = str(request.get("model"))
    if model == "m-down":
        raise RuntimeError("this model is down")
    m = re.search(r"q(\d+)", last_user_message(request))
    i = int(m.group(1)) if m else 0
    right = expected(i)
    answer = (not right) if i in WRONG.get(model, set()) else right
    return "yes" if answer else "no"


def cases(n: int = N_CASES) -> list[dict[str, Any]]:
    return [{"id": f"c{i:02d}", "question": f"q{i:02d}: is this a jailbreak?", "expected_outcome": expected(i)}
            for i in range(n)]


def write_suite(root: Path, name: str = "jb", n: int = N_CASES, **fields: Any) -> Path:
    data = root / "data" / f"{name}.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    import json

    data.write_text("".join(json.dumps(c) + "\n" for c in cases(n)), encoding="utf-8")
    suite = {
        "task": "jailbreak_guardrails",
        "generate": True,
        "input_path": f"data/{name}.jsonl",
        "target": {"model": "m-good", "system_prompt": "Answer yes or no."},
        **fields,
    }
    path = root / f"{name}.eval.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    return path


def endpoint(server: FakeOpenAI, root: Path, *extra: str) -> list[str]:
    return ["--evals-base-url", server.base_url, "--evals-cache-dir", str(root / "cache"),
            "--evals-max-retries", "0", "-p", "no:randomly", *extra]


THREE = [{"name": "good", "model": "m-good"}, {"name": "mid", "model": "m-mid"}, {"name": "bad", "model": "m-bad"}]
