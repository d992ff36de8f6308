"""Batch prices: half of the interactive price unless a model's batch price is given.

OpenAI (and Azure OpenAI's global batch) bill batch requests at 50% of the interactive
list price; other providers differ, so ``--evals-batch-price MODEL=IN,OUT`` (or the
``evals_batch_prices`` ini lines) sets a model's batch price in USD per 1M tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pytest_evals.llm.pricing import parse_price, price_for

DISCOUNT = 0.5


def batch_price_table(overrides: Iterable[str]) -> dict[str, tuple[float, float]]:
    table = {}
    for text in overrides:
        try:
            model, prices = parse_price(text)
        except ValueError as exc:
            raise ValueError(str(exc).replace("--evals-price", "--evals-batch-price")) from None
        table[model] = prices
    return table


def batch_cost(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    interactive: Mapping[str, tuple[float, float]],
    batch: Mapping[str, tuple[float, float]],
) -> float | None:
    """USD at batch prices (None: the model has no known price)."""
    price = price_for(model, batch) if batch else None
    if price is None:
        base = price_for(model, interactive)
        if base is None:
            return None
        price = (base[0] * DISCOUNT, base[1] * DISCOUNT)
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
