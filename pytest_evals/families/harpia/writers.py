"""The HarpIA output file (one object per enabled metric) and log file (JSON Lines).

The log grows while the run goes: the controller appends an instance's lines as soon as
its result arrives (:class:`LiveLog`), so a run that is killed keeps the log of what it
measured. At the end of the session both files are written whole and atomically from
the suites' summaries (aggregated scores) and the light case results, in case order, so
a plain run and ``-n 2`` end with the same content. Key spellings are documented in
docs/harpia.md and fixed by the JSON Schemas in ``pytest_evals/families/harpia/schemas/``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_evals.families.harpia.scores import (
    DATA_INSTANCE_ID,
    DATA_METRICS,
    DATA_SUITE_NAME,
    ELAPSED_HARPIA,
    TABLE_KEY,
    elapsed_of,
)
from pytest_evals.model.case_result import CaseResult
from pytest_evals.output import strict_json as strictjson
from pytest_evals.output.artifacts import atomic_write, folder_name
from pytest_evals.suites.json_files import JsonFileError, read_json_file

#: In an output or log path, replaced by the suite's name (one file per suite).
SUITE_PLACEHOLDER = "{suite}"


def harpia_suites(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Suite summaries of HarpIA suites that were aggregated (in summary order)."""
    return [s for s in summary.get("suites", []) if TABLE_KEY in (s.get("tables") or {})]


def output_objects(suite: Mapping[str, Any]) -> list[dict[str, Any]]:
    table = suite["tables"][TABLE_KEY]
    return [{**obj, "suite": suite["name"], "input": table["input"]} for obj in table["metrics"]]


def log_lines(suite: Mapping[str, Any], results: Sequence[CaseResult]) -> Iterator[dict[str, Any]]:
    """One line per (metric, instance it scored); metrics without instance results write none.

    An instance that errored on one metric still has lines for the metrics that scored it
    (they count in the scores too)."""
    objects = suite["tables"][TABLE_KEY]["metrics"]
    scored = sorted((r for r in results if r.status != "skipped"), key=lambda r: (r.index, r.case_id))
    for obj in objects:
        for r in scored:
            entry = (r.data.get(DATA_METRICS) or {}).get(obj["name"])
            if entry is None:
                continue
            yield {
                "suite": suite["name"],
                "instance_id": r.data.get(DATA_INSTANCE_ID, r.case_id),
                "metric_id": obj["id"],
                "name": obj["name"],
                "parameters": obj["parameters"],
                "result": entry["result"],
                "reference_index": entry.get("reference_index"),
                "passed": entry.get("passed"),
            }



def case_log_lines(result: CaseResult) -> Iterator[dict[str, Any]]:
    """The log lines of one instance, from its result alone (what the live log appends)."""
    if result.status == "skipped":
        return
    suite = str(result.data.get(DATA_SUITE_NAME, result.suite))
    for name, entry in (result.data.get(DATA_METRICS) or {}).items():
        yield {
            "suite": suite,
            "instance_id": result.data.get(DATA_INSTANCE_ID, result.case_id),
            "metric_id": entry.get("metric_id", name),
            "name": name,
            "parameters": entry.get("parameters", {}),
            "result": entry["result"],
            "reference_index": entry.get("reference_index"),
            "passed": entry.get("passed"),
        }


class SuiteFileNames:
    """What replaces ``{suite}`` in an output or log path, per suite.

    A suite's name comes from its file (``name: ../../x`` is possible): it becomes one
    safe path component, as the run folder's suite folders do, so no file is written
    outside the folder the path names. Two suites with one name (``t.harpia.json`` in two
    folders) get distinct names (``t``, ``t-2``) in the order they are first named, so
    neither file replaces the other. The live log and the final files share one instance.
    """

    def __init__(self) -> None:
        self._by_suite: dict[str, str] = {}
        self._used: set[str] = set()

    def name(self, suite_id: str, suite_name: str) -> str:
        known = self._by_suite.get(suite_id)
        if known is not None:
            return known
        name = base = folder_name(suite_name)
        n = 1
        while name in self._used:
            n += 1
            name = f"{base}-{n}"
        self._used.add(name)
        self._by_suite[suite_id] = name
        return name


class LiveLog:
    """Appends each instance's log lines to the log file(s) as results arrive (controller only).

    A file is truncated when its first line of this run is written, every instance's lines
    go out in one write followed by a flush, and :func:`write_log` replaces the file with
    the complete, ordered log at the end."""

    def __init__(self, pattern: str, names: SuiteFileNames | None = None) -> None:
        self.pattern = pattern
        self.names = names if names is not None else SuiteFileNames()
        self._files: dict[Path, Any] = {}
        self.lines = 0

    def path_for(self, suite_id: str, suite_name: str) -> Path:
        return Path(self.pattern.replace(SUITE_PLACEHOLDER, self.names.name(suite_id, suite_name)))

    def add(self, result: CaseResult) -> None:
        if result.task != "harpia":
            return
        text = "".join(strictjson.dumps(line) + "\n" for line in case_log_lines(result))
        if not text:
            return
        path = self.path_for(result.suite, str(result.data.get(DATA_SUITE_NAME, result.suite)))
        fh = self._files.get(path)
        if fh is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = self._files[path] = path.open("w", encoding="utf-8")
        fh.write(text)
        fh.flush()
        self.lines += text.count("\n")

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files.clear()


def load_output(path: Path) -> list[dict[str, Any]]:
    """Read a HarpIA output file (ours or HarpIA Lab's): either time key is accepted, and
    each object is given both (``elapsed_time`` and ``elapsed time``)."""
    try:
        data = read_json_file(path)  # bounded: a regular file, size and depth limits
    except JsonFileError as exc:
        raise ValueError(f"{path}: {exc}") from None
    objects = data if isinstance(data, list) else [data]
    out = []
    for obj in objects:
        if not isinstance(obj, dict):
            raise ValueError(f"{path}: expected objects in the output array, got {type(obj).__name__}")
        elapsed = elapsed_of(obj)
        out.append({**obj, "elapsed_time": elapsed, ELAPSED_HARPIA: elapsed})
    return out


def _targets(
    pattern: str, suites: Sequence[Mapping[str, Any]], names: SuiteFileNames | None = None
) -> dict[Path, list[Mapping[str, Any]]]:
    """Which suites go into which file: one file, or one per suite with ``{suite}`` (its
    name made a safe, unique path component by ``names``)."""
    if SUITE_PLACEHOLDER in pattern:
        names = names if names is not None else SuiteFileNames()
        targets: dict[Path, list[Mapping[str, Any]]] = {}
        for s in suites:
            path = Path(pattern.replace(SUITE_PLACEHOLDER, names.name(str(s["suite"]), str(s["name"]))))
            targets.setdefault(path, []).append(s)
        return targets
    return {Path(pattern): list(suites)}


def write_output(pattern: str, suites: Sequence[Mapping[str, Any]], names: SuiteFileNames | None = None) -> list[Path]:
    written = []
    for path, group in _targets(pattern, suites, names).items():
        objects = [obj for s in group for obj in output_objects(s)]
        atomic_write(path, strictjson.dumps(objects, indent=2) + "\n")
        written.append(path)
    return written


def write_log(
    pattern: str,
    suites: Sequence[Mapping[str, Any]],
    results_by_suite: Mapping[str, Sequence[CaseResult]],
    names: SuiteFileNames | None = None,
) -> list[Path]:
    written = []
    for path, group in _targets(pattern, suites, names).items():
        lines: Iterable[dict[str, Any]] = (
            line for s in group for line in log_lines(s, results_by_suite.get(s["suite"], []))
        )
        atomic_write(path, "".join(strictjson.dumps(line) + "\n" for line in lines))
        written.append(path)
    return written
