"""Reading the viewer page from a test (through the DOM, as a user would see it)."""

from __future__ import annotations

from typing import Any

from tests.browser_support import wait_until

READY = "return document.documentElement.dataset.ready"


def open_viewer(driver: Any, url: str, timeout: float = 60.0) -> None:
    driver.get(url)
    assert wait_until(driver, READY, timeout=timeout) == "1"


def headers(driver: Any, table_id: str) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' thead th')).map(th => th.textContent)",
        table_id,
    ))


def rows(driver: Any, table_id: str) -> list[dict[str, tuple[str, str | None]]]:
    """One dict per row: column key -> (shown text, data-value)."""
    found = driver.execute_script(
        """
        return Array.from(document.querySelectorAll('#' + arguments[0] + ' tbody tr')).map(tr => {
          const out = {};
          for (const td of tr.cells) out[td.dataset.col] = [td.textContent, td.dataset.value === undefined ? null : td.dataset.value];
          return out;
        });
        """,
        table_id,
    )
    return [{key: (cell[0], cell[1]) for key, cell in row.items()} for row in found]


def click_row(driver: Any, table_id: str, index: int) -> None:
    driver.execute_script("document.querySelectorAll('#' + arguments[0] + ' tbody tr')[arguments[1]].click()", table_id, index)


def click_header(driver: Any, table_id: str, label: str) -> None:
    driver.execute_script(
        "Array.from(document.querySelectorAll('#' + arguments[0] + ' thead th')).find(th => th.textContent === arguments[1]).click()",
        table_id, label,
    )


def click(driver: Any, element_id: str) -> None:
    driver.execute_script("document.getElementById(arguments[0]).click()", element_id)


def texts(driver: Any, selector: str) -> list[str]:
    return list(driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent)", selector
    ))


def fmt(value: float | None) -> str:
    """What the viewer shows for a score (3 decimals, N/A when undefined)."""
    return "N/A" if value is None else f"{value:.3f}"


def sort_state(driver: Any, table_id: str) -> tuple[str, str] | None:
    """(header label, "sorted-asc" | "sorted-desc") of the sorted column, None if unsorted."""
    found = driver.execute_script(
        "const th = document.querySelector('#' + arguments[0] + ' thead th.sorted-asc, #' + arguments[0] + ' thead th.sorted-desc');"
        "return th ? [th.textContent, th.className] : null;",
        table_id,
    )
    return None if found is None else (found[0], found[1])
