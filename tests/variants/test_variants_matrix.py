"""Variants side by side: every number of the matrix is the number of that variant run
alone; the paired tests equal scipy's and statsmodels'; plain and -n 2 agree; a second
run makes no request; a variant that cannot answer is errors in its column only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from variant_helpers import N_CASES, THREE, WRONG, endpoint, expected, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI


def run(pytester: pytest.Pytester, server: FakeOpenAI, *extra: str, cache: str = "cache",
        out: str = "s.json", subprocess: bool = False) -> tuple[pytest.RunResult, dict[str, Any]]:
    args = endpoint(server, pytester.path, "--evals-json", out, *extra)
    args[args.index("--evals-cache-dir") + 1] = str(pytester.path / cache)
    if "-n" in extra or subprocess:
        result = pytester.runpytest_subprocess(*args)
    else:
        result = pytester.runpytest(*args)
    summary = json.loads((pytester.path / out).read_text(encoding="utf-8"))
    return result, summary


def suite_of(summary: dict[str, Any], name: str = "jb") -> dict[str, Any]:
    return next(s for s in summary["suites"] if s["name"] == name)


def test_items_are_case_times_variant_in_case_order(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=2, variants=THREE)
    result = pytester.runpytest("--collect-only", "-q", *endpoint(server, pytester.path))
    ids = [line for line in result.stdout.lines if "::" in line]
    assert ids == [f"jb.eval.yaml::c{i:02d}[{v}]" for i in range(2) for v in ("good", "mid", "bad")]


def test_matrix_equals_each_variant_run_alone(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.1}})
    result, summary = run(pytester, server)
    s = suite_of(summary)
    assert sorted(s["metrics"]) == ["bad", "good", "mid"]
    assert s["cases"]["total"] == 3 * N_CASES
    for spec in THREE:
        name, model = spec["name"], spec["model"]
        write_suite(pytester.path, name=f"alone_{name}", target={"model": model, "system_prompt": "Answer yes or no."},
                    thresholds={"accuracy": {"min": 0.1}})
        _r, alone = run(pytester, server, f"alone_{name}.eval.yaml", out=f"{name}.json")
        a = suite_of(alone, f"alone_{name}")
        assert s["metrics"][name] == a["metrics"], name
        assert s["variants"]["variants"][name]["cases"] == a["cases"]
        assert s["variants"]["variants"][name]["gates"] == a["gates"]
        # hand-computed accuracy from the server's known wrong answers
        assert s["metrics"][name]["accuracy"]["value"] == pytest.approx(1 - len(WRONG[model]) / N_CASES)
    assert [g["metric"] for g in s["gates"]] == ["good.accuracy", "mid.accuracy", "bad.accuracy"]
    result.stdout.fnmatch_lines(["*variants of jb side by side (reference good*",
                                 "*metric*good (ref)*mid*bad*", "*accuracy*0.933 [[]*0.733*0.433*"])


def _discordant(ref: str, other: str) -> tuple[int, int]:
    """(only the reference right, only the other right) from the server's answers."""
    wrong_ref, wrong_other = WRONG[ref], WRONG[other]
    only_ref = sum(1 for i in range(N_CASES) if i not in wrong_ref and i in wrong_other)
    only_other = sum(1 for i in range(N_CASES) if i in wrong_ref and i not in wrong_other)
    return only_ref, only_other


def test_mcnemar_equals_binomtest_and_holm_equals_statsmodels(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    write_suite(pytester.path, variants=THREE)
    _result, summary = run(pytester, server)
    block = suite_of(summary)["variants"]
    comps = block["comparisons"]
    assert {(c["variant"], c["metric"]) for c in comps} == {
        (v, m) for v in ("mid", "bad") for m in ("accuracy", "precision", "recall", "f1", "f2")
    }
    for c in comps:
        if c["metric"] != "accuracy":
            assert c["method"] == "paired randomization"
            continue
        model = {"mid": "m-mid", "bad": "m-bad"}[c["variant"]]
        b, k = _discordant("m-good", model)
        assert (c["only_against"], c["only_variant"]) == (b, k)
        assert c["method"] == "exact McNemar"
        assert c["p_value"] == pytest.approx(scipy_stats.binomtest(k, b + k, 0.5).pvalue, rel=1e-12, abs=1e-15)
        assert c["diff"] == pytest.approx((k - b) / N_CASES)
    reject, adjusted, *_ = multitest.multipletests([c["p_value"] for c in comps], alpha=0.05, method="holm")
    assert [c["p_holm"] for c in comps] == pytest.approx(list(adjusted), rel=1e-12)
    for c, rej in zip(comps, reject, strict=True):
        assert c["verdict"] == (("better" if c["diff"] > 0 else "worse") if rej else "no significant difference")
    # good vs bad: 15 discordant pairs all one way -> worse; good vs mid (7 vs 1) is not enough
    by = {(c["variant"], c["metric"]): c for c in comps}
    assert by[("bad", "accuracy")]["verdict"] == "worse"
    assert by[("mid", "accuracy")]["verdict"] == "no significant difference"
    mid = by[("mid", "accuracy")]
    assert mid["detectable"] > abs(mid["diff"])
    # the smallest detectable difference is where the exact McNemar power reaches 80%
    from pytest_evals.regression.power_analysis import power

    flip = (mid["only_against"] + mid["only_variant"]) / (2 * N_CASES)
    assert power(N_CASES, mid["detectable"], flip, 0.025) >= 0.8 > power(N_CASES, mid["detectable"] - 1e-3, flip, 0.025)


def test_best_variant_only_when_better_than_every_other(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    write_suite(pytester.path, variants=THREE)
    result, summary = run(pytester, server)
    best = {b["metric"]: b for b in suite_of(summary)["variants"]["best"]}
    acc = best["accuracy"]
    # good is not significantly better than mid: no best, and the smallest detectable difference is said
    assert acc["best"] is None and acc["verdict"] == "no significant difference" and acc["candidate"] == "good"
    ps = []
    for other in ("mid", "bad"):
        b, k = _discordant("m-good", f"m-{other}")
        ps.append(scipy_stats.binomtest(k, b + k, 0.5).pvalue)
    assert [a["p_holm"] for a in acc["against"]] == pytest.approx(list(multitest.multipletests(ps, method="holm")[1]))
    assert acc["detectable"] > 0
    result.stdout.fnmatch_lines(["*best on accuracy: no significant difference; highest: good; smallest detectable*"])
    # against bad alone, good is significantly better: named best
    write_suite(pytester.path, name="two", variants=[THREE[0], THREE[2]])
    result, summary = run(pytester, server, "two.eval.yaml", out="two.json")
    acc = {b["metric"]: b for b in suite_of(summary, "two")["variants"]["best"]}["accuracy"]
    assert acc["best"] == "good" and acc["verdict"] == "better"
    result.stdout.fnmatch_lines(["*best on accuracy: good (better than every other variant*"])


def _stable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without what differs between any two runs (timestamps, latencies)."""
    out = {k: v for k, v in summary.items() if k not in ("started_at", "duration_s", "llm")}
    for s in out["suites"]:
        for v in s.get("variants", {}).get("variants", {}).values():
            for key in ("latency_mean_s", "latency_median_s"):
                v["usage"].pop(key, None)
    return out


def test_plain_and_xdist_give_the_same_matrix(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    pytest.importorskip("xdist")
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.5}})
    # both in processes of their own, as a CI job runs them (nothing of earlier in-process runs)
    plain_result, plain = run(pytester, server, cache="c1", out="plain.json", subprocess=True)
    xdist_result, xdist = run(pytester, server, "-n", "2", cache="c2", out="xdist.json")
    assert plain_result.ret == xdist_result.ret == 1  # bad misses its gate, in both
    assert _stable(plain) == _stable(xdist)
    assert server.stats()["answered"] == 2 * 3 * N_CASES  # each run asked each question once


def test_second_run_makes_no_request(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE)
    _r, first = run(pytester, server)
    asked = server.stats()["received"]
    assert asked == 3 * N_CASES
    # a process of its own: nothing of the first run's in memory
    _r, second = run(pytester, server, out="second.json", subprocess=True)
    assert server.stats()["received"] == asked
    usage = suite_of(second)["variants"]["variants"]
    assert {n: (u["usage"]["requests"], u["usage"]["cache_hits"]) for n, u in usage.items()} == {
        n: (0, N_CASES) for n in ("good", "mid", "bad")
    }
    assert suite_of(first)["metrics"] == suite_of(second)["metrics"]


def test_a_variant_whose_endpoint_fails_is_errors_in_its_column_only(pytester: pytest.Pytester,
                                                                    server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=[THREE[0], {"name": "down", "model": "m-down"}, THREE[2]],
                thresholds={"accuracy": {"min": 0.1}})
    result, summary = run(pytester, server)
    s = suite_of(summary)
    info = s["variants"]["variants"]
    assert info["down"]["cases"]["errors"] == N_CASES and info["down"]["cases"]["errors_by_kind"] == {
        "infrastructure": N_CASES}
    assert s["metrics"]["down"]["accuracy"]["value"] is None
    for name in ("good", "bad"):
        assert info[name]["cases"]["errors"] == 0
        model = {"good": "m-good", "bad": "m-bad"}[name]
        assert s["metrics"][name]["accuracy"]["value"] == pytest.approx(1 - len(WRONG[model]) / N_CASES)
    # the down variant fails the suite, and says why
    assert result.ret == 1 and not s["passed"]
    assert any(r.startswith("variant down:") for r in s["reasons"])
    assert not any(r.startswith(("variant good:", "variant bad:")) for r in s["reasons"])
    # no comparison with an undefined column is claimed
    assert all(c["variant"] != "down" or c["verdict"] == "undefined" for c in s["variants"]["comparisons"])
    result.stdout.fnmatch_lines(["*errors*0*30*0*"])


def test_expected_pattern_is_known() -> None:
    # the helpers' truth: a third of the cases are jailbreaks
    assert sum(expected(i) for i in range(N_CASES)) == 10


def test_cli_model_list_makes_one_variant_per_model(pytester: pytest.Pytester, server: FakeOpenAI,
                                                   tmp_path: Path) -> None:
    write_suite(pytester.path)
    _r, summary = run(pytester, server, "--evals-model", "m-good,m-bad", "--evals-variant", "mid:model=m-mid")
    s = suite_of(summary)
    assert s["variants"]["names"] == ["m-good", "m-bad", "mid"]
    assert s["metrics"]["m-bad"]["accuracy"]["value"] == pytest.approx(1 - len(WRONG["m-bad"]) / N_CASES)
    assert s["variants"]["variants"]["mid"]["overrides"] == {"model": "m-mid"}


@pytest.mark.parametrize("n", [1, 7, 30, 200, 1500])
def test_detectable_difference_thresholds_are_the_power_analysis_ones(n: int) -> None:
    import numpy as np

    from pytest_evals.regression.power_analysis import power, rejection_threshold
    from pytest_evals.regression.variant_verdicts import _mcnemar_rejection, mcnemar_detectable

    d = np.arange(n + 1)
    k_margin = np.floor(d / 2).astype(np.int64) + 1
    assert (_mcnemar_rejection(n, 0.025) == np.maximum(rejection_threshold(d, 0.025), k_margin)).all()
    found = mcnemar_detectable(n, 0.05, 0.05)
    if found is not None:
        assert power(n, found, 0.05, 0.025) >= 0.8 > power(n, max(0.0, found - 1e-3), 0.05, 0.025)


def test_a_case_whose_variants_run_on_two_workers_gives_the_plain_numbers(pytester: pytest.Pytester,
                                                                          server: FakeOpenAI) -> None:
    """The verdicts are built by the controller from every worker's results: a case whose
    variants the block scheduling splits between workers is paired all the same."""
    pytest.importorskip("xdist")
    import re

    n = 31  # 93 items in two blocks of 46 and 47: case c15's variants straddle the boundary
    variants = [{**THREE[0], "better_than": {"variant": "bad", "metric": "accuracy"}},
                {**THREE[1], "no_worse_than": {"variant": "good", "metric": "f1", "margin": 0.1}}, THREE[2]]
    write_suite(pytester.path, n=n, variants=variants, thresholds={"accuracy": {"min": 0.5}})
    plain_result, plain = run(pytester, server, cache="c1", out="plain.json", subprocess=True)
    xdist_result, xdist = run(pytester, server, "-n", "2", "-v", cache="c2", out="xdist.json")
    workers: dict[str, set[str]] = {}
    for line in xdist_result.stdout.lines:
        found = re.search(r"\[(gw\d+)\].*jb\.eval\.yaml::(c\d+)\[(\w+)\]", line)
        if found:
            workers.setdefault(found.group(2), set()).add(found.group(1))
    assert len(workers) == n
    split = sorted(c for c, ws in workers.items() if len(ws) > 1)
    assert split == ["c15"], workers
    assert plain_result.ret == xdist_result.ret == 1  # bad misses its threshold in both
    assert _stable(plain) == _stable(xdist)
    block = suite_of(xdist)["variants"]
    assert {c["paired"] for c in block["comparisons"] if c["metric"] == "accuracy"} == {n}
    assert {(g["variant"], g["verdict"]) for g in block["gates"]} == {("good", "better"), ("mid", "worse")}
    assert all(g["paired"] == n for g in block["gates"])


def test_two_sided_randomization_p_is_both_tails_of_compare_ratio_and_reads_both_ways() -> None:
    """compare() takes the second tail from the same draws without a second interval;
    the best-variant tests reuse a comparison read the other way round."""
    import numpy as np

    from pytest_evals.regression.paired_tests import compare_ratio
    from pytest_evals.regression.variant_verdicts import Pairing, compare, flipped

    rng = np.random.default_rng(0)
    n = 500
    exp, pa, pb = rng.random(n) < 0.5, rng.random(n) < 0.5, rng.random(n) < 0.4

    def f1(e: Any, p: Any) -> tuple[Any, Any]:
        tp, fp, fn = (e & p) * 1.0, ((~e) & p) * 1.0, (e & ~p) * 1.0
        return 2 * tp, 2 * tp + fn + fp

    (na, da), (nb, db) = f1(exp, pa), f1(exp, pb)
    c = compare(Pairing(np.stack([na, da, nb, db], axis=1)), "b", "a", "f1", "tag")
    lower = compare_ratio(na, da, nb, db, tag="tag")
    higher = compare_ratio(na, da, nb, db, lower_is_better=True, tag="tag")
    assert c.p_value == min(1.0, 2 * min(lower.p_value or 1.0, higher.p_value or 1.0))
    assert c.test.ci == lower.ci and c.test.diff == lower.diff
    back = flipped(c)
    assert (back.variant, back.against, back.p_value) == ("a", "b", c.p_value)
    assert back.test.diff == -lower.diff and back.test.ci == (-lower.ci[1], -lower.ci[0])  # type: ignore[index]
    assert (back.test.baseline, back.test.current) == (lower.current, lower.baseline)
