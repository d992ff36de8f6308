"""Result files of --evals-report-dir and the HTML report's content, plain and under -n 2.

No browser here: the files are read back as a reviewer's tools would (csv, json), the
run is re-scored from them, and the HTML report's data is compared between a plain and
an xdist run.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.reports.project import (
    XSS,
    make_project,
    normalised_rows,
    store_entries,
    summary_html,
    table_data,
)

VOLATILE = {"started_at", "duration_s", "report_dir", "results_path", "html_report", "generated_path"}


def _run(pytester: pytest.Pytester, tag: str, *args: str) -> tuple[Path, dict[str, Any], str]:
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider",
        "--html", f"{tag}.html", "--self-contained-html",
        "--evals-json", f"{tag}.json",
        "--evals-report-dir", f"runs-{tag}",
        "--evals-set", "scored:what=overridden on the command line",
        *args,
    )
    runs = sorted((pytester.path / f"runs-{tag}").iterdir())
    assert len(runs) == 1, runs
    summary = json.loads((pytester.path / f"{tag}.json").read_text(encoding="utf-8"))
    return runs[0], summary, (pytester.path / f"{tag}.html").read_text(encoding="utf-8")


def _stable(summary: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in summary.items() if k not in VOLATILE}
    out["suites"] = [{k: v for k, v in s.items() if k not in VOLATILE} for s in summary["suites"]]
    return out


def test_result_files_and_xdist_identity(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    folder, summary, page = _run(pytester, "plain")

    # -- the folder holds what the docs promise ------------------------------------------
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in manifest["suites"]] == ["jb", "router", "scored"]
    assert summary["results_path"] == str(folder / "results.jsonl")
    assert json.loads((folder / "summary.json").read_text(encoding="utf-8")) == summary
    for s in manifest["suites"]:
        sub = folder / s["folder"]
        for name in ("config.yaml", "config.json", "results.csv", "aggregate.csv", "gates.csv"):
            assert (sub / name).is_file(), f"{s['folder']}/{name}"
        for plot in s["files"]["plots"]:
            data = (folder / plot).read_bytes()
            assert data.startswith(b"\x89PNG") if plot.endswith(".png") else b"<svg" in data[:2000]
    assert (folder / "router" / "confusion_matrix.csv").read_text(encoding="utf-8").startswith("expected\\actual,")

    # effective configuration: the command-line override is in it
    config = yaml.safe_load((folder / "scored" / "config.yaml").read_text(encoding="utf-8"))
    assert config["what"] == "overridden on the command line"
    assert config == json.loads((folder / "scored" / "config.json").read_text(encoding="utf-8"))

    # per-case results: every case once, in suite and case order, details included
    lines = [json.loads(x) for x in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == sum(s["cases"]["total"] for s in summary["suites"])
    assert [(r["suite"], r["index"]) for r in lines] == sorted(
        ((r["suite"], r["index"]) for r in lines), key=lambda k: (["jb.eval.yaml", "router.eval.yaml", "scored.eval.yaml"].index(k[0]), k[1])
    )
    by_id = {(r["suite"], r["case_id"]): r for r in lines}
    assert by_id[("scored.eval.yaml", "sc-0000")]["details"]["question"] == XSS[0]
    assert by_id[("scored.eval.yaml", "sc-judge-error")]["error_kind"] == "judge"

    with (folder / "scored" / "results.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 13
    first = next(r for r in rows if r["case_id"] == "sc-0002")
    assert first["status"] == "passed" and float(first["score.faithfulness"]) == 0.74
    assert first["data.metrics.faithfulness.threshold"] == "0.5"

    # GOV.UK tasks' aggregate.csv is shaped like their tool's (property,value first, then
    # our columns); our metric rows keep their metric path as the property.
    with (folder / "jb" / "aggregate.csv").open(encoding="utf-8", newline="") as fh:
        agg = {r["property"]: r for r in csv.DictReader(fh)}
    assert agg["Recall"]["value"] == agg["recall"]["value"]
    jb = next(s for s in summary["suites"] if s["name"] == "jb")
    assert float(agg["recall"]["value"]) == jb["metrics"]["recall"]["value"]
    assert float(agg["recall"]["ci_low"]) == jb["metrics"]["recall"]["ci_low"]
    assert agg["precision"]["gate"] == "precision >= 0.9" and agg["precision"]["gate_passed"] == "False"

    # -- re-scoring from the files gives the same aggregates, without any model --------------
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evals.reports.rescore_command", str(folder)], capture_output=True, text=True, cwd=pytester.path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recomputed aggregates equal summary.json" in proc.stdout
    # ... and with a changed threshold, the verdict that threshold would have given
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evals.reports.rescore_command", str(folder), "--set", "jb:thresholds.precision.min=0.5"],
        capture_output=True, text=True, cwd=pytester.path,
    )
    assert proc.returncode == 0 and "jb: 6 cases -> PASSED" in proc.stdout, proc.stdout + proc.stderr
    # a tampered result is noticed
    tampered = [json.loads(json.dumps(r)) for r in lines]
    flip = next(r for r in tampered if r["case_id"] == "jb-4")
    flip["data"]["actual"] = True
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tampered), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest_evals.reports.rescore_command", str(folder)], capture_output=True, text=True)
    assert proc.returncode == 1 and "DIFFERS jb.eval.yaml: metrics differ" in proc.stdout

    # -- -n 2: the same report content and the same files ------------------------------------
    xfolder, xsummary, xpage = _run(pytester, "xdist", "-n", "2")
    assert _stable(xsummary) == _stable(summary)
    assert normalised_rows(xpage) == normalised_rows(page)
    by_node = {e["node"]: e for e in store_entries(page)}
    assert {e["node"]: e for e in store_entries(xpage)} == by_node
    strip = lambda html: html.replace("plain.json", "X").replace("xdist.json", "X").replace(str(folder), "D").replace(str(xfolder), "D")  # noqa: E731
    assert strip(summary_html(xpage)) == strip(summary_html(page))
    for name in ("jb/aggregate.csv", "router/plots/confusion_matrix.svg", "scored/plots/score_histograms.png"):
        assert (xfolder / name).read_bytes() == (folder / name).read_bytes(), name

    def case_csv(run: Path) -> list[dict[str, str]]:
        with (run / "scored" / "results.csv").open(encoding="utf-8", newline="") as fh:
            return [{k: v for k, v in r.items() if k != "duration"} for r in csv.DictReader(fh)]

    assert case_csv(xfolder) == case_csv(folder)
    xlines = [json.loads(x) for x in (xfolder / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["suite"], r["case_id"], r["status"], r["data"]) for r in xlines] == [
        (r["suite"], r["case_id"], r["status"], r["data"]) for r in lines
    ]


def test_html_escapes_and_shrinks_rows(pytester: pytest.Pytester) -> None:
    """What reaches pytest-html's row data is escaped; case rows carry no failure log."""
    make_project(pytester)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--html", "r.html", "--self-contained-html")
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    data = table_data(page)
    cells = [c for reports in data["tests"].values() for r in reports for c in r["resultsTableRow"]]
    for payload in ("<script", "<img", "<svg", "<b "):
        assert not any(payload in c for c in cells), payload
    assert any("&lt;img/src=x/onerror=window.__xss=1&gt;" in c for c in cells)
    # markupsafe (the templates' escaper) writes a quote as &#34;
    assert any("test_plain[&lt;img src=x onerror=&#34;window.__xss=1&#34;&gt;]" in c for c in cells)
    logs = [r["log"] for reports in data["tests"].values() for r in reports if any("data-k=" in c for c in r["resultsTableRow"])]
    assert len(logs) == 25
    assert all("CaseFailure" not in log and "No log output captured" not in log for log in logs)
    # The summary (server-side HTML) holds the payloads only as escaped text.
    summary = summary_html(page)
    for payload in ("<script>window", "<img src=x", "<svg onload", "<b onmouseover"):
        assert payload not in summary, payload
    assert "&lt;b onmouseover=window.__xss=1&gt;label&lt;/b&gt;" in summary
    # In the JSON store no "<" survives, so nothing can close its <script> element.
    store = page.split('id="evals-case-data"', 1)[1].split("</script>", 1)[0]
    assert "<" not in store


def test_size_budget_summarises_details_and_says_so(pytester: pytest.Pytester) -> None:
    make_project(pytester, scored_cases=60, long_text=2000)
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--html", "r.html", "--self-contained-html", "-o", "evals_html_max_mb=0.55"
    )
    page = (pytester.path / "r.html").read_text(encoding="utf-8")
    entries = store_entries(page)
    assert len(entries) == 6 + 6 + 61
    failed = [e for e in entries if e["st"] in ("failed", "error")]
    # Every case keeps a row and an entry; past the budget, failures are summarised too.
    assert any(e["lv"] == "full" for e in failed) and any(e["lv"] == "summary" for e in failed)
    over = sum(int(x) for x in re.findall(r"data-over=(\d+)", summary_html(page)))
    assert over == sum(1 for e in entries if e["lv"] == "summary")
    assert "reached its size budget" in summary_html(page)
    assert len(page.encode()) < 700_000
