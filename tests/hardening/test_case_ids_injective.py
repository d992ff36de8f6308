"""Distinct case ids never share a node id (issue 30, attack 15).

Node ids cannot hold whitespace, ``::`` or brackets, so such ids are made safe; two ids
made safe alike (``a::b``, ``a\\nb``, ``a\\tb``; ``q 1`` and ``q_1``) must still be two
cases, not a false duplicate-id ERROR. Ids that were already safe keep their exact node id.
"""

from __future__ import annotations

import pytest

from pytest_evals.suites.jsonl_cases import safe_id
from tests.core.core_helpers import collected_ids, jb, jb_suite

CLASHING = ["a::b", "a[1]", "a\nb", "a\tb", "a b", "a_b", "a_1_", "q 1", "q_1", "x\u00a0y", "x y", "[dup-2]"]


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_ids_made_safe_alike_stay_distinct_cases(pytester: pytest.Pytester, xdist: bool) -> None:
    jb_suite(pytester.path, "ids", [jb(True, True, case_id=cid) for cid in CLASHING])
    args = ["-p", "no:cacheprovider"] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args, timeout=60)
    result.assert_outcomes(passed=len(CLASHING))
    assert result.ret == pytest.ExitCode.OK
    assert "duplicate id" not in result.stdout.str()


def test_node_ids_are_distinct_and_safe_ids_unchanged(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "ids", [jb(True, True, case_id=cid) for cid in CLASHING])
    ids = collected_ids(pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider"))
    assert len(ids) == len(set(ids)) == len(CLASHING)
    assert "ids.eval.yaml::a_b" in ids and "ids.eval.yaml::q_1" in ids and "ids.eval.yaml::a_1_" in ids
    for node in ids:
        name = node.split("::", 1)[1]
        assert safe_id(name) == name  # made safe once, stable after


def test_a_real_duplicate_is_still_reported(pytester: pytest.Pytester) -> None:
    jb_suite(pytester.path, "ids", [jb(True, True, case_id="a b"), jb(True, True, case_id=" a b ")])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*data/ids.jsonl:2: duplicate id 'a b' (first used at line 1)*"])
