"""``loads`` for the big files a run reads back (results.jsonl, baselines, summaries).

orjson parses a 35,000-line results file 3-4x faster than the stdlib (measured in
bench/bench_compare.py and bench/bench_regression.py); the stdlib is the fallback.
Both reject what strict JSON rejects except NaN/Infinity, which the stdlib accepts and
orjson does not; our writers never emit them (pytest_evals.output.strict_json).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

loads: Callable[[bytes | str], Any]
try:
    from orjson import loads
except ImportError:  # pragma: no cover - orjson is a declared dependency
    loads = json.loads

__all__ = ["loads"]
