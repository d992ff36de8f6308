"""Retrieved chunks as GOV.UK Chat's judge reads them (their ``rag_answers/data_models/input.py``).

Their evaluation does not render the HTML: each chunk reaches the judge as its raw
``html_content`` under the title, the heading path and the description, the latter
written with Python's ``str()``, so a null description is the literal text ``None``.
Two layouts exist in their code:

- the retrieval context of every DeepEval metric (faithfulness among them)::

      {title}\\n{' > '.join(heading_hierarchy)}\\n{description}\\n\\n{html_content}

- the one their context-relevancy metric reads, with labels::

      Context:\\nPage Title: {title}\\nPage description: {description}\\n
      Headings: {' > '.join(heading_hierarchy)}\\n\\nContent:\\n{html_content}

Nothing is stripped or skipped (an empty heading stays an empty item in the join). A
null ``heading_hierarchy``, which their model refuses, joins as an empty path here.
GOV.UK-shaped suites use these texts (:mod:`.govuk_shape`); other suites read the
rendered text of :mod:`.flatten`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_evals.families.rag.cases import StructuredContext


def _headings(context: StructuredContext) -> str:
    return " > ".join(str(h) for h in context.heading_hierarchy or [])


def govuk_flattened(context: StructuredContext) -> str:
    """Their ``to_flattened_string``: what DeepEval's metrics get as retrieval context."""
    return f"{context.title}\n{_headings(context)}\n{context.description}\n\n{context.html_content}"


def govuk_context_content(context: StructuredContext) -> str:
    """Their ``to_flattened_context_content``: what their context-relevancy metric reads."""
    return (
        f"Context:\nPage Title: {context.title}\nPage description: {context.description}\n"
        f"Headings: {_headings(context)}\n\nContent:\n{context.html_content}"
    )


class GovukChunk:
    """A chunk offering their two layouts under their method names: their own metrics
    (built on DeepEval's base metric) read ``metadata["structured_contexts"]`` this way."""

    def __init__(self, context: StructuredContext) -> None:
        self.context = context
        for name in ("title", "heading_hierarchy", "description", "html_content", "exact_path"):
            setattr(self, name, getattr(context, name))
        extra = context.model_extra or {}
        self.base_path = extra.get("base_path")

    def to_flattened_string(self) -> str:
        return govuk_flattened(self.context)

    def to_flattened_context_content(self) -> str:
        return govuk_context_content(self.context)


def govuk_chunks(contexts: Sequence[StructuredContext]) -> list[GovukChunk]:
    return [GovukChunk(c) for c in contexts]
