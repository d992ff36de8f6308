"""What a task sees while it evaluates: the model client, the judge, the target, the engine."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.llm.event_loop import Engine

if TYPE_CHECKING:
    from pytest_evals.llm.client import LLMClient
    from pytest_evals.llm.judge import Judge
    from pytest_evals.llm.offline_judge import Embedder
    from pytest_evals.suites.suite_config import Suite
    from pytest_evals.targets.target_kinds import Target


class EvalContext:
    """One per session (per xdist worker); shared by all tasks and the fixtures."""

    def __init__(self, config: pytest.Config, engine: Engine) -> None:
        self.config = config
        self.engine = engine
        self._targets: dict[str, Target] = {}

    @cached_property
    def llm(self) -> LLMClient:
        """The cached, concurrency-limited client for the configured endpoint."""
        from pytest_evals.llm import get_client

        return get_client(self.config)

    @property
    def offline(self) -> bool:
        """True when no model endpoint is configured: judges use the embedded local model."""
        from pytest_evals.llm import is_offline

        return is_offline(self.config)

    @cached_property
    def judge(self) -> Judge:
        from pytest_evals.llm.judge import Judge

        return Judge(self.llm)

    @cached_property
    def embedder(self) -> Embedder:
        from pytest_evals.llm.offline_judge import get_embedder

        return get_embedder()

    def target(self, suite: Suite) -> Target:
        """The system under test of a ``generate: true`` suite (built once per suite)."""
        from pytest_evals.targets.command_adapters import make_target

        # Each variant of a suite has a target of its own (suites/variant_config.py).
        key = suite.nodeid if suite.variant is None else f"{suite.nodeid}[{suite.variant}]"
        if key not in self._targets:
            self._targets[key] = make_target(suite, self.config, lambda: self.llm)
        return self._targets[key]

    def option(self, name: str, default: Any = None) -> Any:
        value = self.config.getoption(name, default)
        return default if value is None else value
