"""Our client as a DeepEval model (DeepEval's own custom-model interface, ``DeepEvalBaseLLM``).

A DeepEval metric asks its model for JSON shaped by a pydantic schema, several times per
case (truths, claims, verdicts, reason). Every one of those requests goes through
:class:`pytest_evals.llm.judge.Judge`, so our cache (a rerun asks nothing), concurrency
limiter, retries, redaction, batch mode and usage accounting apply, and a reply that
does not match the schema is re-asked by our judge layer, then becomes a judge error
carrying the raw reply.

DeepEval is imported only here and in :mod:`.deepeval_metric`, and only after
:func:`quiet_deepeval` has switched off its telemetry, its update check and its reading
of ``.env`` files: nothing leaves the machine but the judge requests themselves.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from pytest_evals.llm.judge import Judge

#: Cache namespace of every request a DeepEval metric makes.
NAMESPACE = "rag_answers_deepeval"

#: Set before DeepEval is imported (DeepEval re-reads its settings when they change).
QUIET_ENV: dict[str, str] = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_TELEMETRY_ENABLED": "0",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_GRPC_LOGGING": "0",
}
#: Set unless the user chose otherwise: no state files written under the working folder.
QUIET_DEFAULTS: dict[str, str] = {"DEEPEVAL_FILE_SYSTEM": "READ_ONLY"}


def quiet_deepeval() -> None:
    """Telemetry, update checks and ``.env`` reading off; then DeepEval's telemetry
    backend replaced by its own no-op one, in case it was imported earlier (by its pytest
    plugin) with other settings."""
    os.environ.update(QUIET_ENV)
    for name, value in QUIET_DEFAULTS.items():
        os.environ.setdefault(name, value)
    from deepeval.telemetry import NoopBackend, set_backend

    set_backend(NoopBackend())


def deepeval_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("deepeval")
    except PackageNotFoundError:
        return None


def make_model(
    judge: Judge,
    *,
    model: str,
    temperature: float | None,
    repeat: int,
    system: str | None = None,
) -> Any:
    """A ``DeepEvalBaseLLM`` asking through ``judge`` (one instance per case and run)."""
    return model_class()(judge, model=model, temperature=temperature, repeat=repeat, system=system)


def model_class() -> type:
    """The adapter class, defined once per import of DeepEval (DeepEval instruments every
    subclass it sees; an in-process pytest run may import DeepEval afresh)."""
    quiet_deepeval()
    from deepeval.models import DeepEvalBaseLLM

    return _model_class(DeepEvalBaseLLM)


@functools.lru_cache(maxsize=4)
def _model_class(base: Any) -> type:
    class EvalsModel(base):
        """Requests of run ``repeat`` (distinct cache entries per run, as our judges)."""

        def __init__(self, judge: Judge, *, model: str, temperature: float | None, repeat: int,
                     system: str | None) -> None:
            self.judge = judge
            self.model_name = model
            self.temperature = temperature
            self.repeat = repeat
            self.system = system
            #: Every request made, in order: (cache key, cached?) for the case's evidence.
            self.calls: list[dict[str, Any]] = []
            super().__init__(model)

        def load_model(self, *args: Any, **kwargs: Any) -> Any:
            return self

        def get_model_name(self, *args: Any, **kwargs: Any) -> str:
            return self.model_name

        def _messages(self, prompt: Any) -> list[dict[str, str]]:
            if not isinstance(prompt, str):
                raise TypeError("only text prompts can be judged through pytest_evals' client")
            messages = [{"role": "user", "content": prompt}]
            if self.system:
                messages.insert(0, {"role": "system", "content": self.system})
            return messages

        def _record(self, resp: Any) -> None:
            self.calls.append({"key": getattr(resp, "key", ""), "cached": bool(getattr(resp, "cached", False)),
                               "model": getattr(resp, "model", None)})

        async def a_generate(self, prompt: Any, schema: type[BaseModel] | None = None, **kwargs: Any) -> Any:
            messages = self._messages(prompt)
            if schema is None:
                text, resp = await self.judge.text(messages, namespace=NAMESPACE, model=self.model_name,
                                                   temperature=self.temperature, repeat=self.repeat)
                self._record(resp)
                return text
            data, resp = await self.judge.json(messages, schema=schema, namespace=NAMESPACE, model=self.model_name,
                                               temperature=self.temperature, repeat=self.repeat)
            self._record(resp)
            return data

        def generate(self, prompt: Any, schema: type[BaseModel] | None = None, **kwargs: Any) -> Any:
            # Our client lives on the engine's event loop; metrics are always run through
            # a_measure, which asks a_generate.
            raise NotImplementedError("pytest_evals runs DeepEval metrics with a_measure (async) only")

        def supports_structured_outputs(self) -> bool:
            return False

        def supports_json_mode(self) -> bool:
            return False

        def supports_multimodal(self) -> bool:
            return False

    return EvalsModel
