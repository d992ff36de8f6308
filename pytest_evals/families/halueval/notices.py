"""The suite-level warnings of a HaluEval run, as plain strings.

They ride in the suite's tables under ``warnings`` (see ``task.HaluEval.aggregate``) so
whatever prints a suite summary can show them; each says what happened, how it was
counted and which option or gate controls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_evals.model.metric_value import Metric

#: Key of the warnings list in the suite's tables.
WARNINGS_KEY = "warnings"

#: How each parse rule counts a reply without a usable Yes/No.
UNPARSEABLE_COUNTED_AS: dict[str, str] = {
    "first": 'counted as "No" (the seed\'s rule, parse: first)',
    "strict": "counted as wrong (parse: strict)",
    "official": "counted as wrong (parse: official, as the official script does)",
}


def _int(tree: Mapping[str, Any], *path: str) -> int:
    node: Any = tree
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return 0
        node = node[key]
    return int(node.value or 0) if isinstance(node, Metric) else 0


def suite_warnings(
    tree: Mapping[str, Any],
    *,
    parse: str,
    denominator: str,
    temperature_note: str | None = None,
) -> list[str]:
    notes: list[str] = []
    bad = _int(tree, "unparseable")
    rate = tree.get("unparseable_rate")
    if bad and isinstance(rate, Metric) and rate.value is not None and rate.n:
        notes.append(
            f"{bad} of {rate.n} judge replies ({rate.value:.1%}) had no usable Yes/No, "
            f"{UNPARSEABLE_COUNTED_AS.get(parse, parse)}; gate it with "
            "`unparseable_rate: {max: 0.05}`"
        )
    errored = _int(tree, "overall", "errored")
    if errored and denominator == "judged":
        notes.append(
            f"{errored} item(s) errored after their retries and are left out of accuracy "
            "(accuracy_denominator: judged); accuracy_denominator: all counts them as wrong, "
            "as the official script's accuracy does"
        )
    if temperature_note:
        notes.append(temperature_note)
    return notes
