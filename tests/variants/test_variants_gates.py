"""Gates over variants: thresholds per variant, better_than / no_worse_than by the
paired rules of regression gates; malformed variants are one suite ERROR naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from variant_helpers import N_CASES, THREE, endpoint, write_suite

from pytest_evals.testing.fake_openai import FakeOpenAI


def run(pytester: pytest.Pytester, server: FakeOpenAI, *extra: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-json", "s.json", *extra))
    path = pytester.path / "s.json"
    summary = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return result, summary


def test_thresholds_gate_every_variant(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.7}})
    result, summary = run(pytester, server)
    s = summary["suites"][0]
    assert result.ret == 1 and not s["passed"]
    assert [(g["metric"], g["passed"]) for g in s["gates"]] == [
        ("good.accuracy", True), ("mid.accuracy", True), ("bad.accuracy", False)]
    assert "missed gate: variant bad: accuracy = 0.4333, required >= 0.7" in s["reasons"]
    assert not any("variant good" in r or "variant mid" in r for r in s["reasons"])
    result.stdout.fnmatch_lines(["*MISSED GATE jb: variant bad: accuracy = 0.4333, required >= 0.7*"])


def test_per_variant_false_gates_the_reference_only(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, per_variant=False, thresholds={"accuracy": {"min": 0.7}})
    result, summary = run(pytester, server)
    s = summary["suites"][0]
    assert [g["metric"] for g in s["gates"]] == ["good.accuracy"]
    assert s["passed"] and result.ret == 0
    # the others are still measured and compared
    assert s["metrics"]["bad"]["accuracy"]["value"] == pytest.approx(13 / N_CASES)
    assert s["variants"]["variants"]["bad"]["gated"] is False


def _gates(summary: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(g["variant"], g["kind"], g["against"]): g for g in summary["suites"][0]["variants"]["gates"]}


def test_better_than_passes_only_when_significantly_better(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    variants = [
        {"name": "good", "model": "m-good", "better_than": {"variant": "bad", "metric": "accuracy"}},
        {"name": "mid", "model": "m-mid", "better_than": {"variant": "good", "metric": "accuracy"}},
        {"name": "bad", "model": "m-bad"},
    ]
    write_suite(pytester.path, variants=variants, thresholds={"accuracy": {"min": 0.1}})
    result, summary = run(pytester, server)
    gates = _gates(summary)
    g = gates[("good", "better_than", "bad")]
    assert g["verdict"] == "better" and g["passed"] and g["p_value"] < 0.05 and g["diff"] == pytest.approx(0.5)
    assert g["better"] > g["worse"]  # cases where good is right and bad wrong outnumber the reverse
    m = gates[("mid", "better_than", "good")]
    assert m["verdict"] == "inconclusive" and not m["passed"]
    s = summary["suites"][0]
    assert result.ret == 1 and not s["passed"]
    assert any(r.startswith("missed gate: mid better_than good on accuracy") for r in s["reasons"])
    result.stdout.fnmatch_lines(["*BETTER good better_than bad on accuracy (margin 0): 0.4333 -> 0.9333*better*",
                                 "*INCONCLUSIVE mid better_than good on accuracy*"])


def test_no_worse_than_is_a_max_drop_gate_against_the_other_variant(pytester: pytest.Pytester,
                                                                     server: FakeOpenAI) -> None:
    variants = [
        {"name": "good", "model": "m-good", "no_worse_than": {"variant": "mid", "metric": "accuracy", "margin": 0.05}},
        {"name": "mid", "model": "m-mid"},
        {"name": "bad", "model": "m-bad", "no_worse_than": [{"variant": "good", "metric": "accuracy", "margin": 0.05}]},
    ]
    write_suite(pytester.path, variants=variants, thresholds={"accuracy": {"min": 0.1}})
    result, summary = run(pytester, server)
    gates = _gates(summary)
    assert gates[("good", "no_worse_than", "mid")]["verdict"] == "no worse"
    assert gates[("good", "no_worse_than", "mid")]["passed"]
    bad = gates[("bad", "no_worse_than", "good")]
    assert bad["verdict"] == "worse" and not bad["passed"]
    assert result.ret == 1
    # the same rule as a regression gate: drop beyond the margin and one-sided McNemar p < alpha
    scipy_stats = pytest.importorskip("scipy.stats")
    assert bad["p_value"] == pytest.approx(scipy_stats.binomtest(15, 15, 0.5, alternative="greater").pvalue)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"variants": THREE, "reference": "huge"}, "*reference 'huge' is not a variant (good, mid, bad)*"),
        ({"variants": [{"name": "a", "modle": "m-good"}]}, "*variants.0.modle*"),
        ({"variants": [{"name": "a"}, {"name": "a"}]}, "*variant name(s) given twice: a*"),
        ({"variants": [{"name": "a.b", "model": "x"}]}, "*variant name 'a.b'*"),
        ({"variants": [{"name": "a", "better_than": {"variant": "zz", "metric": "accuracy"}}]},
         "*variants.a.better_than.variant 'zz' is not a variant*"),
        ({"per_variant": False}, "*per_variant without 'variants'*"),
    ],
)
def test_bad_variants_are_one_suite_error(pytester: pytest.Pytester, server: FakeOpenAI, fields: dict[str, Any],
                                          message: str) -> None:
    write_suite(pytester.path, n=3, **fields)
    write_suite(pytester.path, name="other", n=3)
    result, summary = run(pytester, server)
    result.stdout.fnmatch_lines([message])
    names = {s["name"]: s for s in summary["suites"]}
    assert not names["jb.eval.yaml"]["passed"] and "other" in names  # the other suite still ran
    assert result.ret == 1


def test_a_variant_setting_without_a_place_is_an_error(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=3, target="targets:run", variants=[{"name": "a", "system_prompt": "hi"}])
    result, _summary = run(pytester, server)
    result.stdout.fnmatch_lines(["*variant 'a': system_prompt: the suite has nothing to apply it to*"])
    assert result.ret == 1


def test_command_line_variants_skip_suites_they_do_not_fit(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=3)
    data = pytester.path / "data" / "saved.jsonl"
    data.write_text(json.dumps({"id": "s1", "question": "q", "expected_outcome": True, "actual_outcome": True}) + "\n")
    (pytester.path / "saved.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: data/saved.jsonl\n", encoding="utf-8")
    _result, summary = run(pytester, server, "--evals-variant", "x:model=m-bad", "--evals-variant", "y:model=m-good")
    by = {s["name"]: s for s in summary["suites"]}
    assert by["jb"]["variants"]["names"] == ["x", "y"]
    assert "variants" not in by["saved"] and by["saved"]["cases"]["total"] == 1
    assert by["saved"]["passed"]


def test_malformed_command_line_variant_is_a_usage_error(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-variant", "nomodel"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-variant 'nomodel': expected NAME:KEY=VALUE*"])


def test_two_values_for_one_variant_are_a_usage_error_never_a_silent_choice(
    pytester: pytest.Pytester, server: FakeOpenAI
) -> None:
    write_suite(pytester.path, n=3)
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-model", "x.y,x_y"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evals-model: 'x.y' and 'x_y' both become variant 'x_y'*"])
    result = pytester.runpytest(*endpoint(server, pytester.path, "--evals-variant", "a:model=m1",
                                          "--evals-variant", "a:model=m2"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*variant 'a' is given twice with different 'model'*"])
    # adding a setting to the same variant is still one variant
    _r, summary = run(pytester, server, "--evals-variant", "a:model=m-good", "--evals-variant", "a:temperature=0.5",
                      "--evals-variant", "b:model=m-bad")
    assert summary["suites"][0]["variants"]["names"] == ["a", "b"]


def test_summary_of_a_variant_run_follows_the_schema(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path

    schema = json.loads((Path(__file__).parents[1] / "core" / "summary.schema.json").read_text(encoding="utf-8"))
    variants = [{**THREE[0], "better_than": {"variant": "bad", "metric": "accuracy"}}, THREE[1], THREE[2]]
    write_suite(pytester.path, variants=variants, thresholds={"accuracy": {"min": 0.1}})
    _result, summary = run(pytester, server)
    jsonschema.Draft202012Validator(schema).validate(summary)
    broken = json.loads(json.dumps(summary))
    broken["suites"][0]["variants"]["comparisons"][0]["verdict"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_markdown_and_junit_show_the_variants(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.1}})
    _result, summary = run(pytester, server, "--evals-markdown", "s.md", "--junitxml", "j.xml")
    md = (pytester.path / "s.md").read_text(encoding="utf-8")
    assert "| metric | good (ref) | mid | bad |" in md
    assert "| accuracy | 0.933 [0.779, 0.992] | 0.733 [0.541, 0.877] | 0.433 [0.255, 0.626] |" in md
    assert "bad vs good accuracy: -0.5000" in md and "-> worse" in md
    assert "best on accuracy: no significant difference" in md
    import xml.etree.ElementTree as ET

    props = {p.get("name"): p.get("value") for p in ET.parse(pytester.path / "j.xml").iter("property")}
    assert props["evals.jb.good.accuracy"] == "0.9333333333333333" or props["evals.jb.good.accuracy"].startswith("0.933")
    assert props["evals.jb.variants.reference"] == "good"
    assert props["evals.jb.variants.bad.vs.good.accuracy.verdict"] == "worse"
    assert props["evals.jb.variants.best.accuracy"] == "no significant difference"
    comps = {(c["variant"], c["metric"]): c for c in summary["suites"][0]["variants"]["comparisons"]}
    assert props["evals.jb.variants.mid.vs.good.accuracy.p_holm"] == f"{comps[('mid', 'accuracy')]['p_holm']:.3g}"


def test_a_selection_of_cases_is_a_partial_run_of_every_variant(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, variants=THREE, thresholds={"accuracy": {"min": 0.1}})
    result, summary = run(pytester, server, "-k", "c01 or c02")
    s = summary["suites"][0]
    assert s["partial"] and not s["passed"] and result.ret == 1
    assert s["cases"]["population"] == 3 * N_CASES and s["cases"]["deselected"] == 3 * (N_CASES - 2)
    assert any(r.startswith("partial run: 6 of 90 cases run") for r in s["reasons"])
    for v in ("good", "mid", "bad"):
        counts = s["variants"]["variants"][v]["cases"]
        assert counts["total"] == 2 and counts["population"] == N_CASES and counts["deselected"] == N_CASES - 2
    # only some variants selected: the others are all deselected, nothing is claimed of them
    result, summary = run(pytester, server, "-k", "good", "--evals-allow-partial")
    s = summary["suites"][0]
    assert s["passed"] and s["partial"]
    assert s["variants"]["variants"]["mid"]["cases"]["total"] == 0
    assert all(c["verdict"] == "undefined" for c in s["variants"]["comparisons"])
    result.stdout.fnmatch_lines(["*PARTIAL jb*"])
    # ... but a selection that leaves none of the gated variants' items checks no gate:
    # never a pass (per_variant: false gates the reference, good, which is deselected).
    write_suite(pytester.path, variants=THREE, per_variant=False, thresholds={"accuracy": {"min": 0.9}})
    result, summary = run(pytester, server, "-k", "bad", "--evals-allow-partial")
    s = summary["suites"][0]
    assert not s["passed"] and result.ret == 1
    assert any("no case of the gated variant(s) good ran" in r for r in s["reasons"])


def test_a_variant_cannot_change_the_cases(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=3, variants=[THREE[0], {"name": "other", "set": {"input_path": "x.jsonl"}}])
    result, _summary = run(pytester, server)
    result.stdout.fnmatch_lines(["*variant 'other': set.input_path: variants run the suite's own cases*"])
    assert result.ret == 1


@pytest.mark.parametrize(
    ("gate_field", "gate", "message"),
    [
        ("better_than", {"variant": "good", "metric": "acuracy"},
         "*jb.eval.yaml: variants.mid.better_than.metric 'acuracy': the jailbreak_guardrails task computes no "
         "metric 'acuracy' for this suite (metrics a paired test can compare: accuracy, f1, f2, precision, recall)*"),
        ("no_worse_than", [{"variant": "good", "metric": "accuracy"}, {"variant": "good", "metric": "faithfulness.mean"}],
         "*jb.eval.yaml: variants.mid.no_worse_than[[]1[]].metric 'faithfulness.mean': the jailbreak_guardrails task "
         "computes no metric 'faithfulness.mean'*"),
        ("no_worse_than", {"variant": "good", "metric": "tp"},
         "*jb.eval.yaml: variants.mid.no_worse_than.metric 'tp': 'tp' has no paired test*"),
        ("better_than", {"variant": "huge", "metric": "accuracy"},
         "*jb.eval.yaml: variants.mid.better_than.variant 'huge' is not a variant (good, mid)*"),
    ],
)
def test_a_gate_on_an_unknown_metric_or_variant_is_a_config_error_at_collection(
    pytester: pytest.Pytester, server: FakeOpenAI, gate_field: str, gate: Any, message: str
) -> None:
    variants = [THREE[0], {**THREE[1], gate_field: gate}]
    write_suite(pytester.path, n=3, variants=variants)
    write_suite(pytester.path, name="other", n=3)
    collected = pytester.runpytest("--collect-only", "-q", *endpoint(server, pytester.path))
    ids = [line for line in collected.stdout.lines if "::" in line]
    # the suite is one erroring item from the start: none of its cases is collected or sent
    assert "jb.eval.yaml::suite-error" in ids and not any(i.startswith("jb.eval.yaml::c") for i in ids)
    assert server.stats()["received"] == 0
    result, summary = run(pytester, server)
    result.stdout.fnmatch_lines([message])
    names = {s["name"]: s for s in summary["suites"]}
    # the other suite still ran, its three cases measured
    assert not names["jb.eval.yaml"]["passed"] and names["other"]["cases"]["total"] == 3
    assert names["other"]["metrics"]["accuracy"]["value"] == pytest.approx(1 / 3)
    assert server.stats()["received"] == 3  # the other suite's cases only
    assert result.ret == 1


def test_compare_metrics_naming_no_metric_is_a_config_error(pytester: pytest.Pytester, server: FakeOpenAI) -> None:
    write_suite(pytester.path, n=3, variants=THREE[:2], compare_metrics=["accuracy", "f3"])
    result, _summary = run(pytester, server)
    result.stdout.fnmatch_lines(["*jb.eval.yaml: compare_metrics 'f3': the jailbreak_guardrails task computes no "
                                 "metric 'f3'*"])
    assert result.ret == 1 and server.stats()["received"] == 0
