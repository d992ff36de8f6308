"""Judge replies that copy the prompt's example shape instead of filling it in.

A small model under a JSON grammar can satisfy a schema with the template itself:
``{"TP": ["...", "..."]}`` is valid JSON of the right shape and says nothing. A reply
schema's text fields use :data:`Filled` so such a value is rejected (the judge layer then
re-asks, and finally reports the reply) instead of being counted as two true positives.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

#: Values that are a template's filler, not content: ellipses, "string", "<claim>",
#: "[statement]", "TODO", "N/A", "placeholder", or nothing but punctuation.
_PLACEHOLDER = re.compile(
    r"""^\s*(?:
        |[.\u2026\s]+                              # ... or the ellipsis character
        |<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}          # <claim>, [statement], {truth}
        |string|str|text|todo|tbd|n/?a|placeholder|\W+
    )\s*$""",
    re.IGNORECASE | re.VERBOSE,
)


def is_placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value))


def _filled(value: str) -> str:
    if is_placeholder(value):
        raise ValueError(f"{value!r} is a placeholder, not content: write out the text itself")
    return value


#: A text field of a judge's reply that must hold real content.
Filled = Annotated[str, Field(min_length=1), AfterValidator(_filled)]
