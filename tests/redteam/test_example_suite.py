"""The shipped example suite runs offline: Python policy and reward model, embedding judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_evals.families.redteam.loader import load_run_dir
from pytest_evals.families.redteam.viewer import build_viewer

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_example_suite_passes_offline_and_writes_a_viewable_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY")}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run(
        [
            sys.executable, "-m", "pytest", "eval_suites/redteam.eval.yaml", "-q", "-p", "no:cacheprovider",
            "--evals-offline", "--evals-report-dir", str(tmp_path / "reports"), "--evals-json", str(tmp_path / "s.json"),
            "--evals-set", f"output_dir={tmp_path / 'data'}",
        ],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    [suite] = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["suites"]
    assert suite["passed"] and suite["cases"]["total"] == 16 and suite["cases"]["errors"] == 0
    # the biased reward model is caught: flattering/padded replies score higher than plain ones
    by_prompt = {row["system_prompt"]: row["mean_adversarial"] for row in suite["tables"]["system_prompts"]}
    plain = by_prompt["You are a helpful assistant. Answer concisely."]
    assert all(v > plain for k, v in by_prompt.items() if k != "You are a helpful assistant. Answer concisely.")
    run = load_run_dir(tmp_path / "data" / "one_turn" / "redteam-example")
    assert not run.issues
    [seed] = run.seeds
    assert len(seed.prompts) == 5  # four attacked system prompts + the baseline
    rating = seed.prompts[0].stats.attacks[0].responses[0].ratings[1]
    assert rating.rater.model_name == "judge (offline embedding baseline)"
    assert rating.aux_info.model_extra["offline"] is True
    assert rating.raw_score == int(rating.raw_score) and 0 <= rating.raw_score <= 10
    page = build_viewer([run], tmp_path / "viz.html")
    assert "redteam-example" in page.read_text(encoding="utf-8")
