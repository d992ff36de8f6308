"""Fixtures of the LLM layer's tests: a loopback OpenAI-compatible server and clients.

Nothing here reaches the network: the server is ``pytest_evals.testing.fake_openai`` on
127.0.0.1, and every cache lives under the test's ``tmp_path``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_evals.llm import LLMClient, LLMSettings
from pytest_evals.llm.secret import Secret
from pytest_evals.testing.fake_openai import FakeOpenAI

T = TypeVar("T")
TEST_KEY = "sk-test-0123456789abcdefSECRET"
PROBE_TASK = Path(__file__).with_name("probe_task.py")


@pytest.fixture(autouse=True)
def _no_real_endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Whatever the developer's shell holds, tests never see a real key or endpoint."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """A fresh loopback server (echo responder, no latency, no faults)."""
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "llm-cache"


@pytest.fixture
def make_client(server: FakeOpenAI, cache_dir: Path) -> Iterator[Callable[..., LLMClient]]:
    """``make_client(**settings)`` -> a client on ``server`` caching in ``cache_dir``."""
    clients: list[LLMClient] = []

    def make(**overrides: Any) -> LLMClient:
        fields: dict[str, Any] = {
            "configured_base_url": server.base_url,
            "api_key": Secret(TEST_KEY),
            "cache_dir": cache_dir,
            "timeout": 5.0,
            "max_retries": 3,
            **overrides,
        }
        client = LLMClient(LLMSettings(**fields))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a fresh loop (the client binds its pools to the running loop)."""
    return asyncio.run(coro)


async def closing(client: LLMClient, coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` then close the client's pool on this loop."""
    try:
        return await coro
    finally:
        await client.aclose()
