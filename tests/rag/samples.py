"""Sample rag_answers cases shared by the tests."""

from __future__ import annotations

from typing import Any

CONTEXT: dict[str, Any] = {
    "exact_path": "/winter-fuel-payment#how-much",
    "base_path": "/winter-fuel-payment",
    "title": "Winter Fuel Payment",
    "heading_hierarchy": ["What you'll get", "How much"],
    "description": "How much you can get.",
    "html_content": "<h2>How much</h2><p>You&rsquo;ll get &pound;300 if you <b>live alone</b>.</p>"
                    "<ul><li>paid in November</li></ul>",
}

CASE: dict[str, Any] = {
    "id": "wfp",
    "question": "How much Winter Fuel Payment do I get?",
    "ideal_answer": "You get £300 if you live alone.",
    "llm_answer": "You'll get £300 if you live alone.",
    "structured_contexts": [CONTEXT],
}
