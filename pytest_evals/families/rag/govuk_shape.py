"""Is this rag_answers suite GOV.UK Chat's? Their wording, context text and metrics follow.

A suite is GOV.UK-shaped when it says so (``govuk: true``), or, unless it says
``govuk: false``, when it is one of their files: a config named after the task without
our ``.eval.yaml`` suffix (their ``config/defaults/rag_answers.yaml``), or one that
carries a field only their configs have (``claude_generation_model``, ``provider``).

What follows from it (and only from it):

- the judge's default persona is GOV.UK Chat's government-services one
  (:data:`pytest_evals.families.rag.prompts.JUDGE_SYSTEM`); other suites get a neutral
  one, and any suite's ``judge: {domain | system_prompt}`` replaces either;
- the contexts the judge reads are built as their code builds them (:mod:`.govuk_context`);
- with the ``deepeval`` extra installed, our metric names are scored by the DeepEval
  classes their configs use (:mod:`.deepeval_metric`), unless ``deepeval_metrics: never``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_evals.families.rag.config import RagConfig
    from pytest_evals.suites.suite_config import Suite

#: Suffixes of our own suite files; their configs are plain ``.yaml``.
OUR_SUFFIXES: tuple[str, ...] = (".eval.yaml", ".eval.yml", ".eval.json")

#: Fields only GOV.UK Chat's configs carry (given, even as null, they mark the file as theirs).
GOVUK_FIELDS: tuple[str, ...] = ("claude_generation_model", "provider")


def is_govuk_shaped(suite: Suite, config: RagConfig) -> bool:
    if config.govuk is not None:
        return config.govuk
    if not suite.path.name.endswith(OUR_SUFFIXES):
        return True
    return any(field in config.model_fields_set for field in GOVUK_FIELDS)
