"""Token prices (USD per million tokens) and the cost of a request.

The defaults are public list prices of common OpenAI models when this table was
written; prices change, so users override or extend it with
``--evals-price MODEL=INPUT,OUTPUT`` (or the ``evals_prices`` ini lines). A dated
model name (``gpt-4o-mini-2024-07-18``) uses the longest matching prefix.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: model -> (input USD per 1M tokens, output USD per 1M tokens)
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}


def parse_price(text: str) -> tuple[str, tuple[float, float]]:
    """``MODEL=IN,OUT`` -> (model, (in, out)); a clear error naming the bad value."""
    model, sep, rest = text.partition("=")
    parts = rest.split(",")
    if not sep or not model.strip() or len(parts) != 2:
        raise ValueError(f"--evals-price {text!r}: expected MODEL=INPUT,OUTPUT (USD per 1M tokens)")
    try:
        prices = (float(parts[0]), float(parts[1]))
    except ValueError:
        raise ValueError(
            f"--evals-price {text!r}: prices must be numbers (USD per 1M tokens)"
        ) from None
    if min(prices) < 0:
        raise ValueError(f"--evals-price {text!r}: prices cannot be negative")
    return model.strip(), prices


def build_price_table(extra: Iterable[str] = ()) -> dict[str, tuple[float, float]]:
    table = dict(DEFAULT_PRICES)
    for item in extra:
        model, prices = parse_price(item)
        table[model] = prices
    return table


def price_for(model: str, table: Mapping[str, tuple[float, float]]) -> tuple[float, float] | None:
    if model in table:
        return table[model]
    best = max((name for name in table if model.startswith(name)), key=len, default=None)
    return table[best] if best is not None else None


def cost_of(
    model: str, prompt_tokens: int, completion_tokens: int, table: Mapping[str, tuple[float, float]]
) -> float | None:
    """USD, or None when the model has no known price."""
    price = price_for(model, table)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
