"""Token estimates for ``--evals-dry-run`` (no request is made, so no usage comes back).

About four characters per token, the usual rule of thumb for English with OpenAI's
tokenizers. tiktoken is deliberately not used: it downloads its vocabulary files on first
use, and nothing in this project may touch the network besides the configured endpoint.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: Per-message overhead of the chat format (role markers).
MESSAGE_OVERHEAD = 4
#: Completion estimate when the request sets no max_tokens.
DEFAULT_COMPLETION_ESTIMATE = 256


def count_text(text: str) -> int:
    return math.ceil(len(text) / 4)


def message_text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def estimate_prompt_tokens(messages: Sequence[Any]) -> int:
    return 3 + sum(MESSAGE_OVERHEAD + count_text(message_text(m)) for m in messages)


def estimate_completion_tokens(max_tokens: int | None) -> int:
    return max_tokens if max_tokens is not None else DEFAULT_COMPLETION_ESTIMATE
