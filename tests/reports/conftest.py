"""Fixtures of the report tests; the browser comes from tests/browser_support.py."""

from __future__ import annotations

from tests.browser_support import _chromium_session, browser  # noqa: F401  (fixtures)
