from __future__ import annotations

import pytest

from pytest_evals.families.rag.cases import StructuredContext
from pytest_evals.families.rag.flatten import (
    NO_CONTEXT,
    contexts_block,
    flatten_context,
    flatten_contexts,
    html_to_text,
)
from pytest_evals.model.errors import CaseInputError

HTML = (
    "<h2 id=\"amounts\">How much you&rsquo;ll get</h2>\n"
    "<p>You&rsquo;ll get &pound;300 if you <strong>live alone</strong> &amp; qualify.</p>\n"
    "<ul><li>paid in <em>November</em></li><li>or December</li></ul>\n"
    "<p>Call the <a href=\"/contact-centre\">contact centre</a>.</p>"
)


def test_html_is_rendered_not_stripped() -> None:
    text = html_to_text(HTML)
    assert "<" not in text and ">" not in text.replace("->", "")
    assert "How much you’ll get" in text
    # entities decoded, inline markup dissolved into its sentence
    assert "You’ll get £300 if you live alone & qualify." in text
    # list items stay separate bullet lines
    assert "* paid in November" in text and "* or December" in text
    # links keep their target so answers citing a page can be checked
    assert "[contact centre](/contact-centre)" in text
    assert "\n\n\n" not in text and text == text.strip()


def test_html_edge_cases() -> None:
    assert html_to_text("") == ""
    assert html_to_text("   \n ") == ""
    assert html_to_text("plain text, no tags") == "plain text, no tags"
    assert html_to_text('<?xml version="1.0" encoding="utf-8"?><p>Hi</p>') == "Hi"
    # unclosed tags are repaired by the parser
    assert html_to_text("<p>one<p>two <b>bold") == "one\n\ntwo bold"
    assert "td" not in html_to_text("<table><tr><td>Eldest</td><td>&pound;25.60</td></tr></table>")


def test_flatten_order_title_headings_description_text() -> None:
    ctx = StructuredContext(
        exact_path="/winter-fuel-payment#amounts",
        title="Winter Fuel Payment",
        heading_hierarchy=["What you'll get", " How much ", ""],
        description="How much you can get.",
        html_content=HTML,
    )
    lines = flatten_context(ctx).splitlines()
    assert lines[0] == "Winter Fuel Payment"
    assert lines[1] == "What you'll get > How much"
    assert lines[2] == "How much you can get."
    assert lines[3] == "How much you’ll get"


def test_flatten_without_headings_or_description() -> None:
    ctx = StructuredContext(exact_path="/x", title="Title", heading_hierarchy=None, description=None,
                            html_content="<p>Body</p>")
    assert flatten_context(ctx) == "Title\nBody"
    ctx2 = StructuredContext(exact_path="/x", title="Title", heading_hierarchy=[], description="",
                             html_content="")
    assert flatten_context(ctx2) == "Title"


def test_contexts_block_numbers_chunks_and_says_when_empty() -> None:
    assert contexts_block([]) == NO_CONTEXT
    block = contexts_block(["first", "second"])
    assert block == "[Context 1]\nfirst\n\n[Context 2]\nsecond"


def test_unreadable_html_names_the_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_evals.families.rag.flatten as flatten

    real = flatten.html_to_text

    def picky(html: str) -> str:
        if "bad" in html:
            raise ValueError("parser gave up")
        return real(html)

    monkeypatch.setattr(flatten, "html_to_text", picky)
    good = StructuredContext(exact_path="/x", title="T", html_content="<p>x</p>")
    bad = StructuredContext(exact_path="/y", title="T", html_content="<p>bad</p>")
    assert flatten_contexts([good], "data.jsonl:3") == ["T\nx"]
    with pytest.raises(CaseInputError, match=r"^data.jsonl:3: field 'structured_contexts.1.html_content'"):
        flatten_contexts([good, bad], "data.jsonl:3")
