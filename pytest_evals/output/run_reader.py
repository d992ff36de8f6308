"""Reading an earlier run back: its per-case results, for ``pytest-evals compare`` and
for ``--evals-baseline`` (the one reader of earlier runs).

A run is given as any of:

- its ``results.jsonl``: the ``--evals-report-dir`` folder's per-case file, one
  ``CaseResult.to_json()`` a line (suite, task, case_id, status, scores, data, ...);
- the run folder holding it, or a base folder of run folders (then its newest run);
- its ``--evals-json`` summary: each suite's ``case_results`` (what a later run pairs
  with), else the results file the summary points at (``results_path``), else per-suite
  ``case_status`` maps (case id -> status: no writer of this package makes them; a
  summary made by another tool may), else a ``results.jsonl`` beside it.

Only what pairing reads is kept per case (:class:`RunCase`): suite, case id, status,
scores, data, message and the input's fingerprint. Each suite's recorded settings
(models, target: the summary's ``settings``) are read apart, by :func:`read_settings`,
from the summary itself or the ``summary.json`` of the run folder. Nothing here knows a
task: a case is right when it passed, wrong when it failed; groups and label words are
the callers' business.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pytest_evals.controller.suite_verdict import SUITE_ERROR_ID
from pytest_evals.hardening.input_limits import max_depth
from pytest_evals.model.errors import EvalsError
from pytest_evals.output.fast_json import loads as fast_loads
from pytest_evals.suites.jsonl_cases import too_deep

RESULTS_FILE = "results.jsonl"


class RunFileError(EvalsError):
    """A run's files cannot be read; the message names the file (and line) at fault."""


class RunCase(NamedTuple):
    # A named tuple: 35,000 of them per run, and a frozen dataclass costs 3x to build.
    suite: str
    case_id: str
    status: str
    scores: dict[str, Any]
    data: dict[str, Any]
    #: Why it failed or errored (shown beside a later run's evidence).
    message: str | None
    #: The suite's name when the file gives it (a summary does), else None.
    suite_name: str | None
    #: Where the case was read, as a template for ``position`` (see :attr:`where`).
    origin: str
    position: int
    #: The task that produced it, when the file says (compare groups by its family's field).
    task: str | None = None
    #: The hash of the case's input fields (None: not recorded, e.g. an older run).
    fingerprint: str | None = None

    @property
    def where(self) -> str:
        """``file:line``, or the summary entry: formatted only when a message needs it."""
        return self.origin.format(self.position)


def check_depth(data: bytes, where: str) -> None:
    """A JSON text nested deeper than ``evals_max_json_depth`` (the JSONL reader's limit)
    is refused before it is parsed: the stdlib parser overflows the stack on it, and the
    steps after parsing (pairing, reports, the summary) walk every level again."""
    depth = too_deep(data, max_depth())
    if depth is not None:
        raise RunFileError(
            f"{where}: JSON nested {depth} levels deep, over the limit of {max_depth()} (ini evals_max_json_depth)"
        )


def _template(text: str) -> str:
    """``text`` safe as a ``str.format`` template (a path may hold braces)."""
    return text.replace("{", "{{").replace("}", "}}")


# -- results.jsonl ------------------------------------------------------------------------

_DETAILS_KEY = b', "details": '
_MESSAGE_KEY = b', "message": '
_MESSAGE_AT = len(_MESSAGE_KEY)
_N = ord("n")


def _light(line: bytes) -> dict[str, Any] | None:
    """The record without its ``details`` (prompts, replies: most of the bytes).

    The core writes ``details`` after the fields pairing reads, and ``message`` after
    ``details``. JSON escapes every quote inside a string, so either byte sequence can
    only be a key; cut at the first ``details``, the head parses only if that key was at
    the top level (a nested one leaves a brace open), and the tail from the last
    ``message`` parses only if that one was (a nested one closes a brace too many).
    None when either fails: the caller parses the line whole.
    """
    cut = line.find(_DETAILS_KEY)
    if cut < 0 or too_deep(line[:cut], max_depth()) is not None:
        return None  # parsed whole, where the depth is checked and named
    try:
        head = fast_loads(line[:cut] + b"}")
    except ValueError:
        return None
    # The fields the core writes before ``details``: a head without one is parsed whole.
    if not (isinstance(head, dict) and "case_id" in head and "status" in head and "scores" in head
            and "data" in head):
        return None
    at = line.rfind(_MESSAGE_KEY)
    value = at + _MESSAGE_AT
    if at < cut or value >= len(line):
        return head if at < 0 else None
    # Most cases have no message: a value starting with "n" is null (a string starts with '"').
    if line[value] != _N:
        if too_deep(line[at:], max_depth()) is not None:
            return None
        try:
            tail = fast_loads(b"{" + line[at + 2 :])
        except ValueError:
            return None
        if not isinstance(tail, dict):
            return None
        head["message"] = tail.get("message")
    return head


def _case(
    record: Any, origin: str, position: int, suite: Any = None, suite_name: Any = None, task: Any = None
) -> RunCase:
    """One record as a :class:`RunCase`; ``suite`` and ``suite_name`` when the record's
    container gives them (a summary's suite entry)."""
    if not isinstance(record, dict):
        raise RunFileError(f"{origin.format(position)}: expected a JSON object (a case result)")
    case_id = record.get("case_id")
    if case_id is None:
        case_id = record.get("id")
    if suite is None:
        suite = record.get("suite", "")
    scores = record.get("scores") or {}
    data = record.get("data") or {}
    message = record.get("message")
    if suite_name is None:
        suite_name = record.get("suite_name")
    status = record.get("status") or ""
    if task is None:
        task = record.get("task")
    fingerprint = record.get("fingerprint")
    # One test for the shape every written result has; the rest only when it fails.
    if not (type(case_id) is str and type(suite) is str and type(scores) is dict and type(data) is dict
            and type(status) is str):
        case_id, status = _checked(origin.format(position), case_id, suite, scores, data, status)
    return RunCase(
        suite, case_id, status, scores, data,
        message if isinstance(message, str) else None,
        suite_name if isinstance(suite_name, str) else None,
        origin, position, task if isinstance(task, str) else None,
        fingerprint if isinstance(fingerprint, str) else None,
    )


def _checked(where: str, case_id: Any, suite: Any, scores: Any, data: Any, status: Any) -> tuple[str, str]:
    """The case id and status as text, or the error naming what is wrong."""
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    if not isinstance(case_id, str) or not isinstance(suite, str):
        raise RunFileError(f"{where}: a case needs a string 'case_id' (and 'suite', when given)")
    if not isinstance(scores, dict) or not isinstance(data, dict):
        raise RunFileError(f"{where}: 'scores' and 'data' must be objects")
    return case_id, str(status)


def _from_jsonl(path: Path) -> Iterator[RunCase]:
    name = str(path)
    origin = _template(name) + ":{}"
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise RunFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            record = _light(line)
            if record is None:
                check_depth(line, f"{name}:{line_no}")
                try:
                    # the stdlib, for its clearer error message
                    record = json.loads(line.decode("utf-8", errors="replace"))
                except ValueError as exc:
                    raise RunFileError(f"{name}:{line_no}: not JSON ({exc})") from None
            yield _case(record, origin, line_no)


def results_file(path: Path) -> Path:
    """The results.jsonl of a run folder, or of the newest run folder under a base."""
    direct = path / RESULTS_FILE
    if direct.is_file():
        return direct
    runs = sorted(p for p in path.glob(f"*/{RESULTS_FILE}") if p.is_file())
    if runs:
        return runs[-1]
    raise RunFileError(
        f"{path}: no {RESULTS_FILE} in this folder or its run folders (is it a --evals-report-dir folder?)"
    )


# -- the JSON summary ---------------------------------------------------------------------

def _load_json(path: Path) -> Any:
    raw = path.read_bytes()
    check_depth(raw, str(path))
    try:
        return fast_loads(raw)
    except ValueError:
        try:  # the stdlib again, for the line and message of the error
            return json.loads(raw.decode("utf-8", errors="replace"))
        except json.JSONDecodeError as exc:
            raise RunFileError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def _from_summary(path: Path, doc: Any) -> Iterator[RunCase]:
    if not isinstance(doc, dict):
        raise RunFileError(f"{path}: expected a JSON object (a pytest_evals summary)")
    suites = doc.get("suites")
    pointer = doc.get("results_path")
    if not isinstance(suites, list):
        if isinstance(pointer, str):
            suites = []
        else:
            raise RunFileError(f"{path}: not a pytest_evals summary (no 'suites' list)")
    entries = [(i, s) for i, s in enumerate(suites) if isinstance(s, dict)]
    if any(isinstance(s.get("case_results"), list) for _, s in entries):
        for i, s in entries:
            rows = s.get("case_results")
            if not isinstance(rows, list):
                continue
            suite, name = s.get("suite", ""), s.get("name")
            origin = _template(f"{path}: suites[{i}].case_results") + "[{}]"
            for j, row in enumerate(rows):
                yield _case(row, origin, j, suite, name, s.get("task"))
        return
    if isinstance(pointer, str):
        target = Path(pointer)
        yield from _from_jsonl(target if target.is_absolute() else path.parent / target)
        return
    if any(isinstance(s.get("case_status"), dict) for _, s in entries):
        for i, s in entries:
            statuses = s.get("case_status")
            if not isinstance(statuses, dict):
                continue
            suite, name = s.get("suite", ""), s.get("name")
            origin = _template(f"{path}: suites[{i}].case_status") + " entry {}"
            for k, (case_id, status) in enumerate(statuses.items()):
                yield _case({"case_id": case_id, "status": status}, origin, k, suite, name)
        return
    beside = path.parent / RESULTS_FILE
    if beside.is_file():
        yield from _from_jsonl(beside)
        return
    raise RunFileError(
        f"{path}: this JSON summary has no per-case results (no 'case_results', 'results_path' or "
        f"'case_status'); pass the run's {RESULTS_FILE} or its --evals-report-dir folder instead"
    )


def source_file(path: str | Path) -> Path:
    """The file :func:`read_run` reads for ``path``: a folder's (newest run's)
    ``results.jsonl``, else ``path`` itself; raises :class:`RunFileError` when there is none."""
    p = Path(path)
    if p.is_dir():
        return results_file(p)
    if not p.is_file():
        raise RunFileError(f"{path}: no such file or folder")
    return p


def read_run(path: str | Path) -> Iterator[RunCase]:
    """Every case result of the run at ``path`` (see the module docstring for the forms);
    raises :class:`RunFileError` naming the file and line at fault."""
    p = Path(path)
    if p.is_dir():
        yield from _from_jsonl(results_file(p))
    elif not p.is_file():
        raise RunFileError(f"{path}: no such file or folder")
    elif p.suffix == ".jsonl":
        yield from _from_jsonl(p)
    else:
        yield from _from_summary(p, _load_json(p))


# -- recorded settings ----------------------------------------------------------------------

SUMMARY_FILE = "summary.json"


@dataclass
class RunSettings:
    """Each suite's recorded ``settings`` (models, target), by suite id and by name."""

    #: The summary they were read from.
    source: Path
    by_suite: dict[str, dict[str, Any]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    def suite(self, suite_id: str, name: str) -> dict[str, Any] | None:
        if suite_id in self.by_suite:
            return self.by_suite[suite_id]
        other = self.names.get(name)
        return self.by_suite.get(other) if other is not None else None


def read_settings(path: str | Path) -> RunSettings | None:
    """The settings each suite of the run at ``path`` recorded: from the summary (an
    ``--evals-json`` file) or the run folder's ``summary.json`` beside its results. None
    when there is no summary, or it records none (a run of an older version). An
    unreadable summary is a :class:`RunFileError`."""
    read = source_file(path)
    summary = read if read.suffix == ".json" else read.parent / SUMMARY_FILE
    if not summary.is_file():
        return None
    doc = _load_json(summary)
    suites = doc.get("suites") if isinstance(doc, dict) else None
    if not isinstance(suites, list):
        return None
    out = RunSettings(summary)
    for s in suites:
        if not isinstance(s, dict) or not isinstance(s.get("settings"), dict):
            continue
        suite_id = str(s.get("suite", ""))
        out.by_suite[suite_id] = s["settings"]
        if isinstance(s.get("name"), str):
            out.names[s["name"]] = suite_id
    return out if out.by_suite else None


# -- outcomes: a run as right/wrong per case (pytest-evals compare) -----------------------

class ItemOutcome(NamedTuple):
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


def _status_correct(status: str) -> bool | None:
    return True if status == "passed" else False if status == "failed" else None


def _matches(record_suite: str, wanted: str) -> bool:
    base = record_suite.replace("\\", "/").rsplit("/", 1)[-1]
    stem = base.split(".", 1)[0]
    return wanted in (record_suite, base, stem)


def _group(data: dict[str, Any], group_by: str | None) -> str:
    if not group_by:
        return ""
    value = data.get(group_by)
    return "" if value is None or isinstance(value, (dict, list)) else str(value)


def load_outcomes(path: Path, suite: str | None = None, group_by: str | None = None) -> RunOutcomes:
    """Outcomes of one run, keyed by case id; ``suite`` selects one suite of the run and
    ``group_by`` names the ``data`` field that groups cases."""
    run = RunOutcomes(source=str(path))
    all_suites: set[str] = set()
    for case in read_run(path):
        all_suites.add(case.suite)
        if suite is not None and not _matches(case.suite, suite):
            continue
        if case.case_id == SUITE_ERROR_ID:
            continue
        run.suites.add(case.suite)
        # A re-run of a case (xdist retry, report rewritten) keeps the last result.
        run.items[case.case_id] = ItemOutcome(case.suite, case.case_id, _status_correct(case.status),
                                              _group(case.data, group_by))
    if suite is not None and not run.suites:
        raise RunFileError(
            f"{path}: no results of suite {suite!r}; suites in this run: {', '.join(sorted(all_suites)) or 'none'}"
        )
    if len(run.suites) > 1:
        raise RunFileError(
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
