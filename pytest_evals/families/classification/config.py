"""The suite configuration of GOV.UK Chat's tasks: the core's fields and theirs.

GOV.UK Chat's ``config/defaults/<task>.yaml`` files carry fields the core has no use
for; they are accepted here so those files load unchanged.
"""

from __future__ import annotations

from pytest_evals.suites.suite_config import SuiteConfig


class ChatSuiteConfig(SuiteConfig):
    #: The model the system under test generates with (recorded in generated.jsonl when
    #: the target does not report one; give it to a command target with ``env:``).
    claude_generation_model: str | None = None
    #: output_guardrails' guardrail set (for the target's command line).
    guardrail_type: str | None = None
    #: The judge provider (informational: the endpoint comes from the LLM settings).
    provider: str | None = None
