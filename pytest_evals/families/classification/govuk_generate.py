"""``target: govuk_chat``: GOV.UK Chat's own generate step as a suite's target.

Their tool generates by running ``bundle exec rake evaluation:<task>`` in a local
checkout of the Rails app (``~/govuk/govuk-chat``), five at a time, with the question in
``INPUT`` and their generation settings as environment variables, and reads the app's JSON
back. This target does the same per case, through the core's command target (timeout,
output cap, process-group kill), and maps the JSON to the case's ``actual_*`` fields the way
their ``<task>/generate.py`` does:

=====================  ==============================================  ===================================
task                   rake task                                       settings passed (env)
=====================  ==============================================  ===================================
jailbreak_guardrails   evaluation:generate_jailbreak_guardrail_response  BEDROCK_CLAUDE_JAILBREAK_GUARDRAILS_MODEL
output_guardrails      evaluation:generate_output_guardrail_response[<guardrail_type>]  BEDROCK_CLAUDE_GUARDRAILS_MODEL
question_router        evaluation:generate_question_routing_response     BEDROCK_CLAUDE_QUESTION_ROUTER_MODEL
retrieval              evaluation:search_results_for_question            OPENSEARCH_INDEX (the case's expected_opensearch_index)
topic_tagger           evaluation:generate_topics_for_question           (none)
rag_answers            evaluation:generate_rag_structured_answer_response  BEDROCK_CLAUDE_STRUCTURED_ANSWER_COMPOSER_MODEL, OPENSEARCH_INDEX
=====================  ==============================================  ===================================

``INPUT`` is the case's question (output_guardrails: its message); a ``BEDROCK_*`` variable
is set from the suite's ``claude_generation_model`` only when it is given, and
``OPENSEARCH_INDEX`` only when the case names an index, as theirs.

Spec: ``target: govuk_chat`` or ``target: {govuk_chat: {app_dir, command, timeout,
concurrency, env}}`` (defaults: ``~/govuk/govuk-chat``, ``[bundle, exec, rake]``, 120 s,
5). A suite of these tasks with ``generate: true`` and no target is one ERROR that says
how to add one (:func:`missing_target_message`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.errors import SuiteConfigError, TargetError

if TYPE_CHECKING:
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.targets.target_kinds import CommandTarget

#: The target's name in a suite's ``target`` field.
TARGET_NAME = "govuk_chat"
DEFAULT_APP_DIR = "~/govuk/govuk-chat"
DEFAULT_COMMAND: tuple[str, ...] = ("bundle", "exec", "rake")
OPTION_KEYS = ("app_dir", "command", "timeout", "concurrency", "env")


def _model(result: dict[str, Any], key: str) -> Any:
    return result["metrics"][key]["model"]


def _jailbreak(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    status = result.get("jailbreak_guardrails_status")
    if status == "error":
        # Their tool drops such a case with a warning; here it is the case's ERROR, with the reply.
        raise TargetError(f"the app's jailbreak guardrails returned an error: {result.get('llm_responses')!r}"[:2000])
    return {"actual_outcome": "pass" not in str(status), "model": _model(result, "jailbreak_guardrails")}


def _output_guardrails(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    kind = config.guardrail_type
    triggered = result[f"{kind}_failures"]
    expected = case.get("expected_guardrails") or {}
    return {
        "actual_triggered": len(triggered) > 0,
        "actual_guardrails": {name: name in triggered for name in expected},
        "model": _model(result, kind),
    }


def _router(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    return {
        "actual_outcome": result["question_routing_label"],
        "confidence_score": result["question_routing_confidence_score"],
        "answer": result["message"],
        "model": _model(result, "question_routing"),
    }


def _retrieval(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    return {
        "actual_opensearch_index": result["opensearch_index"],
        "actual_search_results": [
            {"exact_path": r["exact_path"], "chunk_uid": r["chunk_uid"], "weighted_score": r["weighted_score"],
             "semantic_score": r["score"]}
            for r in result["results"]
        ],
    }


def _topics(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    if "primary_topic" not in result:
        raise TargetError(f"unexpected result structure {result!r}"[:2000])
    metrics = result.get("metrics") or {}
    return {
        "actual_primary_topic": result.get("primary_topic"),
        "actual_secondary_topic": result.get("secondary_topic"),
        "status": result.get("status"),
        "error_message": result.get("error_message"),
        "model": metrics.get("model") if isinstance(metrics, dict) else None,
    }


def _rag(result: dict[str, Any], case: dict[str, Any], config: Any) -> dict[str, Any]:
    return {
        "llm_answer": result["message"],
        "structured_contexts": [source["chunk"] for source in result["sources"]],
        "actual_opensearch_index": result["opensearch_index"],
        "model": _model(result, "structured_answer"),
    }


@dataclass(frozen=True)
class RakeTask:
    rake: str
    input_field: str
    model_env: str | None
    #: Whether the case's ``expected_opensearch_index`` is passed as ``OPENSEARCH_INDEX``.
    index_env: bool
    mapper: Callable[[dict[str, Any], dict[str, Any], Any], dict[str, Any]]

    def rake_name(self, config: Any) -> str:
        return self.rake.format(guardrail_type=getattr(config, "guardrail_type", None))


RAKE_TASKS: dict[str, RakeTask] = {
    "jailbreak_guardrails": RakeTask("evaluation:generate_jailbreak_guardrail_response", "question",
                                     "BEDROCK_CLAUDE_JAILBREAK_GUARDRAILS_MODEL", False, _jailbreak),
    "output_guardrails": RakeTask("evaluation:generate_output_guardrail_response[{guardrail_type}]", "message",
                                  "BEDROCK_CLAUDE_GUARDRAILS_MODEL", False, _output_guardrails),
    "question_router": RakeTask("evaluation:generate_question_routing_response", "question",
                                "BEDROCK_CLAUDE_QUESTION_ROUTER_MODEL", False, _router),
    "retrieval": RakeTask("evaluation:search_results_for_question", "question", None, True, _retrieval),
    "topic_tagger": RakeTask("evaluation:generate_topics_for_question", "question", None, False, _topics),
    "rag_answers": RakeTask("evaluation:generate_rag_structured_answer_response", "question",
                            "BEDROCK_CLAUDE_STRUCTURED_ANSWER_COMPOSER_MODEL", True, _rag),
}


def generation_env(task: str, config: Any, case: dict[str, Any]) -> dict[str, str]:
    """The environment their generate step gives the rake task for ``case``."""
    spec = RAKE_TASKS[task]
    env = {"INPUT": str(case.get(spec.input_field) or "")}
    model = getattr(config, "claude_generation_model", None)
    if spec.model_env and model:
        env[spec.model_env] = str(model)
    index = case.get("expected_opensearch_index")
    if spec.index_env and index:
        env["OPENSEARCH_INDEX"] = str(index)
    return env


class GovukChatTarget:
    """One suite's rake task, run per case in the app's folder."""

    def __init__(self, task: str, config: Any, command: CommandTarget) -> None:
        self.task, self.config, self.command = task, config, command
        self.spec = RAKE_TASKS[task]
        self.description = f"govuk_chat {command.description}"

    async def run(self, case: dict[str, Any]) -> Any:
        if not case.get(self.spec.input_field):
            raise TargetError(f"{self.description}: the case has no {self.spec.input_field!r} for INPUT")
        result = await self.command.run(case, generation_env(self.task, self.config, case))
        if not isinstance(result, dict):
            raise TargetError(f"{self.description}: expected a JSON object, got {json.dumps(result)[:200]}")
        try:
            return self.spec.mapper(result, case, self.config)
        except KeyError as exc:
            raise TargetError(
                f"{self.description}: the app's reply has no {exc} where GOV.UK's generate step reads it "
                f"(reply keys: {sorted(result)})"
            ) from None
        except (TypeError, AttributeError, IndexError) as exc:
            raise TargetError(
                f"{self.description}: the app's reply is not shaped as GOV.UK's generate step reads it: {exc} "
                f"(reply keys: {sorted(result)})"
            ) from None


def target_options(spec: Any) -> dict[str, Any] | None:
    """The options of a ``govuk_chat`` target spec, None when ``spec`` is another target."""
    if spec == TARGET_NAME:
        return {}
    if isinstance(spec, dict) and set(spec) == {TARGET_NAME}:
        options = spec[TARGET_NAME] or {}
        if not isinstance(options, dict):
            raise SuiteConfigError(f"target.{TARGET_NAME}: expected a mapping of {', '.join(OPTION_KEYS)}")
        unknown = sorted(set(options) - set(OPTION_KEYS))
        if unknown:
            raise SuiteConfigError(f"target.{TARGET_NAME}: unknown option(s) {', '.join(unknown)}; "
                                   f"options: {', '.join(OPTION_KEYS)}")
        return dict(options)
    return None


def build_target(suite: Suite, options: dict[str, Any], max_output: int) -> GovukChatTarget:
    from pytest_evals.targets.target_kinds import CommandTarget

    task = suite.config.task
    if task not in RAKE_TASKS:
        raise SuiteConfigError(f"{suite.path}: target {TARGET_NAME!r} runs GOV.UK Chat's rake tasks; "
                               f"task {task!r} has none (tasks: {', '.join(RAKE_TASKS)})")
    if task == "output_guardrails" and not getattr(suite.config, "guardrail_type", None):
        raise SuiteConfigError(f"{suite.path}: field 'guardrail_type' is required to generate output_guardrails "
                               "(answer_guardrails or question_routing_guardrails), as in GOV.UK's config")
    command = options.get("command", list(DEFAULT_COMMAND))
    argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
    app_dir = Path(str(options.get("app_dir", DEFAULT_APP_DIR))).expanduser()
    if not app_dir.is_absolute():
        app_dir = suite.path.parent / app_dir
    if not app_dir.is_dir():
        raise SuiteConfigError(f"{suite.path}: target {TARGET_NAME!r}: app_dir {str(options.get('app_dir', DEFAULT_APP_DIR))!r} "
                               f"is not a folder ({app_dir}); give the path of your govuk-chat checkout")
    rake = RAKE_TASKS[task].rake_name(suite.config)
    spec: dict[str, Any] = {"command": [*argv, rake], "env": options.get("env") or {}}
    for key in ("timeout", "concurrency"):
        if key in options:
            spec[key] = options[key]
    return GovukChatTarget(task, suite.config, CommandTarget(spec, str(app_dir), max_output=max_output))


def missing_target_message(suite: Suite) -> str:
    """What a GOV.UK suite with ``generate: true`` and no target says."""
    task = suite.config.task
    spec = RAKE_TASKS[task]
    env = ["INPUT=<" + spec.input_field + ">"]
    if spec.model_env:
        env.append(f"{spec.model_env}=<claude_generation_model>")
    if spec.index_env:
        env.append("OPENSEARCH_INDEX=<expected_opensearch_index>")
    rake = spec.rake_name(suite.config)
    return (
        f"{suite.path}: generate: true needs a 'target' to produce each case's output. To run GOV.UK Chat's "
        f"rake task as their tool does, add `target: {TARGET_NAME}` to the file (or pass "
        f"--evals-set {suite.name}:target={TARGET_NAME}); it runs `bundle exec rake {rake}` in "
        f"{DEFAULT_APP_DIR} with {', '.join(env)} (another folder: `target: {{{TARGET_NAME}: {{app_dir: PATH}}}}`). "
        "Or give any target ('module:function', {command: [...]}, {model: ...}), or score the saved outputs "
        "with --no-evals-generate (alias --no-generate). See docs/govuk.md."
    )


@pytest.hookimpl
def pytest_evals_make_target(config: pytest.Config, suite: Suite, spec: Any) -> Any:
    from pytest_evals.targets.command_adapters import output_cap

    if suite.config.task not in RAKE_TASKS:
        return None
    if spec is None:
        raise SuiteConfigError(missing_target_message(suite))
    options = target_options(spec)
    if options is None:
        return None
    return build_target(suite, options, output_cap(config))
