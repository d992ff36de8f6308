"""Headless Chromium for tests of generated HTML (selenium + Debian chromium/chromedriver).

Load it as a plugin (``pytest_plugins = ["tests.browser_support"]`` in a conftest), then::

    import pytest
    from tests.browser_support import console_errors, wait_until

    @pytest.mark.browser
    def test_page_loads(browser, tmp_path):
        page = tmp_path / "report.html"
        page.write_text(make_report(), encoding="utf-8")
        browser.get(page.as_uri())
        wait_until(browser, "return document.readyState === 'complete'")
        assert browser.find_element("id", "summary").text == "3 passed"
        assert console_errors(browser) == []

API (kept small on purpose):

- fixture ``browser``: a ``selenium.webdriver.Chrome`` shared by the session (one per xdist
  worker), with a fresh ``--user-data-dir``; each test starts with its console log drained.
- ``console_errors(driver)``: SEVERE browser-console entries since the last call (JS
  exceptions, CSP violations, failed loads), as strings.
- ``wait_until(driver, script, timeout=10.0)``: poll a JavaScript expression body
  (``return ...``) until it is truthy; returns its value or raises TimeoutError.
- ``browser_available()``: None when Chromium can run here, else the reason it cannot.

When the browser is unavailable the test is skipped, except when the ``CI`` environment
variable is set: then it fails, because CI must run browser tests. Override the binaries
with ``PYTEST_EVALS_CHROMIUM`` and ``PYTEST_EVALS_CHROMEDRIVER``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("PYTEST_EVALS_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PYTEST_EVALS_CHROMEDRIVER", "/usr/bin/chromedriver")

#: Headless, sandbox-free (containers), and nothing that reaches the network on its own.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


def browser_available() -> str | None:
    """None if selenium, Chromium and chromedriver are all present; else why not."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            return f"{path} is missing or not executable"
    return None


def _require_browser() -> None:
    reason = browser_available()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"browser tests must run in CI, but {reason}", pytrace=False)
    pytest.skip(f"headless Chromium unavailable: {reason}")


def console_errors(driver: Any) -> list[str]:
    """SEVERE console entries logged since the previous call (the log is drained)."""
    return [f"{e.get('source', '')}: {e.get('message', '')}" for e in driver.get_log("browser") if e.get("level") == "SEVERE"]


def wait_until(driver: Any, script: str, timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Run ``script`` (a function body, e.g. ``return x === 1``) until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:.1f}s: {script}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def _chromium_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(_chromium_session: Any) -> Any:
    """The session's headless Chromium, with its console log drained for this test."""
    _chromium_session.get("about:blank")
    console_errors(_chromium_session)
    return _chromium_session
