"""Build the red-team viewer: one self-contained HTML file, no server, no network.

The page is a Jinja2 template (``templates/viewer.html.jinja2``, autoescaped), a
stylesheet and a script shipped with the package, plus the runs as JSON in a
``<script type="application/json">`` block. The JSON has ``<``, ``>`` and ``&``
escaped, so no string in the data (``</script>``, ``<!--``) can end the block;
the script renders every value with ``textContent``; and a Content-Security-Policy
allows only this page's own script and stylesheet (by hash), so even markup that slipped
into the DOM could neither run nor load anything.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_evals.collection.collector_pause import collector_paused
from pytest_evals.families.redteam.edge_rules import DEFAULT_EDGES, EdgeRules
from pytest_evals.families.redteam.loader import RunData
from pytest_evals.families.redteam.scoring import DEFAULT_PARTIAL, PartialScores
from pytest_evals.families.redteam.viewdata import build_payload
from pytest_evals.output.html_templating import render, script_json

DATA_ELEMENT_ID = "viz-data"


def _asset(name: str) -> str:
    return resources.files("pytest_evals.families.redteam").joinpath("assets", name).read_text(encoding="utf-8")


def embed_json(data: Any) -> str:
    """JSON safe to place inside ``<script type="application/json">`` (and valid JSON)."""
    return script_json(data)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def render_html(payload: dict[str, Any], title: str = "Red-team runs") -> str:
    """The page; a payload with ``watch`` set may also fetch from its own origin (live data)."""
    from markupsafe import Markup

    script = _asset("viewer.js")
    style = _asset("viewer.css")
    connect = "connect-src 'self'; " if payload.get("watch") else ""
    csp = (
        "default-src 'none'; "
        f"script-src '{_sha256(script)}'; "
        f"style-src '{_sha256(style)}'; "
        f"{connect}img-src data:; base-uri 'none'; form-action 'none'"
    )
    # The policy is ours (constants and base64 digests) and keeps its quotes literal,
    # as CSP readers and the tests expect; nothing in it can leave the attribute.
    assert not set(csp) & set('"<>&'), csp
    return render(
        "pytest_evals.families.redteam",
        "viewer.html.jinja2",
        csp=Markup(csp),
        title=title,
        style=style,
        script=script,
        data_id=DATA_ELEMENT_ID,
        data=payload,
    )


def build_viewer(
    runs: Sequence[RunData],
    output: str | os.PathLike[str],
    source: str = "",
    partial: PartialScores = DEFAULT_PARTIAL,
    edges: EdgeRules = DEFAULT_EDGES,
) -> Path:
    """Write the viewer for already-loaded runs; returns the output path."""
    from pytest_evals.families.redteam.store import atomic_write_text

    out = Path(output)
    with collector_paused():
        page = render_html(build_payload(runs, source=source, partial=partial, edges=edges))
    atomic_write_text(out, page)
    return out
