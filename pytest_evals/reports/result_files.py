"""The per-run result folder of ``--evals-report-dir DIR`` (``DIR/<timestamp>/``).

Layout (documented in docs/reports.md)::

    summary.json              the JSON summary (same document as --evals-json)
    results.jsonl             every case of every suite, with details, in suite/case order
    manifest.json             what is where, the suite files, versions
    <suite>/config.yaml       the suite's effective configuration (after overrides)
    <suite>/config.json       the same, as JSON
    <suite>/results.csv       one row per case: status, scores, the task's data fields
    <suite>/aggregate.csv     one row per metric: value, interval, n, gate, result
    <suite>/gates.csv         one row per gate
    <suite>/tables.json       the task's extra tables (confusion matrix...), if any
    <suite>/confusion_matrix.csv
    <suite>/plots/*.svg|png   the plots of the HTML report
    <suite>/generated.jsonl   outputs of generate: true suites (written by the core)

``results.jsonl`` plus ``config.json`` are enough to re-score a run without calling a
model (:mod:`pytest_evals.reports.rescore_command`) and to diff two runs case by case.
Writes are atomic (temporary file, then rename).
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.artifact_writers import writing
from pytest_evals.hardening.spreadsheet_cells import spreadsheet_safe
from pytest_evals.model import value_format as fmt
from pytest_evals.model.case_result import CaseResult
from pytest_evals.output import strict_json as strictjson
from pytest_evals.output.artifacts import atomic_write, folder_name, suite_folders  # noqa: F401  (re-exported)
from pytest_evals.reports.plots import Plot

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return value


def _flat(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            _flat(f"{prefix}.{k}", v, out)
    else:
        out[prefix] = _cell(value)


def csv_text(header: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> str:
    """The rows as CSV; text cells (the header too: data field names) are neutralised
    against formula injection."""
    return csv_lines([list(header), *([_cell(row.get(k)) for k in header] for row in rows)])


def csv_lines(lines: Iterable[Sequence[Any]]) -> str:
    """Rows of cells as CSV, every text cell made safe to open in a spreadsheet."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    # Python < 3.12 leaves a field holding a bare CR unquoted when lines end in LF;
    # spreadsheets end the row there, and what follows the CR would start a new cell
    # unneutralised. Such rows are written with every field quoted.
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for line in lines:
        cells = [spreadsheet_safe(cell) for cell in line]
        bare_cr = any(isinstance(cell, str) and "\r" in cell for cell in cells)
        (quoted if bare_cr else writer).writerow(cells)
    return buf.getvalue()


_CASE_COLUMNS = ("suite", "case_id", "index", "source", "status", "error_kind", "message", "duration")


def case_rows(results: Sequence[CaseResult]) -> tuple[list[str], list[dict[str, Any]]]:
    """Flat rows (scores, data fields, usage) with a header that covers every row."""
    rows: list[dict[str, Any]] = []
    extra: dict[str, None] = {}
    for r in results:
        row: dict[str, Any] = {k: getattr(r, k) for k in _CASE_COLUMNS}
        flat: dict[str, Any] = {}
        for name, score in r.scores.items():
            flat[f"score.{name}"] = _cell(score)
        _flat("data", r.data, flat)
        _flat("usage", r.usage, flat)
        flat.pop("data", None)
        flat.pop("usage", None)
        for key in flat:
            extra.setdefault(key, None)
        row.update(flat)
        rows.append(row)
    scores = [k for k in extra if k.startswith("score.")]
    rest = [k for k in extra if not k.startswith("score.")]
    return [*_CASE_COLUMNS, *scores, *rest], rows


def aggregate_rows(suite: Mapping[str, Any]) -> list[dict[str, Any]]:
    gates = fmt.gates_by_metric(suite.get("gates") or [])
    rows = []
    for path, leaf in fmt.walk(suite.get("metrics") or {}):
        own = gates.get(path, [])
        rows.append(
            {
                "metric": path,
                "value": leaf.get("value"),
                "kind": leaf.get("kind"),
                "ci_low": leaf.get("ci_low"),
                "ci_high": leaf.get("ci_high"),
                "n": leaf.get("n"),
                "reason": leaf.get("reason"),
                "gate": "; ".join(fmt.gate_line(g) for g in own),
                "gate_passed": (all(g["passed"] for g in own) if own else None),
            }
        )
    return rows


AGGREGATE_COLUMNS = ("metric", "value", "kind", "ci_low", "ci_high", "n", "reason", "gate", "gate_passed")
GATE_COLUMNS = ("metric", "op", "threshold", "value", "passed", "reason")


def _task_source(task: Any) -> dict[str, Any]:
    """Where the task class lives, so a run can be re-scored where the task is not registered."""
    import inspect

    from pytest_evals.tasks import TASKS, get_task_class

    if not isinstance(task, str) or task not in TASKS:
        return {}
    try:
        cls = get_task_class(task)
        source = inspect.getsourcefile(cls)
    except Exception:  # a broken task already shows as a suite problem
        return {"task_class": TASKS[task]}
    return {"task_class": f"{cls.__module__}:{cls.__qualname__}", "task_file": source}


def write_results_jsonl(report: RunReport, path: Path, order: Mapping[str, int]) -> int:
    """Every full result, sorted by suite then case position, without holding them all.

    The controller spools results in arrival order (which differs between plain and xdist
    runs); an unsorted copy with line offsets is written first, then copied in order.
    """
    unsorted = path.with_name(f".{path.name}.{os.getpid()}.unsorted")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    keys: list[tuple[int, int, str, int, int]] = []
    offset = 0
    try:
        with unsorted.open("wb") as fh:
            for data in report.iter_full_results():
                line = (strictjson.dumps(data, ensure_ascii=False, default=str) + "\n").encode("utf-8")
                fh.write(line)
                suite = str(data.get("suite", ""))
                keys.append((order.get(suite, len(order)), int(data.get("index") or 0), str(data.get("case_id", "")), offset, len(line)))
                offset += len(line)
        keys.sort()
        with unsorted.open("rb") as src, tmp.open("wb") as dst:
            for *_key, start, length in keys:
                src.seek(start)
                dst.write(src.read(length))
        os.replace(tmp, path)
    finally:
        # Neither temporary file outlives a failed write (a full disk stays full otherwise).
        unsorted.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return len(keys)


def write_run_files(config: pytest.Config, folder: Path, plots: Mapping[str, Sequence[Plot]]) -> dict[str, Any]:
    import yaml

    from pytest_evals import __version__
    from pytest_evals.controller.run_report import get_run_report

    report = get_run_report(config)
    assert report is not None, "run files are written on the controller, once the run is reported"
    summary = report.summary
    suites = list(summary.get("suites") or [])
    by_suite = report.results_by_suite()
    manifest: dict[str, Any] = {
        "pytest_evals_version": __version__,
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "rootdir": str(config.rootpath),
        "args": [str(a) for a in config.invocation_params.args],
        "files": {"summary": "summary.json", "results": "results.jsonl"},
        "suites": [],
    }
    folders = suite_folders(suites)
    for s in suites:
        suite_id = str(s.get("suite"))
        name = folders[suite_id]
        sub = folder / name
        # One suite's folder failing (a full disk, a name the system refuses) leaves
        # the other suites' folders and the run's own files written.
        with writing(config, "run folder", sub):
            files: dict[str, Any] = {}
            config_data = s.get("config")
            if config_data is not None:
                header = f"# effective configuration of {suite_id} (after command-line overrides)\n"
                atomic_write(sub / "config.yaml", header + yaml.safe_dump(config_data, sort_keys=False, allow_unicode=True))
                atomic_write(sub / "config.json", strictjson.dumps(config_data, indent=2, ensure_ascii=False) + "\n")
                files["config"] = f"{name}/config.yaml"
            header_cols, rows = case_rows(by_suite.get(suite_id, []))
            atomic_write(sub / "results.csv", csv_text(header_cols, rows))
            atomic_write(sub / "aggregate.csv", csv_text(AGGREGATE_COLUMNS, aggregate_rows(s)))
            atomic_write(sub / "gates.csv", csv_text(GATE_COLUMNS, s.get("gates") or []))
            files.update(results_csv=f"{name}/results.csv", aggregate_csv=f"{name}/aggregate.csv", gates_csv=f"{name}/gates.csv")
            # Families add their own files beside ours (GOV.UK's CSV shapes, for example).
            for extra in config.hook.pytest_evals_suite_folder(
                config=config, folder=sub, suite=s, results=by_suite.get(suite_id, [])
            ):
                files.update(extra or {})
            tables = s.get("tables") or {}
            if tables:
                atomic_write(sub / "tables.json", strictjson.dumps(tables, indent=2, ensure_ascii=False, default=str) + "\n")
                files["tables"] = f"{name}/tables.json"
                cm = tables.get("confusion_matrix")
                if isinstance(cm, Mapping) and cm.get("labels"):
                    labels = [str(x) for x in cm["labels"]]
                    lines = [[f"{cm.get('rows', 'expected')}\\{cm.get('columns', 'actual')}", *labels]]
                    lines += [[label, *row] for label, row in zip(labels, cm.get("matrix") or [], strict=False)]
                    atomic_write(sub / "confusion_matrix.csv", csv_lines(lines))
                    files["confusion_matrix_csv"] = f"{name}/confusion_matrix.csv"
            plot_files = []
            for p in plots.get(suite_id, []):
                atomic_write(sub / "plots" / f"{p.name}.svg", p.svg)
                atomic_write(sub / "plots" / f"{p.name}.png", p.png)
                plot_files += [f"{name}/plots/{p.name}.svg", f"{name}/plots/{p.name}.png"]
            if plot_files:
                files["plots"] = plot_files
            if s.get("generated_path"):
                files["generated"] = s["generated_path"]
            manifest["suites"].append(
                {
                    **_task_source(s.get("task")),
                    "suite": suite_id,
                    "name": s.get("name"),
                    "task": s.get("task"),
                    "suite_path": str(config.rootpath / suite_id),
                    "folder": name,
                    "cases": (s.get("cases") or {}).get("total", 0),
                    "passed": s.get("passed"),
                    "partial": bool(s.get("partial")),
                    "files": files,
                }
            )
    order = {str(s.get("suite")): i for i, s in enumerate(suites)}
    with writing(config, "run folder", folder / "results.jsonl"):
        manifest["cases"] = write_results_jsonl(report, folder / "results.jsonl", order)
    with writing(config, "run folder", folder / "summary.json"):
        atomic_write(folder / "summary.json", strictjson.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
    with writing(config, "run folder", folder / "manifest.json"):
        atomic_write(folder / "manifest.json", strictjson.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return {"folder": str(folder), **manifest}
