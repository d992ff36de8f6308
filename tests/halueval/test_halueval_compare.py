"""``pytest-evals compare``: paired outcomes from result files, McNemar, difference CI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_evals.cli.compare_runs import compare_pairs
from pytest_evals.cli.main import main
from pytest_evals.families.halueval.outcomes import RunFileError, load_outcomes, pair
from pytest_evals.stats import intervals as stats
from pytest_evals.stats.paired_proportions import paired_proportion_ci


def result_line(case_id: str, status: str, suite: str = "eval_suites/halueval.eval.yaml", **data: object) -> str:
    record = {
        "suite": suite, "task": "halueval", "case_id": case_id, "source": "x", "status": status,
        "scores": {}, "data": data, "details": {}, "message": None, "error_kind": None, "usage": {},
        "duration": 0.0,
    }
    return json.dumps(record) + "\n"


def write_run(path: Path, statuses: dict[str, str], suite: str = "eval_suites/halueval.eval.yaml") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(result_line(cid, st, suite, task_type=cid.split("-")[0]) for cid, st in statuses.items()),
        encoding="utf-8",
    )
    return path


def test_compare_pairs_by_hand() -> None:
    pairs = [(True, True)] * 50 + [(True, False)] * 3 + [(False, True)] * 12 + [(False, False)] * 35
    r = compare_pairs(pairs)
    assert (r.n, r.both_right, r.only_a, r.only_b, r.both_wrong) == (100, 50, 3, 12, 35)
    assert r.accuracy_a == pytest.approx(0.53)
    assert r.accuracy_b == pytest.approx(0.62)
    assert r.difference == pytest.approx(0.09)
    # exact McNemar: 2 * P(X <= 3), X ~ Bin(15, 1/2)
    from math import comb

    assert r.p_value == pytest.approx(2 * sum(comb(15, i) for i in range(4)) / 2**15)
    assert r.ci_low is not None and r.ci_high is not None
    assert r.ci_low < 0.09 < r.ci_high
    assert r.ci_low > 0  # 12 vs 3 discordant pairs: B is better


def test_identical_runs() -> None:
    r = compare_pairs([(True, True)] * 7 + [(False, False)] * 3)
    assert r.difference == 0 and r.p_value == 1.0
    # Tango's score interval with no discordant pair: at delta > 0 the restricted estimate
    # is q21 = delta, so the limit solves (n delta - 1/2)^2 = z^2 n delta (1 - delta):
    # n^2 (1 + z^2 / n) delta^2 - n (1 + z^2) delta + 1/4 = 0, the larger root
    z2, n = stats.Z95**2, 10
    qa, qb = n * n + z2 * n, n + z2 * n
    half = (qb + (qb * qb - qa) ** 0.5) / (2 * qa)
    assert (r.ci_low, r.ci_high) == pytest.approx((-half, half), abs=1e-12)
    assert 0.25 < half < 0.35  # ten cases say little, however alike the runs


def test_difference_interval_covers_about_95_percent() -> None:
    """Coverage of the paired interval on simulated runs with a known true difference."""
    rng = random.Random(7)
    # joint probabilities of (A right, B right): both .5, only A .1, only B .2, neither .2
    cells = [(True, True)] * 5 + [(True, False)] * 1 + [(False, True)] * 2 + [(False, False)] * 2
    true_diff = 0.2 - 0.1
    covered = 0
    sims = 1000
    for _ in range(sims):
        sample = [rng.choice(cells) for _ in range(120)]
        r = compare_pairs(sample)
        assert r.ci_low is not None and r.ci_high is not None
        covered += r.ci_low <= true_diff <= r.ci_high
    assert 0.92 <= covered / sims <= 0.98, covered / sims


def test_ci_degenerate_inputs() -> None:
    assert paired_proportion_ci(0, 0, 0, 0) is None
    low, high = paired_proportion_ci(0, 0, 10, 0)  # type: ignore[misc]
    assert -1.0 <= low <= high <= 1.0 and high == pytest.approx(1.0)


def test_load_and_pair_from_results_files(tmp_path: Path) -> None:
    a = write_run(tmp_path / "a" / "2024-01-01T00-00-00" / "results.jsonl",
                  {"qa-1": "passed", "qa-2": "failed", "general-5": "passed", "qa-9": "error", "qa-10": "passed"})
    b = write_run(tmp_path / "b.jsonl", {"qa-1": "failed", "qa-2": "passed", "general-5": "passed", "qa-9": "passed", "dialogue-3": "passed"})
    run_a = load_outcomes(tmp_path / "a")  # a base folder: its newest run folder is used
    run_b = load_outcomes(b)
    assert run_a.no_verdict == 1
    pairs, unpaired = pair(run_a, run_b)
    assert [(p.case_id, p.a, p.b, p.group) for p in pairs] == [
        ("general-5", True, True, "general"), ("qa-1", True, False, "qa"), ("qa-2", False, True, "qa"),
    ]
    assert unpaired == {"only_in_a": 1, "only_in_b": 1, "without_verdict": 1}
    assert a.exists()


def test_several_suites_need_a_choice(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text(
        result_line("qa-1", "passed", "s/gpt.eval.yaml") + result_line("qa-1", "failed", "s/claude.eval.yaml"),
        encoding="utf-8",
    )
    with pytest.raises(RunFileError, match="several suites"):
        load_outcomes(path)
    assert load_outcomes(path, "gpt").items["qa-1"].correct is True
    assert load_outcomes(path, "s/claude.eval.yaml").items["qa-1"].correct is False
    with pytest.raises(RunFileError, match="no results of suite 'mistral'"):
        load_outcomes(path, "mistral")


def test_summary_without_per_case_results_is_explained(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"schema_version": 1, "suites": [{"suite": "x", "metrics": {}}]}), encoding="utf-8")
    with pytest.raises(RunFileError, match="no per-case results"):
        load_outcomes(summary)
    # a summary that points at its results file is followed
    write_run(tmp_path / "run" / "results.jsonl", {"qa-1": "passed"})
    summary.write_text(json.dumps({"results_path": "run/results.jsonl", "suites": []}), encoding="utf-8")
    assert load_outcomes(summary).items["qa-1"].correct is True
    # or per-suite statuses
    summary.write_text(json.dumps({"suites": [{"suite": "x", "case_status": {"qa-1": "failed"}}]}), encoding="utf-8")
    assert load_outcomes(summary).items["qa-1"].correct is False


def test_compare_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = [f"qa-{i}" for i in range(1, 41)] + [f"general-{i}" for i in range(1, 21)]
    rng = random.Random(3)
    sa = {i: rng.choice(["passed", "failed"]) for i in ids}
    sb = {i: ("passed" if rng.random() < 0.8 else "failed") for i in ids}
    a = write_run(tmp_path / "a.jsonl", sa)
    b = write_run(tmp_path / "b.jsonl", sb)
    out_json = tmp_path / "cmp.json"
    assert main(["compare", str(a), str(b), "--json", str(out_json)]) == 0
    text = capsys.readouterr().out
    assert "McNemar p" in text and "\nqa " in text and "\ngeneral " in text
    data = json.loads(out_json.read_text(encoding="utf-8"))
    allc = data["comparisons"]["all"]
    b_count = sum(1 for i in ids if sa[i] == "passed" and sb[i] == "failed")
    c_count = sum(1 for i in ids if sa[i] == "failed" and sb[i] == "passed")
    assert (allc["only_a"], allc["only_b"], allc["n"]) == (b_count, c_count, 60)
    assert allc["p_value"] == stats.mcnemar_exact(b_count, c_count)
    assert data["comparisons"]["general"]["n"] == 20
    # unusable input: exit status 2 and a message
    assert main(["compare", str(a), str(tmp_path / "missing.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
