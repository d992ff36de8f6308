"""Issues 14 and 16 from outside: HarpIA files with the libraries' own names, empty outputs,
very long instances and the per-instance deadline, the log of a killed run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import INSTANCES, read_log, read_output, validate_schema

#: A HarpIA file as the researcher writes it from the libraries' documentation.
LIBRARY_NAMES = [
    {"id": "BLEU", "enable": True,
     "parameters": {"weights": [0.25, 0.25, 0.25, 0.25], "smoothing_function": "method1", "auto_reweigh": False}},
    {"id": "bertscore", "enable": True,
     "parameters": {"lang": "en", "model_type": None, "num_layers": None, "verbose": False, "idf": False,
                    "device": None, "batch_size": 64, "nthreads": 4, "all_layers": False,
                    "rescale_with_baseline": False, "baseline_path": None, "use_fast_tokenizer": False}},
    {"id": "Rouge", "enable": True, "parameters": {"rouge_types": ["rouge1", "rougeL"]}},
]
TIMING = ("elapsed_time", "elapsed time", "setup_time")


def untimed(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in o.items() if k not in TIMING} for o in objects]


def run(pytester: pytest.Pytester, *extra: str, tag: str = "") -> tuple[Any, Path, Path]:
    out, log = pytester.path / f"out{tag}.json", pytester.path / f"log{tag}.jsonl"
    runner = pytester.runpytest_subprocess if "-n" in extra else pytester.runpytest
    result = runner("-p", "no:cacheprovider", f"--harpia-output={out}", f"--harpia-log={log}", *extra)
    return result, out, log


def test_file_with_the_libraries_parameter_names_runs(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

    from pytest_evals.metrics.reference.tokenize import tokenize

    write_harpia(LIBRARY_NAMES)
    result, out, log = run(pytester)
    result.assert_outcomes(passed=len(INSTANCES))
    result.stdout.fnmatch_lines(["*HarpIA: t: bertscore: BERTScore model: all-MiniLM-L6-v2*not comparable*"])
    output = read_output(out)
    validate_schema(output, "output.schema.json")
    by_id = {o["id"]: o for o in output}
    assert list(by_id) == ["bleu", "bertscore", "rouge"]
    assert all(o["elapsed_time"] == o["elapsed time"] >= 0 for o in output)
    assert by_id["bertscore"]["resolved_parameters"]["device"] is None
    assert "not comparable" in by_id["bertscore"]["notes"][0]
    # The corpus BLEU is NLTK's over all references, and each instance's is NLTK's too.
    refs = [[tokenize(r, "13a") for r in i["expected-output"]] for i in INSTANCES]
    hyps = [tokenize(i["actual-output"], "13a") for i in INSTANCES]
    expected = corpus_bleu(refs, hyps, smoothing_function=SmoothingFunction().method1)
    assert by_id["bleu"]["score"]["bleu"] == pytest.approx(expected, abs=1e-12)
    lines = read_log(log)
    for line in lines:
        validate_schema(line, "log.schema.json")
    assert {line["metric_id"] for line in lines} == {"bleu", "bertscore", "rouge"}
    assert all(line["reference_index"] is None for line in lines)


@pytest.mark.slow  # two fresh workers, each loading the model
def test_file_with_the_libraries_parameter_names_same_under_two_workers(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    instances = [{**INSTANCES[i % len(INSTANCES)], "id": f"n{i:02d}"} for i in range(12)]
    instances[5] = {**instances[5], "actual-output": ""}
    write_harpia(LIBRARY_NAMES, instances)
    plain, out1, log1 = run(pytester, tag="1")
    plain.assert_outcomes(passed=12)
    xdist, out2, log2 = run(pytester, "-n", "2", tag="2")
    xdist.assert_outcomes(passed=12)
    assert untimed(read_output(out1)) == untimed(read_output(out2))
    first, second = read_log(log1), read_log(log2)
    assert len(first) == 36
    for a, b in zip(first, second, strict=True):
        assert a.keys() == b.keys() and a["instance_id"] == b["instance_id"]
        assert a["result"] == pytest.approx(b["result"], abs=1e-5)


def test_one_empty_output_among_40_bertscore_instances(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    instances = [{"id": f"e{i:02d}", "input": "", "actual-output": f"Item {i} arrives on Monday.",
                  "expected-output": [f"Item {i} will arrive on Monday."]} for i in range(40)]
    instances[7]["actual-output"] = ""
    write_harpia([{"id": "bertscore", "parameters": {"device": None}}], instances)
    result, out, log = run(pytester)
    result.assert_outcomes(passed=40)
    result.stdout.fnmatch_lines(["*HarpIA: t: bertscore: 1 instance(s) had an empty output or reference*e07*"])
    [obj] = read_output(out)
    validate_schema([obj], "output.schema.json")
    assert obj["instances"] == 40 and obj["score"]["f1"] is not None
    lines = {line["instance_id"]: line for line in read_log(log)}
    assert len(lines) == 40
    assert lines["e07"]["result"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "empty": True}
    scored = [line["result"]["f1"] for k, line in lines.items() if k != "e07"]
    assert len(scored) == 39 and all(f > 0.8 for f in scored)
    assert obj["score"]["f1"] == pytest.approx(sum(scored) / 40)


LONG = " ".join(f"w{i % 991}" for i in range(40_000))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_a_40000_word_instance_with_rouge_is_an_error_at_once(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path], workers: list[str]
) -> None:
    instances = [*INSTANCES[:3], {"id": "huge", "input": "", "actual-output": LONG, "expected-output": [LONG[::-1]]},
                 *INSTANCES[3:]]
    write_harpia([{"id": "rouge", "parameters": {"rouge_types": ["rouge1", "rougeL"]}}, {"id": "chrf"}], instances)
    started = time.monotonic()
    result, out, log = run(pytester, *workers, tag="".join(workers))
    # not the many minutes rouge-score would take (generous bound: a shared, loaded machine)
    assert time.monotonic() - started < 300
    result.assert_outcomes(passed=len(INSTANCES), errors=1)
    result.stdout.fnmatch_lines(["*huge*too long for ROUGE-L: 40,000 output tokens x 40,000 reference tokens*"])
    output = {o["id"]: o for o in read_output(out)}
    assert output["rouge"]["instances"] == len(INSTANCES)
    # the huge instance's chrF still counts (it scored), its ROUGE does not
    assert output["chrf"]["instances"] == len(INSTANCES) + 1
    lines = read_log(log)
    assert ("huge", "rouge") not in {(x["instance_id"], x["metric_id"]) for x in lines}
    assert ("huge", "chrf") in {(x["instance_id"], x["metric_id"]) for x in lines}


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "n2"])
def test_an_instance_over_the_deadline_is_an_error_and_the_others_go_on(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path], workers: list[str]
) -> None:
    # 4,000 x 4,000 tokens: allowed by max_lcs_cells, but many seconds of pure Python.
    slow = " ".join(f"t{i % 97}" for i in range(4_000))
    instances = [*INSTANCES[:2], {"id": "slow", "input": "", "actual-output": slow, "expected-output": [slow[::-1]]},
                 *INSTANCES[2:]]
    write_harpia([{"id": "chrf"}, {"id": "rouge", "parameters": {"rouge_types": ["rougeL"], "max_lcs_cells": 100_000_000}}],
                 instances, name="data")
    (pytester.path / "gated.eval.yaml").write_text(
        yaml.safe_dump({"task": "harpia", "input_path": "data.harpia.json", "case_deadline": 2}), encoding="utf-8"
    )
    started = time.monotonic()
    result, out, log = run(pytester, "gated.eval.yaml", *workers, tag="".join(workers))
    assert time.monotonic() - started < 300
    result.assert_outcomes(passed=len(INSTANCES), errors=1)
    result.stdout.fnmatch_lines(["*slow*metric 'rouge': did not finish within the per-instance deadline of 2 s*"])
    rouge = {o["id"]: o for o in read_output(out)}["rouge"]
    assert rouge["instances"] == len(INSTANCES)
    lines = {(x["instance_id"], x["metric_id"]) for x in read_log(log)}
    # chrF finished before the deadline: it counts; ROUGE did not
    assert ("slow", "chrf") in lines and ("slow", "rouge") not in lines
    assert len(lines) == 2 * len(INSTANCES) + 1


def test_the_ini_deadline_applies_without_a_suite_file(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    slow = " ".join(f"t{i % 97}" for i in range(4_000))
    write_harpia([{"id": "rouge", "parameters": {"rouge_types": ["rougeL"], "max_lcs_cells": 100_000_000}}],
                 [INSTANCES[0], {"id": "slow", "actual-output": slow, "expected-output": [slow]}])
    pytester.makeini("[pytest]\nharpia_case_deadline = 0.5\n")
    result, _, _ = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*deadline of 0.5 s (ini evals_harpia_case_deadline*"])


def test_a_killed_run_keeps_the_log_of_what_it_measured(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    # Six quick instances, then one that computes for minutes (no deadline): the run is
    # killed while it works on that one.
    slow = " ".join(f"t{i % 97}" for i in range(9_000))
    instances = [*INSTANCES, {"id": "slow", "actual-output": slow, "expected-output": [slow[::-1]]}]
    write_harpia([{"id": "rouge", "parameters": {"rouge_types": ["rougeL"], "max_lcs_cells": 10**9}}], instances)
    out, log = pytester.path / "out.json", pytester.path / "log.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "harpia_case_deadline=0",
         f"--harpia-output={out}", f"--harpia-log={log}", "t.harpia.json"],
        cwd=pytester.path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text(encoding="utf-8").count("\n") >= len(INSTANCES)):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no log lines appeared"
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    lines = read_log(log)
    for line in lines:
        validate_schema(line, "log.schema.json")
    assert [line["instance_id"] for line in lines] == [i["id"] for i in INSTANCES]
    assert {line["suite"] for line in lines} == {"t"}
    assert not out.exists()  # the output is only ever complete


def test_the_complete_log_replaces_the_appended_one_in_instance_order(
    pytester: pytest.Pytester, write_harpia: Callable[..., Path]
) -> None:
    write_harpia([{"id": "chrf"}, {"id": "exact_match"}])
    log = pytester.path / "log.jsonl"
    log.write_text("stale line from an earlier run\n", encoding="utf-8")
    result = pytester.runpytest("-p", "no:cacheprovider", f"--harpia-log={log}")
    result.assert_outcomes(passed=len(INSTANCES))
    lines = read_log(log)
    # metric-major order at the end (appended lines were instance-major)
    assert [(x["metric_id"], x["instance_id"]) for x in lines] == [
        (m, i["id"]) for m in ("chrf", "exact_match") for i in INSTANCES
    ]
    assert json.dumps(lines).count("stale") == 0
