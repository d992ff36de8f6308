"""How deeply a suite file's values nest, bounded like a JSONL case's.

Every later step walks a suite's values recursively: pydantic's validation and its
``model_dump`` (the suite's JSON entry, its ``config.json``), the reports. A value
nested a few hundred levels deep in any field, even one the task never reads, used to
pass validation and crash the controller at the end of the run ("Maximum serialization
depth exceeded"), losing every artifact of every suite. The limit is the JSONL reader's
(``evals_max_json_depth``), counted the same way: the suite's own mapping is level 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Keys of the offending value's path shown in a message (a hostile one has hundreds).
SHOWN_KEYS = 4


def too_deep_field(raw: Mapping[str, Any], limit: int) -> tuple[str, int] | None:
    """(dotted path of the first value nested deeper than ``limit``, its depth), or None.

    Iterative, so a hostile depth cannot exhaust the interpreter's stack while measured.
    """
    stack: list[tuple[Any, int, tuple[str, ...]]] = [(raw, 1, ())]
    while stack:
        node, depth, where = stack.pop()
        if depth > limit:
            return _dotted(where), depth + _further(node)
        if isinstance(node, Mapping):
            stack.extend((value, depth + 1, (*where, str(key))) for key, value in node.items() if _container(value))
        elif isinstance(node, (list, tuple)):
            stack.extend((value, depth + 1, (*where, f"[{i}]")) for i, value in enumerate(node) if _container(value))
    return None


def _container(value: Any) -> bool:
    return isinstance(value, (Mapping, list, tuple))


def _further(node: Any) -> int:
    """Levels below ``node`` along its first containers (the message's depth is a lower
    bound; an exact count would walk the whole hostile value)."""
    extra = 0
    while extra < 10_000:
        children = node.values() if isinstance(node, Mapping) else node if isinstance(node, (list, tuple)) else ()
        node = next((c for c in children if _container(c)), None)
        if node is None:
            break
        extra += 1
    return extra


def _dotted(parts: tuple[str, ...]) -> str:
    text = ".".join(parts[:SHOWN_KEYS]).replace(".[", "[")
    return text + ("..." if len(parts) > SHOWN_KEYS else "")
