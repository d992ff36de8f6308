"""GOV.UK Chat's config rules (issue 28): unknown fields kept and warned about, their value checks.

Their config models ignore fields they do not know (pydantic's default), so a config
written for their next version runs; ours keeps such a field and warns once per file,
in plain runs and under ``-n 2``. A bad ``guardrail_type`` is rejected as theirs rejects it,
as one ERROR naming the file and the field, while the other suites still run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pytest_evals.families.classification.config import ChatSuiteConfig
from pytest_evals.families.classification.config_checks import notes

from .layout import build

ARGS = ("--evals-suite-pattern", "*.yaml", "--no-evals-generate", "-p", "no:cacheprovider")
TASKS = ("jailbreak_guardrails", "output_guardrails", "question_router", "retrieval", "topic_tagger")


def edit(root: Path, task: str, **fields: object) -> Path:
    path = root / "config" / "defaults" / f"{task}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def layout_with_new_fields(root: Path) -> None:
    build(root)
    (root / "config" / "defaults" / "rag_answers.yaml").unlink()  # the rag family reads its own config
    for task in TASKS:
        edit(root, task, evaluation_owner="ai-team", new_thresholds={"x": 1})


@pytest.mark.parametrize("dist", [False, True], ids=["plain", "xdist"])
def test_unknown_fields_are_kept_and_warned_about_once(pytester: pytest.Pytester, dist: bool) -> None:
    layout_with_new_fields(pytester.path)
    extra = ("-n", "2") if dist else ()
    run = pytester.runpytest_subprocess if dist else pytester.runpytest
    # -W error: the note is no Python warning, so it cannot turn into a collection error
    result = run("config/defaults/", *ARGS, *extra, "-W", "error", "--evals-json", "summary.json")
    out = result.stdout.str()
    outcomes = result.parseoutcomes()
    # topic_tagger's status: error row is their "errored" case, an ERROR here; nothing else
    assert outcomes.get("errors", 0) == 1, out[-3000:]
    result.stdout.fnmatch_lines(["ERROR config/defaults/topic_tagger.yaml::line-7 *"])
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes["errors"] == 9 + 6 + 5 + 5 + 7
    result.stdout.no_fnmatch_line("*suite could not be loaded*")
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    for task in TASKS:
        line = (f"WARNING GOV.UK config: *{task}.yaml: field(s) 'evaluation_owner', 'new_thresholds' not known to "
                f"pytest_evals' {task} task: kept and not used (GOV.UK Chat's own config models ignore unknown fields too)")
        result.stdout.fnmatch_lines([line])
        # once per file, however many processes read it
        assert out.count(f"{task}.yaml: field(s) 'evaluation_owner'") == 1, out
        assert sum(f"{task}.yaml: field(s)" in n for n in summary["govuk_config_notes"]) == 1


def test_the_unknown_fields_are_kept_on_the_config() -> None:
    raw = {"task": "jailbreak_guardrails", "what": "x", "generate": False, "input_path": "d.jsonl", "owner": "me"}
    config = ChatSuiteConfig.model_validate(raw, context={"suite_path": "/kept/jailbreak_guardrails.yaml", "task_from_file_name": True})
    again = ChatSuiteConfig.model_validate(raw, context={"suite_path": "/kept/jailbreak_guardrails.yaml", "task_from_file_name": True})
    assert config.govuk_unknown_fields == {"owner": "me"} == again.govuk_unknown_fields
    assert config.govuk_layout
    # a run folder's config.json reads back (rescore) with what was kept
    back = ChatSuiteConfig.model_validate(config.model_dump(mode="json"))
    assert back.govuk_unknown_fields == {"owner": "me"} and back.govuk_layout
    ours = ChatSuiteConfig.model_validate({k: v for k, v in raw.items() if k != "owner"}, context={"task_from_file_name": False})
    assert not ours.govuk_layout and ours.govuk_unknown_fields == {}
    assert sum("/kept/jailbreak_guardrails.yaml" in n for n in notes()) == 1  # the second read adds none


def test_a_pytest_evals_suite_still_rejects_an_unknown_field(pytester: pytest.Pytester) -> None:
    # With task: given the file is ours: a misspelt gate must not be ignored.
    build(pytester.path)
    (pytester.path / "mine.eval.yaml").write_text(
        "task: jailbreak_guardrails\ninput_path: data/jailbreak_guardrails.jsonl\ntresholds: {precision: 0.9}\n", encoding="utf-8")
    result = pytester.runpytest("mine.eval.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*mine.eval.yaml*", "*field 'tresholds'*Extra inputs are not permitted*"])


def test_a_bad_guardrail_type_is_one_error_naming_file_and_field(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    (pytester.path / "config" / "defaults" / "rag_answers.yaml").unlink()
    edit(pytester.path, "output_guardrails", guardrail_type="answer_guardrail")
    result = pytester.runpytest("config/defaults/", *ARGS)
    result.stdout.fnmatch_lines([
        "*output_guardrails.yaml: invalid suite configuration*",
        "*field 'guardrail_type': Value error, 'answer_guardrail' is not a guardrail type of GOV.UK Chat's "
        "output_guardrails; expected one of 'answer_guardrails', 'question_routing_guardrails'*",
    ])
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 2  # this suite, and topic_tagger's errored case as always
    result.stdout.fnmatch_lines(["ERROR config/defaults/output_guardrails.yaml::suite-error *"])
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + 1 == 9 + 5 + 5 + 7  # the others ran


@pytest.mark.parametrize("value", ["answer_guardrails", "question_routing_guardrails"])
def test_their_guardrail_types_are_accepted(value: str) -> None:
    config = ChatSuiteConfig.model_validate({"task": "output_guardrails", "guardrail_type": value})
    assert config.guardrail_type == value
    # other tasks do not have the field in their models: any value is theirs to ignore
    assert ChatSuiteConfig.model_validate({"task": "question_router", "guardrail_type": "x"}).guardrail_type == "x"


def test_a_run_of_their_config_with_new_fields_rescores(pytester: pytest.Pytester) -> None:
    import subprocess
    import sys

    layout_with_new_fields(pytester.path)
    pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", *ARGS, "--evals-report-dir", "runs")
    [folder] = list((pytester.path / "runs").iterdir())
    done = subprocess.run([sys.executable, "-m", "pytest_evals.cli.main", "rescore", str(folder)],
                          capture_output=True, text=True, cwd=pytester.path)
    assert done.returncode in (0, 1), done.stderr  # 1: the suite's cases failed, as in the run
    assert "Extra inputs" not in done.stdout + done.stderr and "jailbreak_guardrails" in done.stdout


def _rows(root: Path, task: str) -> list[dict[str, object]]:
    path = root / "data" / f"{task}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_rows(root: Path, task: str, rows: list[dict[str, object]]) -> None:
    (root / "data" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_rows_their_models_refuse_are_one_error_each_naming_file_line_and_field(pytester: pytest.Pytester) -> None:
    build(pytester.path)
    (pytester.path / "config" / "defaults" / "rag_answers.yaml").unlink()
    root = pytester.path
    jb = _rows(root, "jailbreak_guardrails")
    del jb[1]["model"]  # line 2
    _write_rows(root, "jailbreak_guardrails", jb)
    og = _rows(root, "output_guardrails")
    og[0]["question"] = og[0].pop("message")  # line 1: ours reads question, their model requires message
    _write_rows(root, "output_guardrails", og)
    qr = _rows(root, "question_router")
    del qr[2]["confidence_score"]  # line 3
    qr[3]["model"] = None  # line 4: model is a str in their model
    _write_rows(root, "question_router", qr)
    rt = _rows(root, "retrieval")
    del rt[0]["actual_search_results"][1]["semantic_score"]  # line 1
    _write_rows(root, "retrieval", rt)
    tt = _rows(root, "topic_tagger")
    del tt[4]["actual_secondary_topic"]  # line 5: null is a value, a missing key is not
    _write_rows(root, "topic_tagger", tt)
    result = pytester.runpytest("config/defaults/", *ARGS)
    result.stdout.fnmatch_lines_random([
        "*data/jailbreak_guardrails.jsonl:2: field 'model': Field required (GOV.UK Chat's jailbreak_guardrails.EvaluationResult requires it)*",
        "*data/output_guardrails.jsonl:1: field 'message': Field required*",
        "*data/question_router.jsonl:3: field 'confidence_score': Field required*",
        "*data/question_router.jsonl:4: field 'model': Input should not be null*",
        "*data/retrieval.jsonl:1: field 'actual_search_results.1.semantic_score': Field required (GOV.UK Chat's retrieval.SearchResult*",
        "*data/topic_tagger.jsonl:5: field 'actual_secondary_topic': Field required*",
    ])
    outcomes = result.parseoutcomes()
    assert outcomes["errors"] == 6 + 1  # the six rows, and topic_tagger's status: error row as always
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) + outcomes["errors"] == 9 + 6 + 5 + 5 + 7
    # the same rows in a pytest_evals suite (task: given) follow our looser rules
    (root / "mine.eval.yaml").write_text("task: question_router\ninput_path: data/question_router.jsonl\n", encoding="utf-8")
    ours = pytester.runpytest("mine.eval.yaml", "-p", "no:cacheprovider")
    assert ours.parseoutcomes().get("errors", 0) == 0


def _rag_layout(root: Path, **metric_extra: object) -> None:
    build(root)
    for task in ("jailbreak_guardrails", "output_guardrails", "question_router", "retrieval", "topic_tagger"):
        (root / "config" / "defaults" / f"{task}.yaml").unlink()
    edit(root, "rag_answers", evaluation_owner="ai-team")
    path = root / "config" / "defaults" / "rag_answers.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["metrics"][0].update(metric_extra)
    data["n_runs"] = 1
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def test_rag_answers_unknown_fields_are_kept_and_noted_once(pytester: pytest.Pytester, judge: object) -> None:
    _rag_layout(pytester.path, max_tokens=15000)
    result = pytester.runpytest("config/defaults/", *ARGS, "--evals-json", "summary.json")
    assert result.parseoutcomes() == {"passed": 2}, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["WARNING GOV.UK config: *rag_answers.yaml: field(s) 'evaluation_owner', "
                                 "'metrics.0.max_tokens' not known to pytest_evals' rag_answers task: kept and not used*"])
    assert result.stdout.str().count("rag_answers.yaml: field(s)") == 1
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert sum("rag_answers.yaml: field(s)" in n for n in summary["govuk_config_notes"]) == 1


def test_a_judge_model_outside_their_list_is_one_error_naming_the_field(pytester: pytest.Pytester) -> None:
    _rag_layout(pytester.path, model="gpt-5-turbo")
    result = pytester.runpytest("config/defaults/", *ARGS)
    result.stdout.fnmatch_lines([
        "*rag_answers.yaml: invalid suite configuration*",
        "*metrics*0*model*'gpt-5-turbo' is not one of GOV.UK Chat's judge models (their LLMJudgeModel): gpt-4o-mini, "
        "gpt-4o, eu.amazon.nova-micro-v1:0, *openai.gpt-oss-120b-1:0; their tool refuses it*",
    ])
    assert result.parseoutcomes() == {"errors": 1}


def test_their_judge_models_are_accepted_and_ours_take_any() -> None:
    from pytest_evals.families.rag.config import RagConfig
    from pytest_evals.families.rag.govuk_rules import LLM_JUDGE_MODELS

    theirs = {"suite_path": "/x/rag_answers.yaml", "task_from_file_name": True}
    for model in LLM_JUDGE_MODELS:
        config = RagConfig.model_validate({"task": "rag_answers", "metrics": [{"name": "bias", "model": model}]},
                                          context=theirs)
        assert config.metrics[0].model == model
    with pytest.raises(ValueError, match=r"not one of GOV\.UK Chat's judge models"):
        RagConfig.model_validate({"task": "rag_answers", "metrics": [{"name": "bias", "model": "local-llama"}]},
                                 context=theirs)
    ours = RagConfig.model_validate({"task": "rag_answers", "metrics": [{"name": "bias", "model": "local-llama"}]},
                                    context={"task_from_file_name": False})
    assert ours.metrics[0].model == "local-llama"
    kept = RagConfig.model_validate({"task": "rag_answers", "metrics": [{"name": "bias", "owner": "me"}], "x": 1},
                                    context=theirs)
    assert kept.govuk_unknown_fields == {"x": 1, "metrics.0.owner": "me"}
    dumped = kept.model_dump(mode="json", include={"task", "metrics", "govuk_unknown_fields"}, by_alias=False)
    dumped["metrics"] = [{"name": "bias"}]
    assert RagConfig.model_validate(dumped).govuk_unknown_fields == kept.govuk_unknown_fields  # a dump reads back


def test_rag_rows_their_model_refuses_are_one_error_each(pytester: pytest.Pytester, judge: object) -> None:
    _rag_layout(pytester.path)
    root = pytester.path
    rows = _rows(root, "rag_answers")
    del rows[0]["model"]  # line 1
    rows[1]["structured_contexts"] = [{k: v for k, v in c.items() if k != "base_path"}
                                      for c in rows[1]["structured_contexts"]]  # line 2
    _write_rows(root, "rag_answers", [*rows, dict(rows[0], model="m")])  # line 3 is fine
    result = pytester.runpytest("config/defaults/", *ARGS)
    result.stdout.fnmatch_lines_random([
        "*data/rag_answers.jsonl:1: field 'model': Field required (GOV.UK Chat's rag_answers.EvaluationTestCase*",
        "*data/rag_answers.jsonl:2: field 'structured_contexts.0.base_path': Field required*",
    ])
    assert result.parseoutcomes() == {"errors": 2, "passed": 1}, result.stdout.str()[-2000:]
    # the same rows in a pytest_evals suite (task: given) follow our looser rules
    (root / "mine.eval.yaml").write_text("task: rag_answers\ninput_path: data/rag_answers.jsonl\n"
                                         "metrics: [faithfulness]\n", encoding="utf-8")
    ours = pytester.runpytest("mine.eval.yaml", "-p", "no:cacheprovider")
    assert ours.parseoutcomes().get("errors", 0) == 0, ours.stdout.str()[-2000:]
