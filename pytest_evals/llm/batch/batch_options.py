"""Batch mode's options, ini keys and their resolved settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from pytest_evals.llm.batch.prices import batch_price_table

#: OpenAI's limits per batch input file: 50,000 requests and 200 MB (the options show
#: them; :mod:`.lines` enforces them and is imported only when a batch is built).
MAX_LINES = 50_000
MAX_BYTES = 200 * 1024 * 1024

Retry = Literal["batch", "live"]


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        "--evals-batch",
        action="store_true",
        default=None,
        help="send uncached model requests through the provider's Batch API first, then "
        "score from the cache (ini evals_batch; per suite 'batch: true')",
    )
    group.addoption(
        "--evals-batch-retry",
        choices=("batch", "live"),
        default=None,
        help="failed batch lines: retry in the next batch (default) or as interactive requests",
    )
    group.addoption(
        "--evals-batch-poll",
        type=float,
        metavar="SECONDS",
        default=None,
        help="seconds between two status checks of a batch (default 30; ini evals_batch_poll)",
    )
    group.addoption(
        "--evals-batch-price",
        action="append",
        default=[],
        metavar="MODEL=IN,OUT",
        help="batch price of MODEL in USD per 1M tokens (default: half the interactive price)",
    )
    ini = parser.addini
    ini("evals_batch", "run every suite in batch mode (see --evals-batch)", type="bool", default=False)
    ini("evals_batch_retry", "batch or live (see --evals-batch-retry)", default="batch")
    ini("evals_batch_poll", "seconds between batch status checks", default="30")
    ini("evals_batch_prices", "MODEL=IN,OUT batch prices, USD per 1M tokens", type="linelist", default=[])
    ini("evals_batch_max_lines", f"most requests per batch (default {MAX_LINES})", default=str(MAX_LINES))
    ini("evals_batch_max_bytes", f"largest batch input file in bytes (default {MAX_BYTES})", default=str(MAX_BYTES))
    ini("evals_batch_attempts", "batches a failed line is tried in before its case errors (default 3)", default="3")
    ini("evals_batch_max_rounds", "most gather -> batch rounds per run (default 10)", default="10")


@dataclass(frozen=True)
class BatchSettings:
    enabled: bool = False
    retry: Retry = "batch"
    poll: float = 30.0
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    attempts: int = 3
    max_rounds: int = 10


def _number(config: pytest.Config, ini: str, kind: type[int] | type[float]) -> Any:
    text = config.getini(ini)
    try:
        value = kind(text)
    except ValueError:
        raise pytest.UsageError(f"ini {ini}: expected a number, got {text!r}") from None
    if value <= 0:
        raise pytest.UsageError(f"ini {ini}: must be positive, got {text!r}")
    return value


def batch_settings(config: pytest.Config) -> BatchSettings:
    flag = config.getoption("evals_batch", None)
    retry = config.getoption("evals_batch_retry", None) or config.getini("evals_batch_retry") or "batch"
    if retry not in ("batch", "live"):
        raise pytest.UsageError(f"ini evals_batch_retry: expected 'batch' or 'live', got {retry!r}")
    poll = config.getoption("evals_batch_poll", None)
    try:
        prices = batch_price_table(
            [*(str(v) for v in config.getini("evals_batch_prices") or []), *(config.getoption("evals_batch_price", None) or [])]
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return BatchSettings(
        enabled=bool(config.getini("evals_batch")) if flag is None else bool(flag),
        retry="live" if retry == "live" else "batch",
        poll=float(poll) if poll is not None else _number(config, "evals_batch_poll", float),
        prices=prices,
        max_lines=_number(config, "evals_batch_max_lines", int),
        max_bytes=_number(config, "evals_batch_max_bytes", int),
        attempts=_number(config, "evals_batch_attempts", int),
        max_rounds=_number(config, "evals_batch_max_rounds", int),
    )
