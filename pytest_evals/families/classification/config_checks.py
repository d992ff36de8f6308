"""GOV.UK Chat's config rules that are not field types: unknown fields, allowed values.

Their configs ignore fields they do not know; so do we, but not silently: a file's unknown
fields are noted once per process and file, and the run's terminal summary lists them
(``WARNING GOV.UK config: ...``), as does the JSON summary (``govuk_config_notes``). The
note is not a Python warning: under ``-W error`` or ``filterwarnings = error`` a warning
would turn a config their tool accepts into a collection error that stops the run.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

#: output_guardrails' ``guardrail_type`` values (their ``Literal`` in output_guardrails/cli.py).
GUARDRAIL_TYPES: tuple[str, ...] = ("answer_guardrails", "question_routing_guardrails")

#: The validation-context keys the suite loader sets: the file, and whether its task came
#: from its name (GOV.UK's layout: ``config/defaults/<task>.yaml`` without ``task:``).
PATH_KEY = "suite_path"
LAYOUT_KEY = "task_from_file_name"

#: Where a GOV.UK config's unknown fields are kept (an alias no YAML file uses by accident).
UNKNOWN_FIELDS = "__govuk_unknown_fields__"

_notes: dict[tuple[str, tuple[str, ...]], str] = {}
_lock = threading.Lock()


def their_layout(context: Any) -> bool:
    return isinstance(context, dict) and bool(context.get(LAYOUT_KEY))


def warn_unknown_fields(task: str, extra: dict[str, Any], context: Any) -> None:
    """Note ``extra`` (the fields of one file no task knows) once per file and field set."""
    if not extra:
        return
    where = context.get(PATH_KEY) if isinstance(context, dict) else None
    names = tuple(sorted(extra))
    fields = ", ".join(repr(n) for n in names)
    text = (f"{where or task}: field(s) {fields} not known to pytest_evals' {task} task: kept and not used "
            "(GOV.UK Chat's own config models ignore unknown fields too)")
    with _lock:
        _notes.setdefault((str(where or task), names), text)


def notes() -> list[str]:
    with _lock:
        return list(_notes.values())


def pytest_configure(config: pytest.Config) -> None:
    # One session per process in a real run; an in-process pytester run starts afresh too.
    with _lock:
        _notes.clear()


@pytest.hookimpl(optionalhook=True)
def pytest_evals_summary(config: pytest.Config, summary: dict[str, Any]) -> None:
    found = notes()
    if found:
        summary["govuk_config_notes"] = found


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    for text in notes():
        terminalreporter.write_line(f"WARNING GOV.UK config: {text}", yellow=True)
