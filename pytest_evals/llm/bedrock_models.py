"""Model names the Bedrock provider accepts besides Bedrock's own model ids.

Any Bedrock model id or inference profile id is sent as it is (GOV.UK's judge models,
``eu.amazon.nova-micro-v1:0``, ``openai.gpt-oss-120b-1:0``, are such ids). GOV.UK Chat
names its generation models by key (``claude_generation_model: claude_sonnet_4_0``,
passed to it as ``BEDROCK_CLAUDE_*_MODEL``); its own table maps each key to an id, and
the same keys are accepted here so a suite can say either.
"""

from __future__ import annotations

#: GOV.UK Chat's model keys and the Bedrock ids its table maps them to.
GOVUK_MODEL_KEYS: dict[str, str] = {
    "claude_sonnet_4_0": "eu.anthropic.claude-sonnet-4-20250514-v1:0",
    "claude_sonnet_4_6": "eu.anthropic.claude-sonnet-4-6",
    "claude_haiku_4_5": "eu.anthropic.claude-haiku-4-5-20251001-v1:0",
    "openai_gpt_oss_120b": "openai.gpt-oss-120b-1:0",
}


def model_id(name: str) -> str:
    """The id sent as Converse's ``modelId``."""
    return GOVUK_MODEL_KEYS.get(name, name)
