"""With many failing cases the terminal shows the first N in full, then one line; every
case stays in the result files (issue 30, attack 12)."""

from __future__ import annotations

import json
import re

import pytest

from tests.core.core_helpers import jb, write_jsonl, write_suite

PLAIN_TESTS = """
import pytest

@pytest.mark.parametrize("i", range(3))
def test_ordinary(i):
    assert i < 0
"""

FAILING, PASSING, BROKEN = 60, 20, 5


def _build(pytester: pytest.Pytester) -> None:
    rows: list[object] = [jb(True, False, case_id=f"f-{i:03d}") for i in range(FAILING)]
    rows += [jb(True, True, case_id=f"p-{i:03d}") for i in range(PASSING)]
    rows += ["{not json" for _ in range(BROKEN)]  # input errors: ERROR items
    write_jsonl(pytester.path, "data/cases.jsonl", rows)  # type: ignore[arg-type]
    write_suite(pytester.path, "many.eval.yaml", task="jailbreak_guardrails", input_path="data/cases.jsonl")
    pytester.makepyfile(test_plain=PLAIN_TESTS)


def _blocks(out: str, pattern: str) -> int:
    return len(re.findall(pattern, out, flags=re.MULTILINE))


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_many_failures_are_summarised_past_the_limit(pytester: pytest.Pytester, xdist: bool) -> None:
    _build(pytester)
    args = ["-p", "no:cacheprovider", "-rfE", "--evals-max-failures-shown", "4", "--evals-report-dir", "runs",
            "--evals-json", "out/summary.json"]
    result = pytester.runpytest_subprocess(*args, *(["-n", "2"] if xdist else []), timeout=300)
    out = result.stdout.str()
    # The counts pytest prints are every outcome, whatever the terminal shows.
    result.assert_outcomes(failed=FAILING + 3, passed=PASSING, errors=BROKEN)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # FAILURES: four case blocks and every ordinary test's; ERRORS: four case blocks.
    assert _blocks(out, r"^_+ many::f-\d+ ") == 4, out
    assert _blocks(out, r"^_+ test_ordinary\[\d\] _+$") == 3, out
    assert _blocks(out, r"^_+ ERROR at setup of many::") == 4, out
    # The short test summary: the same four of each, every ordinary failure.
    assert _blocks(out, r"^FAILED many\.eval\.yaml::") == 4, out
    assert _blocks(out, r"^FAILED test_plain\.py::") == 3, out
    assert _blocks(out, r"^ERROR many\.eval\.yaml::") == 4, out
    # One line says how many more and where they are (under FAILURES and at the end).
    note = f"{FAILING - 4} more failed case(s) and {BROKEN - 4} more erroring case(s) not shown"
    assert out.count(note) == 2, out
    (run_folder,) = (pytester.path / "runs").iterdir()
    assert f"every case is in {run_folder / 'results.jsonl'}, out/summary.json" in out
    # Every case is in the files.
    rows = [json.loads(line) for line in (run_folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    statuses = [r["status"] for r in rows]
    assert (statuses.count("failed"), statuses.count("passed"), statuses.count("error")) == (FAILING, PASSING, BROKEN)
    summary = json.loads((pytester.path / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["suites"][0]["cases"]["failed"] == FAILING


def test_the_default_shows_fifty_and_all_shows_every_one(pytester: pytest.Pytester) -> None:
    _build(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rfE", timeout=300)
    out = result.stdout.str()
    assert _blocks(out, r"^_+ many::f-\d+ ") == 50
    assert _blocks(out, r"^FAILED many\.eval\.yaml::") == 50
    assert "10 more failed case(s) not shown" in out
    assert "run with --evals-report-dir DIR or --evals-json PATH" in out
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rfE", "-o", "evals_terminal_failures=all",
                                           timeout=300)
    out = result.stdout.str()
    assert _blocks(out, r"^_+ many::f-\d+ ") == FAILING
    assert _blocks(out, r"^FAILED many\.eval\.yaml::") == FAILING
    assert "not shown" not in out


def test_a_bad_limit_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _build(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-max-failures-shown", "many", timeout=120)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-max-failures-shown: expected a number of cases >= 0 or 'all', got 'many'*"])


def test_with_tb_no_the_short_summary_is_still_capped(pytester: pytest.Pytester) -> None:
    """--tb=no prints no failure section (so no passing report is scanned for teardown
    output), and the short test summary keeps its cap and its note."""
    _build(pytester)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rfE", "--tb=no", "--evals-max-failures-shown", "4", timeout=300
    )
    out = result.stdout.str()
    result.assert_outcomes(failed=FAILING + 3, passed=PASSING, errors=BROKEN)
    assert _blocks(out, r"^_+ many::f-\d+ ") == 0, out
    assert _blocks(out, r"^FAILED many\.eval\.yaml::") == 4, out
    assert _blocks(out, r"^FAILED test_plain\.py::") == 3, out
    assert _blocks(out, r"^ERROR many\.eval\.yaml::") == 4, out
    assert f"{FAILING - 4} more failed case(s) and {BROKEN - 4} more erroring case(s) not shown" in out
