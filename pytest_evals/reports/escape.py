"""Escaping for everything that goes from evaluation data into the HTML report.

Evaluation data is adversarial by nature (jailbreak prompts, scraped HTML), so no value
from a case, a suite file or a model reply ever reaches the page as markup: text is
escaped for element content and attributes, and data handed to the report's script
travels as JSON that cannot close its ``<script>`` element.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

# JSON.parse accepts these escapes; the HTML tokenizer then never sees "<", ">" or "&"
# inside the script element, so "</script>" or "<!--" in data cannot end it.
_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def text(value: Any) -> str:
    """Any value as escaped HTML text (safe in element content and quoted attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def script_json(value: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False).translate(
        _SCRIPT_SAFE
    )


def finite(value: Any) -> Any:
    """NaN and infinities become None so the JSON stays valid (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value
