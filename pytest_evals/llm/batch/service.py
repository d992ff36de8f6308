"""The provider's files and batches APIs, through the openai SDK.

Thin on purpose: each method is one SDK call, and every message that leaves this module
passes through the key's redaction (servers quote keys in their errors).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals.llm.call_errors import LLMError
from pytest_evals.llm.secret import redact

if TYPE_CHECKING:
    from pytest_evals.llm.settings import LLMSettings

FINAL = ("completed", "failed", "expired", "cancelled")
#: Statuses that mean "this server has no such API" (llama.cpp, vLLM, Ollama: 404).
NO_API_STATUS = frozenset({404, 405, 501})


class NoBatchAPI(LLMError):
    """The endpoint has no Batch API: one line for the run, nothing recorded or sent."""


class BatchService:
    def __init__(self, settings: LLMSettings) -> None:
        from openai import OpenAI

        from pytest_evals.llm.endpoint_probe import split_query

        if settings.provider != "openai":
            # Its files and batches calls carry the OpenAI key as Bearer and every prompt.
            raise LLMError(f"the Batch API is OpenAI's only, not --evals-provider {settings.provider}'s")
        self.settings = settings
        key = settings.api_key.reveal() if settings.api_key else "no-key"
        # The SDK would append each path after a query left in base_url.
        base_url, query = split_query(settings.base_url)
        self._sdk = OpenAI(
            base_url=base_url,
            default_query=query or None,
            api_key=key,
            timeout=max(settings.timeout, 60.0),
            max_retries=settings.max_retries,
        )

    def _fail(self, what: str, exc: Exception) -> LLMError:
        text = redact(f"{what}: {type(exc).__name__}: {exc}", self.settings.api_key)
        return LLMError(f"batch API: {text}", cause=text)

    def check_available(self) -> None:
        """Ask for one batch (``GET /batches?limit=1``, nothing created) before anything
        is recorded: a server without the API answers 404 once, not once per case.
        Other failures are left to the calls that follow (they say what went wrong)."""
        import openai

        from pytest_evals.llm.client import display_url

        try:
            self._sdk.batches.list(limit=1)
        except openai.APIStatusError as exc:
            if exc.status_code not in NO_API_STATUS:
                return
            body = redact(_body_text(exc.response), self.settings.api_key)
            where = display_url(self.settings.base_url)
            raise NoBatchAPI(
                f"{where} has no Batch API (GET {where}/batches: HTTP {exc.status_code}"
                f"{': ' + body if body else ''}); run without --evals-batch (and without "
                "suites' batch: true) to ask it request by request"
            ) from None
        except Exception:  # anything else: reported by the calls that follow
            return

    def upload(self, path: Path) -> str:
        try:
            with path.open("rb") as fh:
                return str(self._sdk.files.create(file=(path.name, fh), purpose="batch").id)
        except Exception as exc:
            raise self._fail(f"uploading {path.name}", exc) from None

    def create(self, input_file_id: str, metadata: dict[str, str]) -> Any:
        try:
            return self._sdk.batches.create(
                input_file_id=input_file_id,
                endpoint="/v1/chat/completions",
                completion_window="24h",
                metadata=metadata,
            )
        except Exception as exc:
            raise self._fail(f"creating the batch of {input_file_id}", exc) from None

    def retrieve(self, batch_id: str) -> Any:
        try:
            return self._sdk.batches.retrieve(batch_id)
        except Exception as exc:
            raise self._fail(f"retrieving {batch_id}", exc) from None

    def cancel(self, batch_id: str) -> Any:
        try:
            return self._sdk.batches.cancel(batch_id)
        except Exception as exc:
            raise self._fail(f"cancelling {batch_id}", exc) from None

    def find_by_input(self, input_file_id: str, job_id: str) -> Any | None:
        """The batch created from this input file, if the create call went through."""
        try:
            for batch in self._sdk.batches.list(limit=100):
                meta = batch.metadata or {}
                if batch.input_file_id == input_file_id or meta.get("pytest_evals_job") == job_id:
                    return batch
        except Exception as exc:
            raise self._fail("listing batches", exc) from None
        return None

    def download(self, file_id: str, dest: Path) -> Path:
        """Stream a file to disk (an output file can be hundreds of MB), every secret
        masked on the way: replies may echo a key, and the file sits in the cache folder."""
        from pytest_evals.llm.batch.lines import masked_lines

        try:
            with self._sdk.files.with_streaming_response.content(file_id) as response, dest.open("wb") as fh:
                fh.writelines(masked_lines(response.iter_bytes()))
        except Exception as exc:
            raise self._fail(f"downloading {file_id}", exc) from None
        return dest

    def close(self) -> None:
        self._sdk.close()


def _body_text(response: Any) -> str:
    """The server's own words, short (FastAPI's ``{"detail": "Not Found"}``, OpenAI's
    ``{"error": {"message": ...}}`` or plain text)."""
    try:
        raw = response.text
    except Exception:
        return ""
    from pytest_evals.llm.transport.http_transport import error_message

    try:
        data = json.loads(raw)
    except ValueError:
        return " ".join(str(raw).split())[:200]
    if isinstance(data, dict) and isinstance(data.get("detail"), str):
        return data["detail"][:200]
    return " ".join(error_message(raw.encode()).split())[:200]
