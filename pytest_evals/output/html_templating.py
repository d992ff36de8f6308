"""HTML pages from Jinja2 templates shipped inside a package, always autoescaped.

Evaluation data is adversarial by nature (jailbreak prompts, scraped HTML, case ids
chosen by whoever wrote the data file), so no value reaches a page as markup unless a
template says so for a trusted piece (a packaged script, a stylesheet, JSON made safe by
:func:`script_json`). Jinja2 is imported on first use, never when the plugin loads.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jinja2

# JSON.parse accepts these escapes; the HTML tokenizer then never sees "<", ">" or "&"
# inside the script element, so "</script>" or "<!--" in data cannot end it.
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(value: Any) -> str:
    """Compact JSON that is safe inside ``<script type="application/json">`` and still
    valid JSON (NaN is refused: JSON has none)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False).translate(
        _SCRIPT_SAFE
    )


def attr_json(value: Any) -> str:
    """JSON for a ``data-*`` attribute (the template escapes it like any other text)."""
    return json.dumps(value)


@functools.cache
def environment(package: str) -> jinja2.Environment:
    """The template environment of ``package`` (templates in its ``templates/`` folder)."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        undefined=jinja2.StrictUndefined,
        # Package files do not change during a run: no stat() per template lookup.
        auto_reload=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # None shows as nothing (a missing message), never as the word "None".
        finalize=lambda value: "" if value is None else value,
    )
    env.filters["script_json"] = lambda value: Markup(script_json(value))
    env.filters["attr_json"] = attr_json
    env.filters["thousands"] = lambda value: f"{value:,}"
    return env


def render(package: str, name: str, /, **context: Any) -> str:
    return environment(package).get_template(name).render(**context)


@functools.cache
def macros(package: str, name: str) -> Any:
    """The macros of a template, callable from Python (each returns escaped markup).

    Cached: the report calls them once per table row."""
    return environment(package).get_template(name).module
