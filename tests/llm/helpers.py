"""Helpers of the end-to-end (pytester) tests of the LLM layer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI

PROBE_TASK = Path(__file__).with_name("probe_task.py")

CONFTEST = """
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
from pytest_evals.tasks import register_task
register_task("llm_probe", "probe_task:Probe")
"""


def probe_suite(
    pytester: pytest.Pytester, prompts: list[str], name: str = "probe", **fields: Any
) -> Path:
    """A ``task: llm_probe`` suite asking each prompt (the echo server replies with it)."""
    if not (pytester.path / "probe_task.py").exists():
        (pytester.path / "probe_task.py").write_text(
            PROBE_TASK.read_text(encoding="utf-8"), encoding="utf-8"
        )
        pytester.makeconftest(CONFTEST)
    cases = [{"id": f"c{i}", "prompt": p, "expect": p} for i, p in enumerate(prompts)]
    (pytester.path / f"{name}.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8"
    )
    suite = {"task": "llm_probe", "input_path": f"{name}.jsonl", **fields}
    path = pytester.path / f"{name}.eval.yaml"
    path.write_text(json.dumps(suite), encoding="utf-8")  # JSON is YAML
    return path


def answered_prompts(server: FakeOpenAI) -> Counter[str]:
    """How many times the server answered (200) each prompt."""
    return Counter(entry["prompt"] for entry in server.log() if entry.get("outcome") == "ok")


def endpoint_args(server: FakeOpenAI, cache_dir: Path, *extra: str) -> list[str]:
    return ["--evals-base-url", server.base_url, "--evals-cache-dir", str(cache_dir), *extra]
