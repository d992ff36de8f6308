"""CSV cells that a spreadsheet will not run as formulas (CSV injection).

The CSV files of a run hold text from the data, the system under test and the judge: a
case whose question starts with ``=HYPERLINK(...)`` or ``@SUM(...)`` becomes a live
formula when someone opens ``results.csv`` in Excel or LibreOffice. Following OWASP's
rule, a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
(or their full-width forms, which some spreadsheets fold to ASCII) is prefixed with a
single quote, which spreadsheets show as text. Numbers stay numbers: only text is
changed, and text that is just a signed number (``-0.5``) cannot be a formula.
"""

from __future__ import annotations

import re
from typing import Any

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_SIGNED_NUMBER = re.compile(r"[+-](?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell no spreadsheet evaluates (see the module's docstring)."""
    if not isinstance(value, str) or not value.startswith(_TRIGGERS):
        return value
    if _SIGNED_NUMBER.fullmatch(value):
        return value
    return "'" + value
