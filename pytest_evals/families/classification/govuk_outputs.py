"""GOV.UK output mode: ``--evals-govuk-outputs DIR`` / ini ``evals_govuk_outputs``.

Writes, for every suite of a GOV.UK classification task, the files GOV.UK Chat's tool
writes, in its layout: ``DIR/<task>/<run start, %Y-%m-%dT%H:%M:%S>/`` (``DIR`` is usually
``results``), with ``results.csv``, ``aggregate.csv``, the router's
``miscategorised_cases.csv`` and ``confusion_matrix.png``, ``generated.jsonl`` when the
suite generated, ``config.yaml`` and
``problems.log`` (not for retrieval, whose CLI sets no log up). The rows come from
:mod:`.govuk_files`; GOV.UK-shaped rag_answers suites get their ``tidy_results.csv``,
``results_per_input.csv`` and ``results_summary.csv`` from
:mod:`pytest_evals.families.rag.govuk_results`, built from the cases' full results. A second suite of the same task in one run gets ``-2`` after the
timestamp (their tool runs one task per process and would fail on the existing folder).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.case_result import CaseResult

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport

OUTPUT_DIR_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
LOG_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
_WRITTEN = pytest.StashKey[list[str]]()

#: The fields of their Config models, per task (config.yaml holds these).
THEIR_FIELDS: dict[str, tuple[str, ...]] = {
    "jailbreak_guardrails": ("what", "generate", "input_path", "claude_generation_model"),
    "output_guardrails": ("what", "generate", "input_path", "guardrail_type", "claude_generation_model"),
    "question_router": ("what", "generate", "input_path", "claude_generation_model"),
    "retrieval": ("what", "generate", "input_path"),
    "topic_tagger": ("what", "generate", "input_path"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals")
    group.addoption(
        "--evals-govuk-outputs",
        metavar="DIR",
        help="also write GOV.UK Chat's own result files for its tasks, in their layout DIR/<task>/<timestamp>/",
    )
    parser.addini("evals_govuk_outputs", "default for --evals-govuk-outputs (relative to the rootdir)", default="")


def output_root(config: pytest.Config) -> Path | None:
    option = config.getoption("evals_govuk_outputs", None)
    if option:
        return Path(str(option)).expanduser()
    ini = str(config.getini("evals_govuk_outputs") or "").strip()
    if not ini:
        return None
    path = Path(ini).expanduser()
    return path if path.is_absolute() else Path(str(config.rootpath)) / path


def _new_folder(root: Path, task: str, started: float) -> Path:
    stamp = time.strftime(OUTPUT_DIR_TIME_FORMAT, time.localtime(started))
    base = root / task / stamp
    # A file where a folder should be is an OSError for the caller, not a reason to retry.
    base.parent.mkdir(parents=True, exist_ok=True)
    for n in range(1, 10_000):
        folder = base if n == 1 else base.with_name(f"{stamp}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise FileExistsError(f"{base}: no free folder name left")


def problem_lines(task: str, results: Sequence[CaseResult], started: float) -> list[str]:
    """Their problems.log format, one line per case that is not in their files' numbers."""
    stamp = time.strftime(LOG_TIME_FORMAT, time.localtime(started))
    lines = []
    for r in sorted(results, key=lambda r: (r.index, r.case_id)):
        if r.status == "error":
            message = " ".join(str(r.message or "").split())
            lines.append(f"{stamp}  ERROR  pytest_evals.{task}: {r.case_id}: {message}")
    return lines


def config_yaml(task: str, suite: Mapping[str, Any]) -> str:
    """Their write_config_file_for_reuse: the Config model dumped by yaml (sorted keys)."""
    import yaml

    config = dict(suite.get("config") or {})
    config["generate"] = bool(suite.get("generate", config.get("generate")))
    data = {name: config.get(name) for name in THEIR_FIELDS[task]}
    return str(yaml.dump(data, default_flow_style=False))


def confusion_png(path: Path, labels: list[str], matrix: list[list[int]]) -> None:
    """Their heatmap (6x6 in, annotated counts, Blues, no colour bar), drawn with matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    try:
        ax.imshow(matrix, cmap="Blues", aspect="auto")
        peak = max((v for row in matrix for v in row), default=0)
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                ax.text(j, i, str(value), ha="center", va="center", fontsize=8,
                        color="white" if peak and value > peak / 2 else "black")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=6)
        ax.set_yticks(range(len(labels)))
        ax.set_yticklabels(labels, rotation=0, fontsize=6)
        ax.set_title("Confusion Matrix", fontsize=8)
        ax.set_xlabel("Predicted", fontsize=8)
        ax.set_ylabel("True", fontsize=8)
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)


def write_rag_suite(root: Path, suite: Mapping[str, Any], results: Sequence[CaseResult],
                    full: Sequence[Mapping[str, Any]], started: float) -> Path | None:
    """rag_answers: their three CSVs (pandas' writer), problems.log, config.yaml, generated.jsonl."""
    import yaml

    from pytest_evals.families.rag import govuk_results as rag

    if not any(rag.DETAILS_KEY in (r.get("details") or {}) for r in full) and any(
            r.status != "error" for r in results):
        return None  # not a GOV.UK-shaped suite: their files would not describe it
    rows = rag.results_from_details(full)
    folder = _new_folder(root, "rag_answers", started)
    stamp = time.strftime(LOG_TIME_FORMAT, time.localtime(started))
    read = {str(r.get("case_id")) for r in full if rag.DETAILS_KEY in (r.get("details") or {})}
    lines = problem_lines("rag_answers", [r for r in results if r.case_id not in read], started)
    lines += rag.problem_lines(rows, stamp)
    if not rows:
        lines.append(f"{stamp}  ERROR  pytest_evals.rag_answers: There is no data to evaluate")
    (folder / "problems.log").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for name, text in rag.files(rows).items():
        with open(folder / name, "w", encoding="utf8", newline="") as fh:
            fh.write(text)
    generate = bool(suite.get("generate"))
    if generate and rows:
        (folder / "generated.jsonl").write_text(rag.generated_lines(full), encoding="utf8")
    data = rag.config_data(dict(suite.get("config") or {}), generate)
    (folder / "config.yaml").write_text(str(yaml.dump(data, default_flow_style=False)), encoding="utf-8")
    return folder


def write_suite(root: Path, suite: Mapping[str, Any], results: Sequence[CaseResult], started: float,
                full: Sequence[Mapping[str, Any]] = (), notes: list[str] | None = None) -> Path | None:
    from pytest_evals.families.classification.govuk_files import (
        BUILDERS,
        WITH_PROBLEMS_LOG,
        csv_text,
    )

    task = str(suite.get("task") or "")
    if task == "rag_answers":
        return write_rag_suite(root, suite, results, full, started)
    if task not in BUILDERS:
        return None
    files = BUILDERS[task](results, suite)
    folder = _new_folder(root, task, started)
    if task in WITH_PROBLEMS_LOG:
        lines = problem_lines(task, results, started)
        if not files:
            lines.append(f"{time.strftime(LOG_TIME_FORMAT, time.localtime(started))}  ERROR  pytest_evals.{task}: "
                         "There is no data to evaluate")
        (folder / "problems.log").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    for name, rows in files.items():
        if name.endswith(".csv") and rows:
            # csv's \r\n row ends kept as written (their text-mode open on Linux keeps them too)
            with open(folder / name, "w", encoding="utf8", newline="") as fh:
                fh.write(csv_text(rows))
            formulas = formula_cells(rows)
            if formulas and notes is not None:
                # Written as their tool writes them (the files compare equal to theirs),
                # but a spreadsheet would run them: the reader is told where.
                notes.append(f"WARNING GOV.UK outputs: {folder / name}: {len(formulas)} cell(s) start with "
                             f"=, + or @ and open as spreadsheet formulas, as in their tool's files "
                             f"(first: {formulas[0]})")
    if suite.get("generate") and files.get("results.csv"):
        from pytest_evals.families.classification.govuk_files import generated_lines

        (folder / "generated.jsonl").write_text(generated_lines(task, files["results.csv"]), encoding="utf8")
    if "confusion" in files:
        labels, matrix = files["confusion"]
        try:
            confusion_png(folder / "confusion_matrix.png", labels, matrix)
        except ImportError:
            # matplotlib comes with the 'reports' extra; the CSVs are written all the same
            if notes is not None:
                notes.append(f"WARNING GOV.UK outputs: {folder}/confusion_matrix.png not drawn: matplotlib is not "
                             "installed (pip install 'pytest-evals[reports]')")
    (folder / "config.yaml").write_text(config_yaml(task, suite), encoding="utf-8")
    return folder


def formula_cells(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """``row N column C`` of each text cell a spreadsheet would read as a formula."""
    return [f"row {i} column {column!r}" for i, row in enumerate(rows, start=1)
            for column, value in row.items() if isinstance(value, str) and value[:1] in ("=", "+", "@")]


def _full_results(report: RunReport, summary: Mapping[str, Any],
                  by_suite: Mapping[str, Sequence[CaseResult]]) -> dict[str, list[dict[str, Any]]]:
    """rag_answers suites' full results (details included, read back from the spool): the
    final result of each case (a rerun's last), in case order."""
    wanted = {str(s.get("suite")) for s in summary.get("suites") or [] if s.get("task") == "rag_answers"}
    if not wanted:
        return {}
    final = {(sid, r.case_id): r.index for sid in wanted for r in by_suite.get(sid, [])}
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for item in report.iter_full_results():
        key = (str(item.get("suite")), str(item.get("case_id")))
        if key in final:
            latest[key] = item
    out: dict[str, list[dict[str, Any]]] = {}
    for (sid, _cid), item in sorted(latest.items(), key=lambda kv: (kv[0][0], final[kv[0]], kv[0][1])):
        out.setdefault(sid, []).append(item)
    return out


@pytest.hookimpl(optionalhook=True)
def pytest_evals_write_outputs(config: pytest.Config, summary: dict[str, Any], report: RunReport) -> None:
    root = output_root(config)
    if root is None:
        return
    started = float(summary.get("started_at") or time.time())
    by_suite = report.results_by_suite()
    full = _full_results(report, summary, by_suite)
    written: list[str] = []
    for suite in summary.get("suites") or []:
        sid = str(suite.get("suite"))
        try:
            folder = write_suite(root, suite, by_suite.get(sid, []), started, full.get(sid, []), written)
        except OSError as exc:
            written.append(f"ERROR GOV.UK outputs for {suite.get('name')} not written: {exc}")
            continue
        if folder is not None:
            written.append(f"GOV.UK outputs: {os.path.relpath(folder)}")
    config.stash[_WRITTEN] = written


@pytest.hookimpl(optionalhook=True)
def pytest_evals_terminal_summary(config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
    for line in config.stash.get(_WRITTEN, []):
        terminalreporter.write_line(line, red=line.startswith("ERROR"), yellow=line.startswith("WARNING"))
