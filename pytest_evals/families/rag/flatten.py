"""Retrieved chunks as the judge reads them: title, heading path, description, clean text.

The chunk HTML goes through inscriptis (an HTML renderer, not tag-stripping regexes) so
entities are decoded, lists keep their bullets, tables keep their cells apart and links
keep their targets: an answer that says "apply at /apply-for-x" can be checked against
the link it came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_evals.model.errors import CaseInputError

if TYPE_CHECKING:
    from pytest_evals.families.rag.cases import StructuredContext

#: Shown to the judge when retrieval returned nothing, so "no context" is explicit.
NO_CONTEXT = "(no context was retrieved for this question)"

HEADING_SEPARATOR = " > "


def _tidy(text: str) -> str:
    """Strip trailing spaces and collapse runs of blank lines (inscriptis keeps layout spacing)."""
    lines: list[str] = []
    blank = False
    for line in text.splitlines():
        line = line.rstrip()
        if not line.strip():
            blank = bool(lines)
            continue
        if blank:
            lines.append("")
            blank = False
        lines.append(line)
    return "\n".join(lines)


def html_to_text(html: str) -> str:
    """Readable text of an HTML fragment (entities decoded, lists and links kept)."""
    if not html.strip():
        return ""
    try:
        from inscriptis import get_text
        from inscriptis.model.config import ParserConfig
    except ImportError as exc:
        from pytest_evals.model.errors import InfrastructureError
        from pytest_evals.registry.missing_extras import install_hint

        raise InfrastructureError(f"HTML contexts: {install_hint(exc) or exc}") from None

    # lxml refuses str input that carries an XML encoding declaration; the text is already decoded.
    if html.lstrip().startswith("<?xml"):
        html = html.split("?>", 1)[1] if "?>" in html else html
    return _tidy(get_text(html, ParserConfig(display_links=True)))


def flatten_context(context: StructuredContext) -> str:
    """One chunk: title, heading path joined by " > ", description, then its text."""
    parts = [context.title.strip()]
    headings = [h.strip() for h in context.heading_hierarchy or [] if h and h.strip()]
    if headings:
        parts.append(HEADING_SEPARATOR.join(headings))
    if context.description and context.description.strip():
        parts.append(context.description.strip())
    body = html_to_text(context.html_content)
    if body:
        parts.append(body)
    return "\n".join(p for p in parts if p)


def flatten_contexts(contexts: Sequence[StructuredContext], source: str = "") -> list[str]:
    """Each chunk flattened; an HTML error names the chunk it came from."""
    out: list[str] = []
    for i, context in enumerate(contexts):
        try:
            out.append(flatten_context(context))
        except (ValueError, TypeError) as exc:
            where = f"{source}: " if source else ""
            raise CaseInputError(
                f"{where}field 'structured_contexts.{i}.html_content' cannot be read as HTML: {exc}"
            ) from None
    return out


def contexts_block(flattened: Sequence[str]) -> str:
    """All chunks in one numbered block for a judge prompt."""
    if not flattened:
        return NO_CONTEXT
    return "\n\n".join(f"[Context {i}]\n{text}" for i, text in enumerate(flattened, start=1))
