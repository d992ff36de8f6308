"""Benchmark of the red-team viewer: build time, file size and load time in headless Chromium.

A generated run of 1,000 system prompts x 5 attacks x 4 responses (2 raters: 40,000
ratings) against a baseline run of 10 prompts built and loaded the same way in the same
browser, so the figures are ratios measured together:

    python bench/bench_viewer.py                 # 1,000 x 5 x 4, three loads each
    python bench/bench_viewer.py --prompts 5000  # bigger run

Goal: the large run is usable (rendered) within 5 s of opening the file.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_evals.families.redteam.loader import load_data_dir  # noqa: E402
from pytest_evals.families.redteam.synthetic import SyntheticSpec, write_synthetic_run  # noqa: E402
from pytest_evals.families.redteam.viewer import build_viewer  # noqa: E402
from tests.browser_support import (  # noqa: E402
    CHROMEDRIVER,
    CHROMIUM,
    CHROMIUM_FLAGS,
    browser_available,
    wait_until,
)

BUDGET_S = 5.0


def build(root: Path, prompts: int, attacks: int, responses: int) -> dict[str, Any]:
    data = root / f"data-{prompts}"
    t0 = time.perf_counter()
    write_synthetic_run(data / "evo" / "bench", SyntheticSpec(prompts=prompts, attacks=attacks, responses=responses, seeds=2, na_every=7))
    t1 = time.perf_counter()
    runs = load_data_dir(data)
    t2 = time.perf_counter()
    out = build_viewer(runs, root / f"viz-{prompts}.html", source=str(data))
    t3 = time.perf_counter()
    return {"html": out, "write_s": t1 - t0, "load_s": t2 - t1, "render_s": t3 - t2, "mb": out.stat().st_size / 1e6}


def chromium() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='bench-chromium-')}")
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


def load_times(driver: Any, html: Path, repeats: int) -> tuple[list[float], list[float]]:
    """(wall seconds from get() to rendered, in-page seconds from navigation start) per load."""
    wall, page = [], []
    for _ in range(repeats):
        driver.get("about:blank")
        t0 = time.perf_counter()
        driver.get(html.as_uri())
        wait_until(driver, "return document.documentElement.dataset.ready === '1'", timeout=120, interval=0.01)
        wall.append(time.perf_counter() - t0)
        page.append(float(driver.execute_script("return document.documentElement.dataset.readyMs")) / 1000)
    return wall, page


def explore_time(driver: Any) -> float:
    """Seconds to open the explore tab (1,000-row table model, first page rendered) and sort it."""
    t0 = time.perf_counter()
    driver.execute_script(
        "document.getElementById('tab-explore').click();"
        "Array.from(document.querySelectorAll('#prompts-table thead th')).find(th => th.textContent === 'Mean Adv Score').click();"
    )
    return time.perf_counter() - t0


def evolution_time(driver: Any) -> float:
    """Seconds to open the Evolution tab (scatter, operations charts, population timeline)."""
    t0 = time.perf_counter()
    driver.execute_script("document.getElementById('tab-evolution').click();")
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=1000)
    parser.add_argument("--attacks", type=int, default=5)
    parser.add_argument("--responses", type=int, default=4)
    parser.add_argument("--baseline-prompts", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    reason = browser_available()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        root = Path(tmp)
        small = build(root, args.baseline_prompts, args.attacks, args.responses)
        large = build(root, args.prompts, args.attacks, args.responses)
        driver = chromium()
        try:
            load_times(driver, small["html"], 1)  # warm the browser up
            small_wall, small_page = load_times(driver, small["html"], args.repeats)
            large_wall, large_page = load_times(driver, large["html"], args.repeats)
            small_explore, large_explore = explore_time(driver), 0.0
            driver.get(large["html"].as_uri())
            wait_until(driver, "return document.documentElement.dataset.ready === '1'", timeout=120)
            large_explore = explore_time(driver)
            large_evolution = evolution_time(driver)
            driver.get(small["html"].as_uri())
            wait_until(driver, "return document.documentElement.dataset.ready === '1'", timeout=120)
            small_explore = explore_time(driver)
            small_evolution = evolution_time(driver)
        finally:
            driver.quit()

    size = f"{args.prompts} prompts x {args.attacks} attacks x {args.responses} responses"
    print(f"viewer benchmark: {size} vs baseline {args.baseline_prompts} prompts (median of {args.repeats} loads)")
    rows = [
        ("write run files (s)", small["write_s"], large["write_s"]),
        ("load run (s)", small["load_s"], large["load_s"]),
        ("build HTML (s)", small["render_s"], large["render_s"]),
        ("HTML size (MB)", small["mb"], large["mb"]),
        ("open in Chromium, wall (s)", statistics.median(small_wall), statistics.median(large_wall)),
        ("open in Chromium, in page (s)", statistics.median(small_page), statistics.median(large_page)),
        ("explore tab + sort (s)", small_explore, large_explore),
        ("evolution tab (s)", small_evolution, large_evolution),
    ]
    print(f"{'':32} {'baseline':>10} {'large':>10} {'ratio':>8}")
    for name, a, b in rows:
        ratio = b / a if a > 0 else float("inf")
        print(f"{name:32} {a:10.3f} {b:10.3f} {ratio:7.1f}x")
    worst = max(large_wall)
    verdict = "within" if worst <= BUDGET_S else "OVER"
    print(f"slowest large load {worst:.2f} s: {verdict} the {BUDGET_S:g} s budget")
    return 0 if worst <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
