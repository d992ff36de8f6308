"""Our OpenAI-shaped request body as Bedrock's Converse call, and back.

The client builds, keys and caches one body shape for every provider; only the Bedrock
transport (:mod:`.bedrock_transport`) sees Converse. Mapping:

- ``model`` -> ``modelId`` (the keys of ``evals_bedrock_models`` accepted,
  llm/bedrock_models.py);
- ``system``/``developer`` messages -> ``system``; ``user``/``assistant`` messages ->
  ``messages`` with text content blocks (consecutive messages of one role are merged:
  Converse wants the roles to alternate);
- ``temperature``, ``max_tokens`` (or ``max_completion_tokens``), ``top_p``, ``stop`` ->
  ``inferenceConfig``; any other extra -> ``additionalModelRequestFields`` (model
  specific, e.g. ``top_k``); ``seed``, ``response_format``, ``logprobs``,
  ``top_logprobs``, ``user`` and ``n`` have no Converse counterpart and are not sent;
- the reply's text blocks -> the text (reasoning blocks are left out), ``stopReason``
  -> the finish reason (``max_tokens`` -> ``length``), ``usage.inputTokens`` /
  ``outputTokens`` -> prompt / completion tokens (a text that is not a string, or a
  count that is not a whole number in 0..10**12, makes the reply malformed);
- AWS error codes -> the HTTP statuses the client's retry rules know
  (``ThrottlingException`` -> 429, ``ServiceUnavailableException`` -> 503, ...).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_evals.llm.bedrock_models import model_id
from pytest_evals.llm.retry import RETRYABLE_STATUS, AttemptError
from pytest_evals.llm.transport.http_transport import Completion, malformed, token_count

#: Body fields Converse has no place for (they still make distinct cache keys).
NOT_SENT = frozenset({"seed", "response_format", "logprobs", "top_logprobs", "user", "n", "stream"})
_INFERENCE = {"temperature": "temperature", "max_tokens": "maxTokens",
              "max_completion_tokens": "maxTokens", "top_p": "topP"}

#: Converse's stop reasons as the OpenAI finish reasons the judges read.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filtered": "content_filter",
    "tool_use": "tool_calls",
}

#: AWS error code -> (HTTP status the client reasons with, retryable). The status
#: decides throttling (429/503 halve the concurrency) exactly as for an HTTP endpoint.
ERROR_CODES: dict[str, tuple[int, bool]] = {
    "ThrottlingException": (429, True),
    "TooManyRequestsException": (429, True),
    "ModelNotReadyException": (429, True),
    "ServiceUnavailableException": (503, True),
    "InternalServerException": (500, True),
    "InternalFailure": (500, True),
    "ModelTimeoutException": (408, True),
    "ModelErrorException": (424, False),
    "ValidationException": (400, False),
    "AccessDeniedException": (403, False),
    "UnrecognizedClientException": (403, False),
    "InvalidSignatureException": (403, False),
    "ExpiredTokenException": (403, False),
    "ResourceNotFoundException": (404, False),
}

_MODEL_PROBLEM = re.compile(r"model identifier|model id|model .*not (?:found|supported|exist)|"
                            r"access to the model|on-demand throughput", re.IGNORECASE)
_CREDENTIALS_PROBLEM = frozenset({"UnrecognizedClientException", "InvalidSignatureException",
                                  "ExpiredTokenException"})
#: How Bedrock's models say the prompt is over their context (400 ValidationException).
_TOO_LONG = re.compile(r"too long|too many (?:input )?tokens|context (?:length|window)|"
                       r"maximum (?:context|input)", re.IGNORECASE)


class UnsupportedRequest(AttemptError):
    """A body Converse cannot carry (an image part, a tool message): never retried."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"cannot be sent to Bedrock's Converse API: {detail}", retryable=False)


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type", "text") == "text":
                parts.append(str(part.get("text", "")))
            else:
                kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
                raise UnsupportedRequest(f"{where}.content[{i}] is a {kind!r} part (text only)")
        return "".join(parts)
    return str(content)


def converse_request(body: Mapping[str, Any], aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The keyword arguments of ``client.converse`` for one body (``aliases``: model
    keys and the ids they stand for)."""
    system: list[dict[str, str]] = []
    messages: list[dict[str, Any]] = []
    for i, message in enumerate(body.get("messages") or []):
        role = message.get("role")
        text = _text(message.get("content"), f"messages[{i}]")
        if role in ("system", "developer"):
            system.append({"text": text})
            continue
        if role not in ("user", "assistant"):
            raise UnsupportedRequest(f"messages[{i}] has role {role!r} (system, user, assistant only)")
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append({"text": text})
        else:
            messages.append({"role": role, "content": [{"text": text}]})
    kwargs: dict[str, Any] = {"modelId": model_id(str(body.get("model")), aliases), "messages": messages}
    if system:
        kwargs["system"] = system
    inference: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in body.items():
        if key in ("model", "messages") or key in NOT_SENT or value is None:
            continue
        if key in _INFERENCE:
            inference[_INFERENCE[key]] = value
        elif key == "stop":
            inference["stopSequences"] = [value] if isinstance(value, str) else list(value)
        else:
            extra[key] = value
    if inference:
        kwargs["inferenceConfig"] = inference
    if extra:
        kwargs["additionalModelRequestFields"] = extra
    return kwargs


def completion_from_converse(data: Any, requested_model: str) -> Completion:
    """The reply's text, finish reason and usage; malformed -> retryable."""
    if not isinstance(data, Mapping):
        raise malformed(f"expected a Converse response, got {type(data).__name__}")
    output = data.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    if not isinstance(message, Mapping) or not isinstance(message.get("content"), list):
        raise malformed("no 'output.message.content' in the Converse reply")
    # Reasoning models (gpt-oss on Bedrock) send reasoningContent blocks before the
    # answer: the answer is the text blocks. A text that is not a string (an object, a
    # number) is no answer: read through str() it could pass a case.
    parts: list[str] = []
    for i, block in enumerate(message["content"]):
        if isinstance(block, Mapping) and "text" in block:
            if not isinstance(block["text"], str):
                raise malformed(f"output.message.content[{i}].text is a "
                                f"{type(block['text']).__name__}, not a string")
            parts.append(block["text"])
    raw_usage = data.get("usage")
    usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
    stop = data.get("stopReason")
    return Completion(
        text="".join(parts),
        model=requested_model,
        prompt_tokens=token_count(usage.get("inputTokens"), "usage.inputTokens"),
        completion_tokens=token_count(usage.get("outputTokens"), "usage.outputTokens"),
        finish_reason=None if stop is None else FINISH_REASONS.get(str(stop), str(stop)),
    )


def attempt_error(code: str, message: str, http_status: int | None, model: str) -> AttemptError:
    """An AWS error as the client's AttemptError, with a hint at the setting to fix."""
    status, retryable = ERROR_CODES.get(code, (http_status or 500, (http_status or 500) in RETRYABLE_STATUS))
    cause = f"HTTP {status}: {code}: {message}" if message else f"HTTP {status}: {code}"
    if status == 400 and _TOO_LONG.search(message):
        # The client's context-overflow rule reads this (a ContextLengthError, not a retry).
        cause += " (the request exceeds the model's context)"
    elif code in ("ValidationException", "ResourceNotFoundException", "AccessDeniedException") \
            and _MODEL_PROBLEM.search(message):
        cause += (f" (model {model!r}: check --evals-model / the suite's model, and that the "
                  "model is enabled for this account in this region)")
    elif code in _CREDENTIALS_PROBLEM:
        cause += " (check the AWS credentials of botocore's standard chain)"
    return AttemptError(cause, retryable=retryable, status=status)
