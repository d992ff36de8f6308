"""GOV.UK Chat's config rules that are not field types: unknown fields, allowed values.

Their configs ignore fields they do not know; so do we, but not silently: the first time a
file's unknown fields are read in a process, a :class:`GovukConfigWarning` names the file
and the fields (pytest lists it in its warnings summary). A second read of the same file
(another suite option, a rescore) does not warn again.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

#: output_guardrails' ``guardrail_type`` values (their ``Literal`` in output_guardrails/cli.py).
GUARDRAIL_TYPES: tuple[str, ...] = ("answer_guardrails", "question_routing_guardrails")

#: The validation-context keys the suite loader sets: the file, and whether its task came
#: from its name (GOV.UK's layout: ``config/defaults/<task>.yaml`` without ``task:``).
PATH_KEY = "suite_path"
LAYOUT_KEY = "task_from_file_name"

#: Where a GOV.UK config's unknown fields are kept (an alias no YAML file uses by accident).
UNKNOWN_FIELDS = "__govuk_unknown_fields__"


def their_layout(context: Any) -> bool:
    return isinstance(context, dict) and bool(context.get(LAYOUT_KEY))

_warned: set[tuple[str, tuple[str, ...]]] = set()
_lock = threading.Lock()


class GovukConfigWarning(UserWarning):
    """A GOV.UK config field pytest_evals does not know: kept and ignored, as theirs do."""


def warn_unknown_fields(task: str, extra: dict[str, Any], context: Any) -> None:
    if not extra:
        return
    where = context.get(PATH_KEY) if isinstance(context, dict) else None
    names = tuple(sorted(extra))
    key = (str(where or task), names)
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    fields = ", ".join(repr(n) for n in names)
    warnings.warn(
        GovukConfigWarning(
            f"{where or task}: field(s) {fields} not known to pytest_evals' {task} task: kept and not used "
            "(GOV.UK Chat's own config models ignore unknown fields too)"
        ),
        stacklevel=2,
    )
