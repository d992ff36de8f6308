"""The LLM layer: a cached, concurrent, retrying OpenAI-compatible client and judges.

Owns everything that talks to a model: the client (:mod:`.client`) and what sends its
requests (:mod:`.transport`: a lean HTTP/1.1 client for ``http://`` endpoints, aiohttp or the
openai SDK in this process, or aiohttp in a helper process), retries (:mod:`.retry`), the adaptive concurrency limit
(:mod:`.limiter`), the response cache (:mod:`.cache`), settings and options
(:mod:`.settings`, :mod:`.llm_options`), the API key (:mod:`.secret`), usage and prices
(:mod:`.call_stats`, :mod:`.pricing`, :mod:`.tokens`), the judges (:mod:`.judge`, the
embedded offline one in :mod:`.offline_judge`), the session's event loop
(:mod:`.event_loop`), the pytest wiring (:mod:`.llm_plugin`) and the Batch API
(:mod:`.batch`: ledger, input lines, service, the gate batch mode installs).

It knows no runner: it imports nothing from the layers above it. Where the run must act
before the layer waits on I/O (an inline evaluation ends, batch mode records the
request instead), the run installs a hook in :mod:`.io_hooks`.

Importing this package is cheap (every pytest run does, through the plugin): the
client, the judge (pydantic), the openai SDK, aiohttp and diskcache load on first use;
the names below are resolved lazily.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from pytest_evals.llm.call_errors import DryRunSkip, LLMError, OfflineError
    from pytest_evals.llm.client import ChatResponse, LLMClient
    from pytest_evals.llm.judge import Judge, parse_verdict
    from pytest_evals.llm.settings import LLMSettings

_EXPORTS: dict[str, str] = {
    "ChatResponse": "pytest_evals.llm.client",
    "LLMClient": "pytest_evals.llm.client",
    "DryRunSkip": "pytest_evals.llm.call_errors",
    "LLMError": "pytest_evals.llm.call_errors",
    "OfflineError": "pytest_evals.llm.call_errors",
    "Judge": "pytest_evals.llm.judge",
    "parse_verdict": "pytest_evals.llm.judge",
    "LLMSettings": "pytest_evals.llm.settings",
}

__all__ = [
    "ChatResponse",
    "DryRunSkip",
    "Judge",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "OfflineError",
    "get_client",
    "get_settings",
    "is_offline",
    "parse_verdict",
    "use_endpoint",
]

# pytest itself is imported by the functions below, not here: the process transport's
# helper (transport/process_transport.py) imports this package and has no use for pytest.
_keys: dict[str, Any] = {}


def _key(name: str) -> Any:
    key = _keys.get(name)
    if key is None:
        import pytest

        key = _keys.setdefault(name, pytest.StashKey())
    return key


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_evals.llm' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def get_settings(config: pytest.Config) -> LLMSettings:
    """This process's LLM settings (resolved once from options, ini and environment)."""
    key = _key("settings")
    settings: LLMSettings | None = config.stash.get(key, None)
    if settings is None:
        from pytest_evals.llm.settings import settings_from_config

        settings = settings_from_config(config)
        config.stash[key] = settings
    return settings


def get_client(config: pytest.Config) -> LLMClient:
    """The process-wide client (one per pytest process / xdist worker)."""
    key = _key("client")
    client: LLMClient | None = config.stash.get(key, None)
    if client is None:
        from pytest_evals.llm.client import LLMClient
        from pytest_evals.llm.event_loop import session_engine

        # Without a session (the client used outside a pytest_evals run) the client
        # runs its own engine for sync callers.
        client = LLMClient(get_settings(config), engine=session_engine(config))
        workerinput = getattr(config, "workerinput", None)
        if isinstance(workerinput, dict):
            # xdist workers share the endpoint's slots.
            client.processes = int(workerinput.get("workercount") or 1)
        endpoint = config.stash.get(_key("endpoint"), None)
        if endpoint is not None:
            client.use_endpoint(endpoint)
        config.stash[key] = client
    return client


def use_endpoint(config: pytest.Config, info: Any) -> None:
    """What the endpoint said about itself (endpoint_probe.EndpointInfo), for this
    process: a local server's own model name when none was given (shown and asked for),
    its slots and context (the client's limiter and messages)."""
    from pytest_evals.llm.endpoint_models import own_model

    settings = get_settings(config)
    found = own_model(settings, info)
    if found is not None:
        config.stash[_key("model_source")] = found[1]
        if settings.model != found[0]:
            import dataclasses

            config.stash[_key("settings")] = dataclasses.replace(settings, model=found[0])
    client = peek_client(config)
    if client is not None:
        client.use_endpoint(info)
    else:
        config.stash[_key("endpoint")] = info


def model_source(config: pytest.Config) -> str | None:
    """Where a local endpoint's model name came from (``server``, ``remembered``; None:
    the option or the default)."""
    source: str | None = config.stash.get(_key("model_source"), None)
    return source


def peek_client(config: pytest.Config) -> LLMClient | None:
    """The client if one was created (the plugin's summary must not create one)."""
    client: LLMClient | None = config.stash.get(_key("client"), None)
    return client


def is_offline(config: pytest.Config) -> bool:
    """True when no endpoint is configured (no base URL, no API key) or --evals-offline."""
    return get_settings(config).offline
