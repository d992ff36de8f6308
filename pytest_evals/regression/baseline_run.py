"""Reading a baseline run: per-case results keyed by suite and case id.

A baseline is what an earlier run wrote: a ``--evals-report-dir`` run folder (its
``results.jsonl``), that ``results.jsonl`` itself, or a ``--evals-json`` summary, whose
suites carry a compact ``case_results`` list. Only the fields pairing needs are kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pytest_evals.model.errors import EvalsError
from pytest_evals.output.fast_json import loads as fast_loads


class BaselineError(EvalsError):
    """The baseline cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class BaselineCase:
    case_id: str
    status: str
    scores: dict[str, float | None]
    data: dict[str, Any]
    #: Why it failed or errored in the baseline (shown beside this run's evidence).
    message: str | None = None


@dataclass
class Baseline:
    path: Path
    #: suite node id -> case id -> case
    suites: dict[str, dict[str, BaselineCase]] = field(default_factory=dict)
    #: suite name -> suite node id, to pair suites whose file moved
    names: dict[str, str] = field(default_factory=dict)

    def suite(self, suite_id: str, name: str) -> dict[str, BaselineCase] | None:
        if suite_id in self.suites:
            return self.suites[suite_id]
        other = self.names.get(name)
        return self.suites.get(other) if other is not None else None

    @property
    def n_cases(self) -> int:
        return sum(len(cases) for cases in self.suites.values())


#: Where a record came from, formatted only when it is at fault (35,000 f-strings a read).
Where = Callable[[], str]


def _case(record: dict[str, Any], suite: Any, where: Where) -> tuple[str, BaselineCase]:
    case_id = record.get("case_id", record.get("id"))
    if not isinstance(suite, str) or not isinstance(case_id, str):
        raise BaselineError(f"{where()}: a case needs string fields 'suite' and 'case_id'")
    scores = record.get("scores") or {}
    data = record.get("data") or {}
    if not isinstance(scores, dict) or not isinstance(data, dict):
        raise BaselineError(f"{where()}: 'scores' and 'data' must be objects")
    message = record.get("message")
    return suite, BaselineCase(case_id, str(record.get("status", "")), scores, data,
                               message if isinstance(message, str) else None)


def _add(baseline: Baseline, suite: str, case: BaselineCase, name: str | None, where: Where) -> None:
    cases = baseline.suites.setdefault(suite, {})
    if case.case_id in cases:
        raise BaselineError(f"{where()}: case id {case.case_id!r} appears twice in suite {suite!r}")
    cases[case.case_id] = case
    baseline.names.setdefault(name or Path(suite.split("::")[0]).name.split(".")[0], suite)


def _read_results_jsonl(path: Path, baseline: Baseline) -> None:
    with path.open(encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise BaselineError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise BaselineError(f"{where}: expected a JSON object")
            at = partial(str, where)
            suite, case = _case(record, record.get("suite"), at)
            _add(baseline, suite, case, record.get("suite_name"), at)


def _read_summary(path: Path, doc: dict[str, Any], baseline: Baseline) -> None:
    suites = doc.get("suites")
    if not isinstance(suites, list):
        raise BaselineError(f"{path}: not a pytest_evals summary (no 'suites' list)")
    found = False
    for i, s in enumerate(suites):
        rows = s.get("case_results") if isinstance(s, dict) else None
        if rows is None:
            continue
        found = True
        for j, row in enumerate(rows):
            def where(i: int = i, j: int = j) -> str:
                return f"{path}: suites[{i}].case_results[{j}]"

            if not isinstance(row, dict):
                raise BaselineError(f"{where()}: expected an object")
            _, case = _case(row, s.get("suite"), where)
            _add(baseline, str(s.get("suite")), case, s.get("name"), where)
        baseline.names[str(s.get("name"))] = str(s.get("suite"))
    if not found:
        beside = path.parent / "results.jsonl"
        if beside.is_file():
            _read_results_jsonl(beside, baseline)
            return
        raise BaselineError(
            f"{path}: the summary holds no per-case results ('case_results'); pass the run "
            "folder written by --evals-report-dir or a summary written by this version"
        )


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline run; raises :class:`BaselineError` naming what is wrong."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.jsonl"
        if not p.is_file():
            raise BaselineError(f"{path}: no results.jsonl in this folder (is it a --evals-report-dir run folder?)")
    elif not p.is_file():
        raise BaselineError(f"{path}: no such baseline file or run folder")
    baseline = Baseline(p)
    if p.suffix == ".jsonl":
        _read_results_jsonl(p, baseline)
        return baseline
    try:
        doc = fast_loads(p.read_bytes())
    except ValueError:
        try:  # the stdlib again, for the line and message of the error
            doc = json.loads(p.read_text(encoding="utf-8", errors="replace"))
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{p}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise BaselineError(f"{p}: expected a JSON object")
    _read_summary(p, doc, baseline)
    return baseline
