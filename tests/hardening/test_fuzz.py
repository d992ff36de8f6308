"""Fuzzing the two inputs a user hands the plugin: JSONL case lines and suite YAML.

Whatever the bytes, the session must end normally (exit 0 or 1: never interrupted,
internal error or usage error), every collected item must be reported, and every
non-blank JSONL line must be one case (passed, failed or erroring).
"""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.core.core_helpers import jb, jb_suite

FUZZ_SETTINGS = settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

ADVERSARIAL_LINES = [
    b'{"id": "deep", "question": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    b"[" * 120_000,
    b'{"id": "\\ud800", "question": "q", "expected_outcome": true, "actual_outcome": true}',
    b'{"id": "a::b [c]", "question": "\\udfff", "expected_outcome": false, "actual_outcome": false}',
    b'{"id": "dup", "question": "q", "expected_outcome": true, "actual_outcome": true}',
    b'{"id": "dup", "question": "q", "expected_outcome": true, "actual_outcome": true}',
    b'{"id": 1e999999, "question": NaN, "expected_outcome": Infinity}',
    b'{"id": null, "expected_outcome": "true", "actual_outcome": 1}',
    b'{"id": {"nested": 1}, "question": 5}',
    b"\xff\xfe\x00garbage",
    b"\xef\xbb\xbf{}",
    b"\x00" * 64,
    b'"just a string"',
    b"[]",
    b"\r",
    b"   \t ",
    b'{"id": "cr"}\r',
    b"x" * 70_000,
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)
case_objects = st.fixed_dictionaries(
    {},
    optional={
        "id": json_values,
        "question": json_values,
        "expected_outcome": json_values,
        "actual_outcome": json_values,
    },
).map(lambda d: json.dumps(d).encode())
valid_cases = st.builds(
    lambda e, a, q: json.dumps(jb(e, a, question=q)).encode(), st.booleans(), st.booleans(), st.text(max_size=40)
)
raw_lines = st.binary(max_size=200) | st.text(max_size=80).map(lambda t: t.encode("utf-8", "surrogatepass"))
lines = st.lists(
    st.one_of(st.sampled_from(ADVERSARIAL_LINES), case_objects, valid_cases, raw_lines).map(
        lambda b: b.replace(b"\n", b" ")
    ),
    min_size=0,
    max_size=12,
)


def expected_cases(rows: list[bytes]) -> int:
    """Non-blank lines (after a leading BOM and the line ending), or 1 for the file's error."""
    count = 0
    for i, row in enumerate(rows):
        body = row[3:] if i == 0 and row.startswith(b"\xef\xbb\xbf") else row
        if body.rstrip(b"\r\n").strip():
            count += 1
    return count or 1


def check_run(result: pytest.RunResult) -> dict[str, int]:
    out = result.stdout.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), out[-3000:]
    assert "INTERNALERROR" not in out
    outcomes = result.parseoutcomes()
    collected = int(re.search(r"collected (\d+) items?", out).group(1))  # type: ignore[union-attr]
    reported = sum(outcomes.get(k, 0) for k in ("passed", "failed", "errors", "skipped"))
    assert reported == collected, out[-3000:]
    return outcomes


@FUZZ_SETTINGS
@given(rows=lines)
@example(rows=ADVERSARIAL_LINES)
def test_fuzzed_jsonl_lines_are_each_one_case(pytester: pytest.Pytester, rows: list[bytes]) -> None:
    (pytester.path / "data").mkdir(exist_ok=True)
    (pytester.path / "data" / "fuzz.jsonl").write_bytes(b"".join(r + b"\n" for r in rows))
    (pytester.path / "fuzz.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: data/fuzz.jsonl\n", encoding="utf-8"
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-o", "evals_max_line_bytes=65536")
    outcomes = check_run(result)
    assert sum(outcomes.get(k, 0) for k in ("passed", "failed", "errors")) == expected_cases(rows)


ADVERSARIAL_YAML = [
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)),
    "a: &a [*a]\n",
    "[" * 50_000,
    "!!python/object/apply:os.system ['echo pwned']\n",
    "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nthresholds: {accuracy: .nan}\n",
    "task: jailbreak_guardrails\ninput_path: data/good.jsonl\ngenerate: 'yes'\n",
    "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nn_runs: 1e400\n",
    "task: jailbreak_guardrails\ninput_path: /dev/zero\n",
    "task: jailbreak_guardrails\ninput_path: [1, 2]\n",
    "task: [jailbreak_guardrails]\n",
    "task: jailbreak_guardrails\ninput_path: data/good.jsonl\nmetrics: [{name: x, threshold: .inf}]\n",
    "\ud800: 1\n",
    "",
    "---\n---\n",
]
suite_fields = st.fixed_dictionaries(
    {"task": st.just("jailbreak_guardrails"), "input_path": st.just("data/good.jsonl")},
    optional={
        "generate": json_values,
        "n_runs": json_values,
        "thresholds": json_values,
        "metrics": json_values,
        "what": json_values,
        "name": st.text(max_size=20),
    },
).map(lambda d: yaml.safe_dump(d, allow_unicode=True))
suite_texts = st.one_of(st.sampled_from(ADVERSARIAL_YAML), suite_fields, st.text(max_size=200))


@FUZZ_SETTINGS
@given(text=suite_texts)
def test_fuzzed_suite_yaml_never_stops_the_other_suites(pytester: pytest.Pytester, text: str) -> None:
    if not (pytester.path / "good.eval.yaml").exists():
        jb_suite(pytester.path, "good", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    (pytester.path / "fuzz.eval.yaml").write_bytes(text.encode("utf-8", "surrogatepass"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    outcomes = check_run(result)
    # The good suite's two cases always ran; the fuzzed suite is at least one item.
    result.stdout.fnmatch_lines(["PASSED good.eval.yaml::a", "PASSED good.eval.yaml::b"])
    assert sum(outcomes.values()) >= 3


def test_every_adversarial_yaml_in_one_run(pytester: pytest.Pytester) -> None:
    """The hand-written attacks, each its own suite file, all in one session."""
    jb_suite(pytester.path, "good", [jb(True, True, case_id="a"), jb(False, False, case_id="b")])
    for i, text in enumerate(ADVERSARIAL_YAML):
        (pytester.path / f"attack{i:02d}.eval.yaml").write_bytes(text.encode("utf-8", "surrogatepass"))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    check_run(result)
    result.stdout.fnmatch_lines(["PASSED good.eval.yaml::a", "PASSED good.eval.yaml::b"])
    for i in range(len(ADVERSARIAL_YAML)):
        assert f"attack{i:02d}.eval.yaml::" in result.stdout.str(), f"attack{i:02d} was not reported"
