"""Benchmark: the HTML report of a 35,000-case HaluEval-sized run (size, Chromium load time).

    /work/venv/bin/python bench/bench_report.py [--cases 35000] [--skip-baseline] [-n 2]

What it does, in a temporary folder (nothing is written to the repository):

1. Builds a 35,000-item suite from the real HaluEval files (``../shared/data/halueval``:
   10,000 qa + 10,000 dialogue + 10,000 summarization + 5,000 general of the 2023
   version), one item per JSON line.
2. Runs it through a real pytest session with ``task: halueval_replay``, defined below:
   it builds the judge messages with the project's HaluEval prompt templates and replays
   a judge (a deterministic, seeded Yes/No reply with the paper's ChatGPT accuracy per
   task, so about 30% of cases fail), so the results carry the same details, data and
   aggregates (``pytest_evals.families.halueval.metrics``) as a real HaluEval run, without a model.
3. Times, sizes and opens in headless Chromium (selenium + /usr/bin/chromium):
   - baseline A: the same run without any report (run-time overhead of the report);
   - baseline B: plain pytest-html (this plugin's report hooks disabled), where Chromium
     has to build a DOM row per test; its load is cut off after ``--load-timeout``;
   - this plugin's report (``--html --self-contained-html --evals-report-dir``).
   Load time = from navigation to the page being usable: pytest-html's table drawn,
   the case details inflated and the case list drawn.

Figures are printed as ratios against the baselines of the same run (never as timed tests).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.model.metric_value import MetricTree
from pytest_evals.tasks.task_contract import CaseRef, Task

REPO = Path(__file__).resolve().parent.parent
DATA = REPO.parent / "shared" / "data" / "halueval"
FILES = (
    ("qa", "qa_data.json", 10_000),
    ("dialogue", "dialogue_data.json", 10_000),
    ("summarization", "summarization_data.json", 10_000),
    ("general", "general_data_v2023-05-26/general_data.json", 5_000),
)
#: ChatGPT's accuracy in the HaluEval paper, used as the replayed judge's hit rate.
ACCURACY = {"qa": 0.6259, "dialogue": 0.7240, "summarization": 0.5853, "general": 0.7944}


# -- the replayed HaluEval task (imported by the benchmark suite's conftest) -------------


def _unit(text: str) -> float:
    """A deterministic number in [0, 1) from a string (the seeded coin of the replay)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


class ReplayHaluEval(Task[dict[str, Any]]):
    """HaluEval with a replayed judge: real items, real prompts, real aggregation."""

    name = "halueval_replay"

    def validate_case(self, data: Any, ref: CaseRef) -> dict[str, Any]:
        if not isinstance(data, dict) or "task_type" not in data:
            from pytest_evals.model.errors import CaseInputError

            raise CaseInputError(f"{ref.source}: expected a replay item with task_type")
        return data

    def needs_engine(self) -> bool:
        return False

    async def evaluate(self, case: dict[str, Any], ref: CaseRef, ctx: Any) -> CaseResult:
        from pytest_evals.families.halueval.prompts import (
            OUTPUT_NOUN,
            REPORT_DOCUMENT_CHARS,
            SEED_TEMPLATES,
            SYSTEM_PROMPT,
        )

        task = case["task_type"]
        if task == "general":
            shown, other = "labelled", None
            expected = "yes" if str(case.get("hallucination_label", case.get("hallucination", "no"))).lower() == "yes" else "no"
            output = case["chatgpt_response"]
            fields = {"question": case["user_query"], "answer": output}
        else:
            hallucinated = _unit(ref.case_id + ":shown") < 0.5
            right_key, hall_key = {
                "qa": ("right_answer", "hallucinated_answer"),
                "dialogue": ("right_response", "hallucinated_response"),
                "summarization": ("right_summary", "hallucinated_summary"),
            }[task]
            output = case[hall_key] if hallucinated else case[right_key]
            other = case[right_key] if hallucinated else case[hall_key]
            shown, expected = ("hallucinated", "yes") if hallucinated else ("right", "no")
            document = case.get("document", "")
            if len(document) > REPORT_DOCUMENT_CHARS:
                document = document[:REPORT_DOCUMENT_CHARS] + f" [... {len(document) - REPORT_DOCUMENT_CHARS:,} more characters]"
            fields = {
                "question": case.get("question", ""),
                "answer": output,
                "dialogue_history": case.get("dialogue_history", ""),
                "response": output,
                "document": document,
                "summary": output,
            }
        prompt = [
            {"role": "system", "content": SYSTEM_PROMPT.format(noun=OUTPUT_NOUN[task])},
            {"role": "user", "content": SEED_TEMPLATES[task].format(**fields)},
        ]
        correct = _unit(ref.case_id + ":judge") < ACCURACY[task]
        predicted = expected if correct else ("no" if expected == "yes" else "yes")
        reply = predicted.capitalize() + (
            "" if _unit(ref.case_id + ":terse") < 0.7 else ". The answer is consistent with the question and world knowledge."
        )
        result = self.new_result(ref)
        result.status = "passed" if correct else "failed"
        result.scores = {"correct": 1.0 if correct else 0.0}
        result.data = {
            "task_type": task,
            "shown": shown,
            "expected": expected,
            "predicted": predicted,
            "unparseable": False,
            "ambiguous": False,
            "shown_len": len(output),
            "other_len": None if other is None else len(other),
        }
        result.details = {
            "judge": "replayed judge (benchmark)",
            "prompt": prompt,
            "reply": reply,
            "shown": shown,
            "expected": expected.capitalize(),
            "predicted": predicted.capitalize(),
        }
        if not correct:
            result.message = f"shown the {shown} output: expected {expected!r}, judge said {predicted!r}"
        return result

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        from pytest_evals.families.halueval.metrics import Outcome, aggregate

        return aggregate([Outcome.from_data(r.data) for r in results if "expected" in r.data])


CONFTEST = f"""
import sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from pytest_evals.tasks import register_task
from bench_report import ReplayHaluEval
register_task("halueval_replay", ReplayHaluEval)
"""

SUITE = """task: halueval_replay
what: HaluEval-sized run with a replayed judge (report benchmark)
input_path: items.jsonl
thresholds:
  overall:
    accuracy: {min: 0.5}
"""


# -- the benchmark ---------------------------------------------------------------------


def build_suite(folder: Path, cases: int) -> None:
    if not DATA.is_dir():
        sys.exit(f"HaluEval data not found at {DATA} (the shared/ folder must sit beside the checkout)")
    scale = cases / sum(n for *_, n in FILES)
    with (folder / "items.jsonl").open("w", encoding="utf-8") as out:
        for task, name, n in FILES:
            wanted = round(n * scale)
            with (DATA / name).open(encoding="utf-8") as fh:
                for i, line in enumerate(fh):
                    if i >= wanted:
                        break
                    record = json.loads(line)
                    record["task_type"] = task
                    record["id"] = f"{task}-{i}"
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
    (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (folder / "halueval_replay.eval.yaml").write_text(SUITE, encoding="utf-8")


def run_pytest(folder: Path, extra: list[str], label: str) -> float:
    cmd = [sys.executable, "-m", "pytest", "halueval_replay.eval.yaml", "-q", "--tb=no", "-rN", "-p", "no:cacheprovider", *extra]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"{label}: pytest exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    print(f"  {label}: {elapsed:.1f} s ({tail})", flush=True)
    return elapsed


def chromium(timeout: float) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("PYTEST_EVALS_CHROMIUM", "/usr/bin/chromium")
    for flag in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='bench-chromium-')}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ.get("PYTEST_EVALS_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(timeout)
    return driver


USABLE = """
const rows = document.querySelectorAll('#results-table tbody').length;
const store = document.getElementById('evals-case-data');
if (!rows) return false;
if (!store) return rows;
const cases = document.getElementById('evals-cases');
return document.documentElement.getAttribute('data-evals-details') === 'ready'
    && cases && cases.getAttribute('data-ready') === '1' ? rows : false;
"""


def load_time(page: Path, timeout: float) -> tuple[float | None, int, list[str]]:
    """Seconds until the report is usable (None when cut off), rows drawn, SEVERE console lines."""
    from selenium.common.exceptions import TimeoutException

    driver = chromium(timeout)
    try:
        driver.get("about:blank")
        start = time.perf_counter()
        try:
            driver.get(page.as_uri())
            rows = 0
            while time.perf_counter() - start < timeout:
                rows = driver.execute_script(USABLE)
                if rows:
                    break
                time.sleep(0.02)
            else:
                return None, 0, []
        except TimeoutException:
            return None, 0, []
        except Exception as exc:  # chromedriver gives up on a page that never loads
            if "timeout" in str(exc).lower() or "timed out" in str(exc).lower():
                return None, 0, []
            raise
        elapsed = time.perf_counter() - start
        errors = [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        return elapsed, int(rows), errors
    finally:
        driver.quit()


def _wait(driver: Any, script: str, timeout: float) -> Any:
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        value = driver.execute_script(script)
        if value:
            return value
        time.sleep(0.02)
    raise TimeoutError(f"not within {timeout:.0f} s: {script}")


def open_detail_time(page: Path, timeout: float) -> float:
    """Seconds to close and reopen a failed row (pytest-html redraws its whole table each
    time) until its detail is drawn."""
    driver = chromium(timeout)
    try:
        driver.get(page.as_uri())
        _wait(driver, USABLE, timeout)
        start = time.perf_counter()
        key = driver.execute_script(
            "const td = document.querySelector('#results-table tbody.failed td[data-k]');"
            "td.closest('tbody').querySelector('.col-result').click(); return td.dataset.k"
        )
        find = f"document.querySelector('#results-table td[data-k=\"{key}\"]')"
        driver.execute_script(f"{find}.closest('tbody').querySelector('.col-result').click(); {find}.scrollIntoView()")
        _wait(driver, f"return {find}.closest('tbody').querySelector('.evals-detail') !== null", timeout)
        return time.perf_counter() - start
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=35_000)
    parser.add_argument("--load-timeout", type=float, default=120.0, help="cut-off for a page load (s)")
    parser.add_argument("--skip-baseline", action="store_true", help="skip the plain pytest-html baseline")
    parser.add_argument("-n", dest="workers", default=None, help="also run the report under xdist -n N")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        folder = Path(tmp)
        build_suite(folder, args.cases)
        print(f"suite: {args.cases:,} HaluEval items in {folder}")
        t_none = run_pytest(folder, [], "no report (baseline A)")
        t_plain = None
        if not args.skip_baseline:
            t_plain = run_pytest(folder, ["-p", "no:pytest_evals.reports.report_plugin", "--html", "plain.html", "--self-contained-html"], "plain pytest-html (baseline B)")
        t_ours = run_pytest(folder, ["--html", "report.html", "--self-contained-html", "--evals-report-dir", "out"], "pytest_evals report")
        if args.workers:
            run_pytest(folder, ["-n", str(args.workers), "--html", "report_xdist.html", "--self-contained-html"], f"pytest_evals report, -n {args.workers}")

        ours = folder / "report.html"
        size = ours.stat().st_size / 1e6
        load, rows, errors = load_time(ours, args.load_timeout)
        detail = open_detail_time(ours, args.load_timeout)
        print()
        print(f"report: {size:.1f} MB (limit 30 MB), {rows:,} table rows, usable after "
              f"{f'> {args.load_timeout:.0f}' if load is None else f'{load:.2f}'} s (limit 10 s), "
              f"{len(errors)} console errors")
        print(f"opening a failed case's detail: {detail:.2f} s")
        print(f"run time with the report / without any report: {t_ours / t_none:.2f}x")
        if t_plain is not None:
            plain = folder / "plain.html"
            psize = plain.stat().st_size / 1e6
            pload, _rows, _ = load_time(plain, args.load_timeout)
            shown = f"> {args.load_timeout:.0f} s (cut off)" if pload is None else f"{pload:.2f} s"
            print(f"plain pytest-html: {psize:.1f} MB, usable after {shown}")
            print(f"size ratio (this report / plain pytest-html): {size / psize:.2f}x")
            if load is not None:
                base = pload if pload is not None else args.load_timeout
                qual = "" if pload is not None else " at most"
                print(f"load-time ratio (this report / plain pytest-html):{qual} {load / base:.3f}x")
            print(f"run time with this report / with plain pytest-html: {t_ours / t_plain:.2f}x")
        for err in errors[:5]:
            print("console:", err)


if __name__ == "__main__":
    main()
