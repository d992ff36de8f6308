"""Model names the Bedrock provider accepts besides Bedrock's own model ids.

Any Bedrock model id or inference profile id (``eu.amazon.nova-pro-v1:0``,
``openai.gpt-oss-120b-1:0``) is sent as it is. A project that names its models by key
(an application's own table, ``claude_sonnet_4_0 -> eu.anthropic.claude-sonnet-4-...``)
lists its keys in the ini key ``evals_bedrock_models`` (``KEY=MODEL_ID`` lines), and
suites and ``--evals-model`` may then say either. The id a key stands for is part of
the cache key (LLMSettings.key_fields), so changing the table never reuses an answer of
the model it named before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def parse_model_aliases(lines: Iterable[str]) -> dict[str, str]:
    """``KEY=MODEL_ID`` lines -> {key: id}; a malformed line is a ValueError naming it."""
    aliases: dict[str, str] = {}
    for line in lines:
        text = str(line).strip()
        if not text or text.startswith("#"):
            continue
        key, sep, value = (part.strip() for part in text.partition("="))
        if not sep or not key or not value:
            raise ValueError(f"evals_bedrock_models {text!r}: expected KEY=MODEL_ID")
        aliases[key] = value
    return aliases


def model_id(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """The id sent as Converse's ``modelId``."""
    return aliases.get(name, name) if aliases else name
