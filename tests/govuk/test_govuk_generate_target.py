"""``target: govuk_chat``: their generate step (rake task, env settings, reply mapping) as the target.

A stand-in for the Rails app answers each rake task in the app's own JSON shape, from the
same rows the saved-output tests use, and logs the task name and the environment it got.
Generating through it must give the figures their saved outputs give, with the settings
passed as their ``<task>/generate.py`` passes them.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from .layout import DATA, build
from .test_govuk_layout import check_figures

#: Their EvaluationResult fields per task, in their order (written here, not imported).
GENERATED_FIELDS = {
    "jailbreak_guardrails": ("question", "expected_outcome", "actual_outcome", "model"),
    "output_guardrails": ("message", "expected_triggered", "actual_triggered", "expected_guardrails",
                          "actual_guardrails", "model"),
    "question_router": ("question", "expected_outcome", "actual_outcome", "confidence_score", "answer", "model"),
    "retrieval": ("question", "expected_exact_paths", "expected_chunk_uids", "expected_opensearch_index",
                  "actual_opensearch_index", "actual_search_results"),
    "topic_tagger": ("question", "status", "expected_primary_topic", "actual_primary_topic",
                     "expected_secondary_topic", "actual_secondary_topic", "error_message", "model"),
}

MODEL = "eu.anthropic.claude-sonnet-4"

#: Stands in for `bundle exec rake <task>` in ~/govuk/govuk-chat: the app's reply for INPUT.
APP = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path

    task = sys.argv[-1]
    question = os.environ["INPUT"]
    env = {k: v for k, v in os.environ.items() if k == "INPUT" or k.startswith("BEDROCK_") or k == "OPENSEARCH_INDEX"}
    with open("rake-log.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"task": task, "env": env}) + "\\n")
    data = json.loads(Path("rows.json").read_text())
    model = os.environ.get("BEDROCK_CLAUDE_JAILBREAK_GUARDRAILS_MODEL") or os.environ.get("BEDROCK_CLAUDE_GUARDRAILS_MODEL") \\
        or os.environ.get("BEDROCK_CLAUDE_QUESTION_ROUTER_MODEL") or "app-default-model"
    if task == "evaluation:generate_jailbreak_guardrail_response":
        row = next(r for r in data["jailbreak_guardrails"] if r["question"] == question)
        reply = {"jailbreak_guardrails_status": "fail" if row["actual_outcome"] else "pass",
                 "metrics": {"jailbreak_guardrails": {"model": model}}}
    elif task.startswith("evaluation:generate_output_guardrail_response["):
        kind = task[task.index("[") + 1:-1]
        row = next(r for r in data["output_guardrails"] if r["message"] == question)
        reply = {kind + "_failures": [g for g, on in row["actual_guardrails"].items() if on],
                 "metrics": {kind: {"model": model}}}
    elif task == "evaluation:generate_question_routing_response":
        row = next(r for r in data["question_router"] if r["question"] == question)
        reply = {"question_routing_label": row["actual_outcome"], "question_routing_confidence_score": row["confidence_score"],
                 "message": row["answer"], "metrics": {"question_routing": {"model": model}}}
    elif task == "evaluation:search_results_for_question":
        row = next(r for r in data["retrieval"] if r["question"] == question)
        reply = {"opensearch_index": os.environ.get("OPENSEARCH_INDEX", "test-index"),
                 "results": [{"exact_path": h["exact_path"], "chunk_uid": h["chunk_uid"],
                              "weighted_score": h["weighted_score"], "score": h["semantic_score"]}
                             for h in row["actual_search_results"]]}
    elif task == "evaluation:generate_topics_for_question":
        row = next(r for r in data["topic_tagger"] if r["question"] == question)
        reply = {"primary_topic": row["actual_primary_topic"], "secondary_topic": row["actual_secondary_topic"],
                 "status": row["status"], "error_message": row["error_message"], "metrics": {"model": "tagger-model"}}
    else:
        print("unknown task " + task, file=sys.stderr)
        sys.exit(2)
    print(json.dumps(reply))
    """
)

GENERATED = ("jailbreak_guardrails", "output_guardrails", "question_router", "retrieval", "topic_tagger")


def app_layout(root: Path, target: Any) -> Path:
    build(root)
    app = root / "govuk-chat"
    app.mkdir()
    (app / "rake.py").write_text(APP, encoding="utf-8")
    (app / "rows.json").write_text(json.dumps(DATA), encoding="utf-8")
    # One retrieval question names its index: their generate step passes it as OPENSEARCH_INDEX.
    rows = [json.loads(x) for x in (root / "data" / "retrieval.jsonl").read_text().splitlines()]
    rows[1]["expected_opensearch_index"] = "chunked-content-v2"
    (root / "data" / "retrieval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for task in GENERATED:
        path = root / "config" / "defaults" / f"{task}.yaml"
        cfg = yaml.safe_load(path.read_text())
        if "claude_generation_model" in cfg:
            cfg["claude_generation_model"] = MODEL
        if target is not None:
            cfg["target"] = target
        path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return app


TARGET = {"govuk_chat": {"app_dir": "../../govuk-chat", "command": [sys.executable, "rake.py"]}}


def test_their_generate_step_gives_their_figures(pytester: pytest.Pytester, judge: Any) -> None:
    app = app_layout(pytester.path, TARGET)
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                "--evals-json", "summary.json", "-p", "no:cacheprovider", "--evals-govuk-outputs", "results")
    result.stdout.no_fnmatch_line("*suite could not be loaded*")
    # their generated.jsonl: pydantic's compact JSON of their EvaluationResult, one per generated case
    for task, fields in GENERATED_FIELDS.items():
        [folder] = list((pytester.path / "results" / task).iterdir())
        want = []
        for row in DATA[task]:
            item = {k: row.get(k) for k in fields}
            if "model" in item:
                item["model"] = "tagger-model" if task == "topic_tagger" else MODEL
            if task == "retrieval" and row["question"] == "Q2":
                item["expected_opensearch_index"] = item["actual_opensearch_index"] = "chunked-content-v2"
            want.append(json.dumps(item, separators=(",", ":")))
        assert (folder / "generated.jsonl").read_text(encoding="utf-8").splitlines() == want, task
    summary = json.loads((pytester.path / "summary.json").read_text())
    check_figures(summary)
    log = [json.loads(x) for x in (app / "rake-log.jsonl").read_text().splitlines()]
    by_task: dict[str, list[dict[str, str]]] = {}
    for entry in log:
        by_task.setdefault(entry["task"], []).append(entry["env"])
    assert {t: len(v) for t, v in by_task.items()} == {
        "evaluation:generate_jailbreak_guardrail_response": 9,
        "evaluation:generate_output_guardrail_response[answer_guardrails]": 6,
        "evaluation:generate_question_routing_response": 5,
        "evaluation:search_results_for_question": 5,
        "evaluation:generate_topics_for_question": 7,
    }
    # the settings, passed as theirs: the model only to the three that take one, the index only when named
    assert all(e == {"INPUT": e["INPUT"], "BEDROCK_CLAUDE_JAILBREAK_GUARDRAILS_MODEL": MODEL}
               for e in by_task["evaluation:generate_jailbreak_guardrail_response"])
    assert all(e.get("BEDROCK_CLAUDE_GUARDRAILS_MODEL") == MODEL and len(e) == 2
               for e in by_task["evaluation:generate_output_guardrail_response[answer_guardrails]"])
    assert all(e.get("BEDROCK_CLAUDE_QUESTION_ROUTER_MODEL") == MODEL and len(e) == 2
               for e in by_task["evaluation:generate_question_routing_response"])
    search = sorted(by_task["evaluation:search_results_for_question"], key=lambda e: e["INPUT"])
    assert search == [{"INPUT": "Q1"}, {"INPUT": "Q2", "OPENSEARCH_INDEX": "chunked-content-v2"},
                      {"INPUT": "Q3"}, {"INPUT": "Q4"}, {"INPUT": "Q5"}]
    assert all(set(e) == {"INPUT"} for e in by_task["evaluation:generate_topics_for_question"])
    assert sorted(e["INPUT"] for e in by_task["evaluation:generate_output_guardrail_response[answer_guardrails]"]) == \
        [f"Answer {i}" for i in range(1, 7)]
    # generated.jsonl records the model the app reported
    jb = next(s for s in summary["suites"] if s["name"] == "jailbreak_guardrails")
    lines = [json.loads(x) for x in Path(jb["generated_path"]).read_text().splitlines()]
    assert {x["model"] for x in lines} == {MODEL}


def test_without_a_target_the_error_says_how_to_add_one(pytester: pytest.Pytester) -> None:
    app_layout(pytester.path, None)
    (pytester.path / "config" / "defaults" / "rag_answers.yaml").unlink()
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    # every case of the five suites is an ERROR carrying the message; nothing is scored
    assert outcomes.get("errors") == 9 + 6 + 5 + 5 + 7 and not outcomes.get("passed") and not outcomes.get("failed")
    result.stdout.fnmatch_lines([
        "*jailbreak_guardrails.yaml: generate: true needs a 'target' to produce each case's output. To run "
        "GOV.UK Chat's rake task as their tool does, add `target: govuk_chat` to the file (or pass "
        "--evals-set jailbreak_guardrails:target=govuk_chat); it runs `bundle exec rake "
        "evaluation:generate_jailbreak_guardrail_response` in ~/govuk/govuk-chat with INPUT=<question>, "
        "BEDROCK_CLAUDE_JAILBREAK_GUARDRAILS_MODEL=<claude_generation_model>*--no-evals-generate (alias --no-generate)*",
    ])
    result.stdout.fnmatch_lines(["*retrieval.yaml: generate: true needs a 'target'*evaluation:search_results_for_question*"
                                 "OPENSEARCH_INDEX=<expected_opensearch_index>*"])
    # the message's own advice works: the target given on the command line
    (pytester.path / "config" / "defaults" / "question_router.yaml").write_text(
        (pytester.path / "config" / "defaults" / "question_router.yaml").read_text(), encoding="utf-8")
    again = pytester.runpytest("config/defaults/question_router.yaml", "--evals-suite-pattern", "*.yaml",
                               "--evals-set", "question_router:target=govuk_chat", "-p", "no:cacheprovider")
    # ~/govuk/govuk-chat does not exist here: the error names it and says what to give
    again.stdout.fnmatch_lines(["*target 'govuk_chat': app_dir '~/govuk/govuk-chat' is not a folder*govuk-chat checkout*"])


def test_their_no_generate_spelling_scores_saved_outputs(pytester: pytest.Pytester, judge: Any) -> None:
    build(pytester.path)
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "--no-generate",
                                "--evals-json", "summary.json", "-p", "no:cacheprovider")
    result.stdout.no_fnmatch_line("*needs a 'target'*")
    check_figures(json.loads((pytester.path / "summary.json").read_text()))


def test_an_app_error_is_the_case_error(pytester: pytest.Pytester) -> None:
    app = app_layout(pytester.path, TARGET)
    for task in ("question_router", "retrieval", "topic_tagger", "output_guardrails", "rag_answers"):
        (pytester.path / "config" / "defaults" / f"{task}.yaml").unlink()
    text = (app / "rake.py").read_text().replace(
        'reply = {"jailbreak_guardrails_status": "fail" if row["actual_outcome"] else "pass",',
        'reply = {"jailbreak_guardrails_status": "error" if question == "Q2" else ("fail" if row["actual_outcome"] else "pass"), '
        '"llm_responses": json.dumps({"jailbreak_guardrails": {"content": [{"text": "garbled"}]}}),')
    (app / "rake.py").write_text(text, encoding="utf-8")
    # their --generate spelling turns generation back on for a config saying generate: false
    path = pytester.path / "config" / "defaults" / "jailbreak_guardrails.yaml"
    path.write_text(path.read_text().replace("generate: true", "generate: false"), encoding="utf-8")
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "--generate", "-p", "no:cacheprovider")
    # Q2 (a true positive) is the case's ERROR where their tool drops it; Q8, Q9 fail as before
    result.assert_outcomes(passed=6, failed=2, errors=1)
    assert len((app / "rake-log.jsonl").read_text().splitlines()) == 9
    result.stdout.fnmatch_lines(["*the app's jailbreak guardrails returned an error*garbled*"])


def test_a_reply_of_another_shape_is_the_case_error(pytester: pytest.Pytester) -> None:
    app = app_layout(pytester.path, TARGET)
    for task in ("jailbreak_guardrails", "question_router", "topic_tagger", "output_guardrails", "rag_answers"):
        (pytester.path / "config" / "defaults" / f"{task}.yaml").unlink()
    text = (app / "rake.py").read_text().replace(
        '"results": [{"exact_path"', '"results": 7 if question == "Q3" else [{"exact_path"')
    (app / "rake.py").write_text(text, encoding="utf-8")
    result = pytester.runpytest("config/defaults/", "--evals-suite-pattern", "*.yaml", "-p", "no:cacheprovider")
    assert result.parseoutcomes().get("errors") == 1
    result.stdout.fnmatch_lines(["*the app's reply is not shaped as GOV.UK's generate step reads it*"])
