"""HarpIA input files run with pytest: items, output and log files, gates, bad input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.model.case_result import CaseResult

from .conftest import INSTANCES, read_log, read_output, validate_schema

CHEAP = [
    {"id": "bleu", "enable": True, "parameters": {"weights": [0.5, 0.5], "smoothing": "method1", "auto_reweigh": False}},
    {"id": "chrf", "enable": True, "parameters": {}},
    {"id": "ter", "enable": True, "parameters": {"sentence_level": False}},
    {"id": "rouge", "enable": True, "parameters": {"rouge_types": ["rouge1", "rougeL"]}},
    {"id": "exact_match", "enable": True, "parameters": {"ignore_case": True}},
    {"id": "edit_distance", "enable": True},
    {"id": "meteor", "enable": False, "parameters": {}},
    {"id": "bertscore", "enable": False, "parameters": {"lang": "en"}},
]


def results_of(reprec: pytest.HookRecorder) -> dict[str, CaseResult]:
    # Reports keep only the light part; the full results (with details) come through
    # the pytest_evals_case_result hook.
    return {call.result.case_id: call.result for call in reprec.getcalls("pytest_evals_case_result")}


def run_files(pytester: pytest.Pytester, *args: str) -> tuple[Any, Path, Path]:
    out, log = pytester.path / "out" / "harpia.json", pytester.path / "out" / "harpia.log.jsonl"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--harpia-output={out}", f"--harpia-log={log}", *args)
    return result, out, log


def test_harpia_file_runs_one_item_per_instance(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    write_harpia(CHEAP)
    result, out, log = run_files(pytester, "-v")
    result.assert_outcomes(passed=len(INSTANCES))
    result.stdout.fnmatch_lines(["*t.harpia.json::a1 PASSED*", "*HarpIA output: *harpia.json", "*HarpIA log: *"])
    assert result.ret == 0

    output = read_output(out)
    validate_schema(output, "output.schema.json")
    lines = read_log(log)
    for line in lines:
        validate_schema(line, "log.schema.json")
    # disabled metrics are neither computed nor written
    assert [o["id"] for o in output] == ["bleu", "chrf", "ter", "rouge", "exact_match", "edit_distance"]
    by_id = {o["id"]: o for o in output}
    assert by_id["bleu"]["parameters"] == CHEAP[0]["parameters"]
    assert by_id["bleu"]["resolved_parameters"]["tokenizer"] == "13a"
    assert all(o["instances"] == len(INSTANCES) and o["elapsed_time"] >= 0 for o in output)
    # a1 matches its second reference, a6 its only one
    assert by_id["exact_match"]["score"]["exact_match"] == pytest.approx(2 / len(INSTANCES))
    # one log line per (sentence-level metric, instance); ter is corpus-only here
    per_metric = {o: [ln for ln in lines if ln["metric_id"] == o] for o in by_id}
    assert per_metric["ter"] == []
    for metric_id in ("bleu", "chrf", "rouge", "exact_match", "edit_distance"):
        assert [ln["instance_id"] for ln in per_metric[metric_id]] == [i["id"] for i in INSTANCES]
    assert set(lines[0]) == {"suite", "instance_id", "metric_id", "name", "parameters", "result", "reference_index", "passed"}


def test_scores_are_the_libraries_numbers(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    import sacrebleu
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu
    from rouge_score import rouge_scorer

    write_harpia(CHEAP)
    _result, out, log = run_files(pytester)
    by_id = {o["id"]: o for o in read_output(out)}
    hyps = [i["actual-output"] for i in INSTANCES]
    refs = [i["expected-output"] for i in INSTANCES]
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    expected_bleu = corpus_bleu([[tok(r).split() for r in rs] for rs in refs], [tok(h).split() for h in hyps],
                                weights=(0.5, 0.5), smoothing_function=SmoothingFunction().method1)
    assert by_id["bleu"]["score"]["bleu"] == pytest.approx(expected_bleu)
    assert by_id["bleu"]["level"] == "corpus"
    streams = [[rs[0] for rs in refs], [rs[1] if len(rs) > 1 else None for rs in refs]]
    assert by_id["chrf"]["score"]["chrf"] == pytest.approx(sacrebleu.metrics.CHRF().corpus_score(hyps, streams).score)
    assert by_id["ter"]["score"]["ter"] == pytest.approx(sacrebleu.metrics.TER().corpus_score(hyps, streams).score)
    # rouge: mean over instances of the best reference's scores
    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"])
    best = [max((scorer.score(r, h) for r in rs), key=lambda s: s["rouge1"].fmeasure) for h, rs in zip(hyps, refs, strict=True)]
    assert by_id["rouge"]["score"]["rougeL"] == pytest.approx(sum(b["rougeL"].fmeasure for b in best) / len(best))
    rouge_lines = [ln for ln in read_log(log) if ln["metric_id"] == "rouge"]
    assert [ln["result"]["rouge1"] for ln in rouge_lines] == pytest.approx([b["rouge1"].fmeasure for b in best])


def test_per_instance_threshold_fails_items_and_gates_decide_the_exit(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    metrics = [{"id": "chrf", "enable": True, "parameters": {"threshold": 60}},
               {"id": "edit_distance", "enable": True, "parameters": {"threshold": 5}}]
    write_harpia(metrics, name="data")
    (pytester.path / "data.harpia.json").rename(pytester.path / "data.json")
    suite = {"task": "harpia", "input_path": "data.json", "thresholds": {"chrf": {"min": 50}}}
    (pytester.path / "gated.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    results = results_of(reprec)
    failed = {cid for cid, r in results.items() if r.status == "failed"}
    assert failed and failed != set(results)
    for cid in failed:
        message = results[cid].message or ""
        assert "chrf chrf = " in message or "edit_distance distance = " in message
    assert "a6" not in failed  # identical to its reference
    assert reprec.ret == 0  # failures are within the passing gate

    suite["thresholds"] = {"chrf": {"min": 99}, "per_instance": {"chrf": {"pass_rate": {"min": 0.9}}}}
    (pytester.path / "gated.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*MISSED GATE gated: chrf = *required >= 99*", "*MISSED GATE gated: per_instance.chrf.pass_rate*"])


def test_bad_instances_error_alone_and_name_the_instance(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    instances = [
        INSTANCES[0],
        {"id": "no-output", "input": "x", "expected-output": ["y"]},
        {"id": "no-refs", "input": "x", "actual-output": "y", "expected-output": []},
        {"input": "no id here", "actual-output": "y", "expected-output": ["y"]},
        {**INSTANCES[1], "id": "a1"},
        INSTANCES[2],
    ]
    write_harpia([{"id": "bleu", "enable": True}], instances)
    _result, out, log = run_files(pytester, "-rE")
    _result.assert_outcomes(passed=2, errors=4)
    text = _result.stdout.str()
    for expected in [
        "t.harpia.json#no-output: field 'actual-output' is missing",
        "t.harpia.json#no-refs: field 'expected-output' has no reference; supervised metric(s) bleu",
        "t.harpia.json: instances[3] has no usable 'id'",
        "t.harpia.json#a1: duplicate instance id 'a1' (instances[0] and instances[4])",
    ]:
        assert expected in text
    output = read_output(out)
    assert output[0]["instances"] == 2
    assert [ln["instance_id"] for ln in read_log(log)] == ["a1", "a3"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"instances": [', "t.harpia.json:1: invalid JSON"),
        (json.dumps({"instances": [{"id": 1}], "metrics": [{"id": "bleu", "parameters": {"smoothing": "laplace"}}]}),
         "metrics[0] (id 'bleu'): parameter 'smoothing': Value error, unknown smoothing function 'laplace'"),
        (json.dumps({"instances": [{"id": 1}], "metrics": [{"id": "bert_score"}]}), "unknown metric id 'bert_score'; accepted: bleu"),
        (json.dumps({"metrics": [{"id": "bleu"}]}), "missing field 'instances'"),
    ],
)
def test_bad_files_make_one_clear_suite_error(pytester: pytest.Pytester, content: str, fragment: str) -> None:
    (pytester.path / "t.harpia.json").write_text(content, encoding="utf-8")
    pytester.makefile(".harpia.json", ok=json.dumps({"instances": INSTANCES[:1], "metrics": [{"id": "chrf"}]}))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=1, errors=1)
    assert fragment in result.stdout.str()


def test_meteor_without_wordnet_fails_the_suite_up_front(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    empty = pytester.mkdir("no-wordnet")
    write_harpia([{"id": "meteor", "parameters": {"wordnet_path": str(empty)}}])
    result = pytester.runpytest("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(errors=1)
    assert "metrics[0] (id 'meteor'): " in result.stdout.str()
    assert "python -m nltk.downloader wordnet" in result.stdout.str()


def test_generate_fills_missing_outputs_from_the_target(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    pytester.makepyfile(translator="""
        from pathlib import Path

        def translate(case):
            with Path(__file__).with_name("calls.txt").open("a") as fh:
                fh.write(case["id"] + "\\n")
            return {"actual-output": "She lives in Lisbon."}
    """)
    instances = [{"id": "given", "input": "x", "actual-output": "She lives in Lisbon.", "expected-output": ["She lives in Lisbon."]},
                 {"id": "made", "input": "Traduza: Ela mora em Lisboa.", "expected-output": ["She lives in Lisbon."]}]
    write_harpia([{"id": "exact_match"}], instances, name="data")
    (pytester.path / "data.harpia.json").rename(pytester.path / "data.json")
    suite = {"task": "harpia", "input_path": "data.json", "generate": True, "target": "translator:translate"}
    (pytester.path / "gen.eval.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    reprec = pytester.inline_run("-p", "no:cacheprovider")
    results = results_of(reprec)
    assert {cid: r.scores["exact_match"] for cid, r in results.items()} == {"given": 1.0, "made": 1.0}
    assert (pytester.path / "calls.txt").read_text().split() == ["made"]


def test_suite_placeholder_writes_one_file_per_suite(pytester: pytest.Pytester, write_harpia: Callable[..., Path]) -> None:
    write_harpia([{"id": "chrf"}], name="first")
    write_harpia([{"id": "exact_match"}, {"id": "chrf", "name": "chrf_plus", "parameters": {"word_order": 2}}], name="second")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--harpia-output={pytester.path}/{{suite}}.out.json")
    assert result.ret == 0
    first, second = read_output(pytester.path / "first.out.json"), read_output(pytester.path / "second.out.json")
    assert [o["name"] for o in first] == ["chrf"]
    assert [o["name"] for o in second] == ["exact_match", "chrf_plus"]
    assert second[1]["score"]["chrf"] != first[0]["score"]["chrf"]  # chrF++ differs from chrF
    validate_schema(first + second, "output.schema.json")


def test_bertscore_batches_instances_into_few_model_calls(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path], model_path: str
) -> None:
    import bert_score

    instances = [{**INSTANCES[i % len(INSTANCES)], "id": f"n{i}"} for i in range(60)]
    write_harpia([{"id": "bertscore", "parameters": {"lang": "en", "threshold": 0.9}}], instances)
    reprec = pytester.inline_run("-p", "no:cacheprovider", f"--harpia-output={pytester.path}/o.json")
    results = results_of(reprec)
    sizes = [r.details["batch_sizes"]["bertscore"] for r in results.values()]
    assert len(results) == 60 and min(sizes) >= 20, sizes  # at most a few calls, never one per instance
    _p, _r, f = bert_score.score([i["actual-output"] for i in INSTANCES], [i["expected-output"][0] for i in INSTANCES],
                               model_type=model_path, num_layers=6)
    single_ref = [k for k, i in enumerate(INSTANCES) if len(i["expected-output"]) == 1]
    for k in single_ref:
        assert results[f"n{k}"].scores["bertscore.f1"] == pytest.approx(float(f[k]), abs=1e-6)
    output = read_output(pytester.path / "o.json")
    validate_schema(output, "output.schema.json")
    f1s = [float(res.scores["bertscore.f1"] or 0.0) for res in results.values()]
    assert output[0]["score"]["f1"] == pytest.approx(sum(f1s) / len(f1s))
    assert output[0]["setup_time"] > 0


@pytest.mark.slow  # two fresh worker processes that each load a model
def test_output_and_log_are_the_same_with_two_workers(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    instances = [{**INSTANCES[i % len(INSTANCES)], "id": f"n{i:02d}"} for i in range(24)]
    metrics = [m for m in CHEAP if m["enable"]] + [{"id": "semantic_similarity", "parameters": {"threshold": 0.9}}]
    write_harpia(metrics, instances)

    def run(*extra: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        out, log = pytester.path / f"o{len(extra)}.json", pytester.path / f"l{len(extra)}.jsonl"
        # the plain run reuses this process's loaded model; the -n 2 run has fresh workers
        runner = pytester.runpytest_subprocess if extra else pytester.runpytest
        result = runner("-p", "no:cacheprovider", f"--harpia-output={out}", f"--harpia-log={log}", *extra)
        # four instances miss the similarity threshold: failed items, same in both runs
        result.assert_outcomes(passed=20, failed=4)
        return read_output(out), read_log(log)

    plain_out, plain_log = run()
    xdist_out, xdist_log = run("-n", "2")
    timing = ("elapsed_time", "elapsed time", "setup_time")

    def strip(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: v for k, v in o.items() if k not in timing} for o in objs]

    assert strip(plain_out) == strip(xdist_out)
    key = lambda ln: (ln["name"], ln["instance_id"])  # noqa: E731
    assert sorted(plain_log, key=key) == sorted(xdist_log, key=key)
    assert len(plain_log) == 24 * 6  # bleu, chrf, rouge, exact_match, edit_distance, semantic; ter is corpus-only


def rubric_responder(request: dict[str, Any]) -> str:
    """A judge on loopback: rating 5 when the response repeats a reference, 2 otherwise;
    a reply that is not JSON when the response says so (to test the error path)."""
    import re

    # the first user message is the rating prompt (later ones are the judge's retry requests)
    prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
    response = re.search(r"<response>\n(.*?)\n</response>", prompt, re.S)
    refs = re.findall(r"<reference>\n(.*?)\n</reference>", prompt, re.S)
    text = response.group(1) if response else ""
    if "GARBLE" in text:
        return "I would rather not say."
    rating = 5 if text in refs else 2
    return json.dumps({"reasoning": f"{len(refs)} reference(s) seen", "rating": rating})


def test_llm_judge_rates_through_the_session_client(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_evals.testing.fake_openai import FakeOpenAI

    instances = [*INSTANCES[:3], {"id": "bad", "input": "x", "actual-output": "GARBLE", "expected-output": ["y"]}]
    write_harpia([{"id": "llm_judge", "parameters": {"threshold": 0.5}}, {"id": "chrf"}], instances)
    with FakeOpenAI(responder=rubric_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-harpia-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(pytester.path / "cache"))
        result, out, log = run_files(pytester, "-rEf")
        requests = server.stats()
    result.assert_outcomes(passed=1, failed=2, errors=1)
    text = result.stdout.str()
    assert "t.harpia.json#bad: metric 'llm_judge': judge reply is not a JSON object" in text
    assert "llm_judge score = 0.25, below minimum 0.5" in text
    judged = {ln["instance_id"]: ln for ln in read_log(log) if ln["metric_id"] == "llm_judge"}
    assert judged["a1"]["result"] == {"score": 1.0, "rating": 5, "reasoning": "2 reference(s) seen"}
    assert judged["a2"]["result"]["score"] == 0.25 and judged["a2"]["passed"] is False
    output = {o["id"]: o for o in read_output(out)}
    assert output["llm_judge"]["score"] == {"score": pytest.approx(0.5), "rating": pytest.approx(3.0)}
    # the instance the judge could not rate is an error, but its chrF still counts
    assert output["llm_judge"]["instances"] == 3 and output["chrf"]["instances"] == 4
    chrf_lines = [ln["instance_id"] for ln in read_log(log) if ln["metric_id"] == "chrf"]
    assert chrf_lines == ["a1", "a2", "a3", "bad"]
    assert requests["answered"] >= 4
    assert "sk-harpia-test-key" not in out.read_text() + log.read_text()
