"""Per-case verdicts read back from a run's result files, for paired comparisons.

A run's per-case results are the JSON lines the core writes to ``results.jsonl`` in its
``--evals-report-dir`` folder (one ``CaseResult.to_json()`` per line: suite, task,
case_id, status, data, ...). A run is given as that file, as the run folder holding it
(or a base folder: its newest run), or as the run's ``--evals-json`` summary when the
summary says where the results are (``results_path``) or carries per-case statuses
(``case_status`` per suite).

Any task's results work: a case is correct when its status is ``passed`` and wrong when
``failed``; errors and skips have no verdict and are left out of the pairing (and
counted). Groups (e.g. HaluEval's task types) come from a field of each record's
``data``, named by the caller; nothing here knows a task family.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_evals.output.fast_json import loads as fast_loads

RESULTS_FILE = "results.jsonl"


class OutcomeFileError(Exception):
    pass


class ItemOutcome(NamedTuple):
    # A named tuple: 35,000 of them per run, and a frozen dataclass costs 3x to build.
    suite: str
    case_id: str
    #: True = passed, False = failed, None = error/skipped (no verdict).
    correct: bool | None
    #: The record's ``data[group_by]`` (as text), or "".
    group: str = ""


@dataclass
class RunOutcomes:
    source: str
    items: dict[str, ItemOutcome] = field(default_factory=dict)
    suites: set[str] = field(default_factory=set)
    no_verdict: int = 0


def _status_correct(status: Any) -> bool | None:
    return True if status == "passed" else False if status == "failed" else None


def _results_file(path: Path) -> Path:
    """A results.jsonl inside a run folder, or in the newest run folder under a base."""
    direct = path / RESULTS_FILE
    if direct.is_file():
        return direct
    runs = sorted(p for p in path.glob(f"*/{RESULTS_FILE}") if p.is_file())
    if runs:
        return runs[-1]
    raise OutcomeFileError(f"{path}: no {RESULTS_FILE} in this folder or its run folders")


_DETAILS_KEY = b', "details": '


def _head(line: bytes) -> dict[str, Any] | None:
    """The record without its ``details`` (prompts, replies: most of the bytes).

    The core writes ``details`` after the fields a comparison reads. JSON escapes every
    quote inside a string, so the byte sequence can only be a key; cut at its first
    occurrence, the head parses only if that key was at the top level (a nested one
    leaves a brace open). Anything else is parsed whole by the caller.
    """
    cut = line.find(_DETAILS_KEY)
    if cut < 0:
        return None
    try:
        record = fast_loads(line[:cut] + b"}")
    except ValueError:
        return None
    return record if isinstance(record, dict) and "status" in record else None


def _records_from_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            head = _head(line)
            if head is not None:
                yield head
                continue
            try:
                record = json.loads(line)  # the stdlib, for its clearer error message
            except ValueError as exc:
                raise OutcomeFileError(f"{path}:{line_no}: invalid JSON ({exc})") from None
            if not isinstance(record, dict) or "case_id" not in record or "status" not in record:
                raise OutcomeFileError(f"{path}:{line_no}: not a case result (needs case_id and status)")
            yield record


def _records_from_summary(path: Path, summary: dict[str, Any]) -> Iterator[dict[str, Any]]:
    pointer = summary.get("results_path")
    if isinstance(pointer, str):
        target = Path(pointer)
        yield from _records_from_jsonl(target if target.is_absolute() else path.parent / target)
        return
    found = False
    for suite in summary.get("suites") or []:
        statuses = suite.get("case_status") if isinstance(suite, dict) else None
        if isinstance(statuses, dict):
            found = True
            for case_id, status in statuses.items():
                yield {"suite": suite.get("suite", ""), "case_id": case_id, "status": status}
    if not found:
        raise OutcomeFileError(
            f"{path}: this JSON summary has no per-case results (no 'results_path' and no "
            f"'case_status'); pass the run's {RESULTS_FILE} (written with --evals-report-dir) instead"
        )


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    if path.is_dir():
        yield from _records_from_jsonl(_results_file(path))
        return
    if not path.is_file():
        raise OutcomeFileError(f"{path}: no such file or folder")
    if path.suffix == ".jsonl":
        yield from _records_from_jsonl(path)
        return
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise OutcomeFileError(f"{path}: not JSON ({exc})") from None
    if not isinstance(summary, dict):
        raise OutcomeFileError(f"{path}: expected a JSON summary object")
    yield from _records_from_summary(path, summary)


def _matches(record_suite: str, wanted: str) -> bool:
    base = record_suite.replace("\\", "/").rsplit("/", 1)[-1]
    stem = base.split(".", 1)[0]
    return wanted in (record_suite, base, stem)


def _group(data: Any, group_by: str | None) -> str:
    if not group_by or not isinstance(data, dict):
        return ""
    value = data.get(group_by)
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def load_outcomes(path: Path, suite: str | None = None, group_by: str | None = None) -> RunOutcomes:
    """Outcomes of one run, keyed by case id; ``suite`` selects one suite of the run and
    ``group_by`` names the ``data`` field that groups cases."""
    run = RunOutcomes(source=str(path))
    all_suites: set[str] = set()
    for rec in read_records(path):
        rec_suite = str(rec.get("suite", ""))
        all_suites.add(rec_suite)
        if suite is not None and not _matches(rec_suite, suite):
            continue
        case_id = str(rec["case_id"])
        if case_id == "suite-error":
            continue
        run.suites.add(rec_suite)
        # A re-run of a case (xdist retry, report rewritten) keeps the last result.
        run.items[case_id] = ItemOutcome(rec_suite, case_id, _status_correct(rec.get("status")), _group(rec.get("data"), group_by))
    if suite is not None and not run.suites:
        raise OutcomeFileError(
            f"{path}: no results of suite {suite!r}; suites in this run: {', '.join(sorted(all_suites)) or 'none'}"
        )
    if len(run.suites) > 1:
        raise OutcomeFileError(
            f"{path}: results of several suites ({', '.join(sorted(run.suites))}); "
            "choose one with --suite (or --suite-a/--suite-b)"
        )
    run.no_verdict = sum(1 for o in run.items.values() if o.correct is None)
    return run


class Pair(NamedTuple):
    case_id: str
    a: bool
    b: bool
    group: str


def pair(a: RunOutcomes, b: RunOutcomes) -> tuple[list[Pair], dict[str, int]]:
    """Items judged in both runs, and counts of what could not be paired."""
    pairs: list[Pair] = []
    only_a = no_verdict = 0
    for key, oa in a.items.items():
        ob = b.items.get(key)
        if ob is None:
            only_a += 1
            continue
        if oa.correct is None or ob.correct is None:
            no_verdict += 1
            continue
        pairs.append(Pair(oa.case_id, oa.correct, ob.correct, oa.group or ob.group))
    only_b = sum(1 for key in b.items if key not in a.items)
    pairs.sort(key=lambda p: p.case_id)
    return pairs, {"only_in_a": only_a, "only_in_b": only_b, "without_verdict": no_verdict}
