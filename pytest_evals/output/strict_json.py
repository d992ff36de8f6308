"""Strict JSON for every file the run writes.

``json.dumps`` writes NaN and Infinity as bare words (not JSON: other tools refuse the
file) and keeps lone surrogates that no UTF-8 writer accepts. Here non-finite numbers
become ``null``, strings are scrubbed (secrets masked, surrogates escaped), and the
result always encodes.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pytest_evals.hardening.redaction import scrub_obj


def finite(value: Any) -> Any:
    """``value`` with every NaN/inf float inside it replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """``json.dumps`` that always yields strict, encodable, secret-free JSON."""
    kwargs.setdefault("ensure_ascii", False)
    kwargs.setdefault("default", str)
    kwargs["allow_nan"] = False
    value = scrub_obj(value)
    try:
        return json.dumps(value, **kwargs)
    except ValueError:
        # Only non-finite numbers make allow_nan=False raise; the walk is paid only then.
        return json.dumps(finite(value), **kwargs)
