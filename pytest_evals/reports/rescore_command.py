"""Re-score a run from its result folder, without calling any model.

    python -m pytest_evals.reports.rescore_command RUN_DIR [--set SUITE:KEY=VALUE ...] [--json PATH]

Each suite's aggregates and gates are recomputed from ``results.jsonl`` (the cases'
``data``, which is what a task's aggregation reads) and the suite's effective
configuration (``<suite>/config.json``), by the same code as a live run. With no
``--set``, the result equals the run's ``summary.json``: the command prints any
difference and exits 1, so it doubles as an integrity check of a stored run. Only what
is recomputed is compared (the fields of the recomputed summary, never fields only the
live run could know), and timings (HarpIA's ``elapsed_time``...) are left out: they
measure the run, not its results. With ``--set`` (e.g. new thresholds) it shows what
the verdict would have been; a ``--set`` naming no suite of the run is a warning.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pytest_evals.model.case_result import CaseResult
from pytest_evals.output import strict_json as strictjson

if TYPE_CHECKING:
    from pytest_evals.controller.suite_verdict import Population


class RescoreError(Exception):
    pass


def _bounded(data: str, where: str) -> str:
    """Nesting past ``evals_max_json_depth`` is refused before parsing (a hostile run
    folder would otherwise overflow the parser's stack)."""
    from pytest_evals.output.run_reader import RunFileError, check_depth

    try:
        check_depth(data.encode("utf-8", "surrogatepass"), where)
    except RunFileError as exc:
        raise RescoreError(str(exc)) from None
    return data


def _read_json(path: Path) -> Any:
    try:
        return json.loads(_bounded(path.read_text(encoding="utf-8"), str(path)))
    except FileNotFoundError:
        raise RescoreError(f"{path}: not found (is this a --evals-report-dir run folder?)") from None
    except ValueError as exc:
        raise RescoreError(f"{path}: invalid JSON ({exc})") from None


def iter_results(path: Path) -> Iterator[CaseResult]:
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield CaseResult.from_json(json.loads(_bounded(line, f"{path}:{line_no}"))).light()
            except (ValueError, TypeError) as exc:
                raise RescoreError(f"{path}:{line_no}: not a case result ({exc})") from None


def _task_class(entry: Mapping[str, Any], name: str, where: str) -> Any:
    """The suite's task class: registered, or imported from where the run found it
    (a task registered in a conftest is not importable by name)."""
    import importlib
    import importlib.util

    from pytest_evals.model.errors import SuiteConfigError
    from pytest_evals.tasks import get_task_class

    try:
        return get_task_class(name, where=where)
    except SuiteConfigError:
        spec, source = entry.get("task_class"), entry.get("task_file")
        if not spec:
            raise
    from pytest_evals.registry.dotted_names import ResolveError, resolve_name

    def load(module_name: str) -> ModuleType:
        try:
            return importlib.import_module(module_name)
        except ImportError:
            if not source or not Path(source).is_file():
                raise
        # The conftest or file the run found the task in, under a name of its own.
        unique = f"_rescore_{module_name}"
        if unique not in sys.modules:
            loader = importlib.util.spec_from_file_location(unique, source)
            assert loader is not None and loader.loader is not None
            module = importlib.util.module_from_spec(loader)
            sys.modules[unique] = module
            loader.loader.exec_module(module)
        return sys.modules[unique]

    try:
        return resolve_name(str(spec), f"task {name!r}: task_class", importer=load)
    except ResolveError as exc:
        raise RescoreError(f"{where}: {exc}") from None


def stored_population(cases: Mapping[str, Any] | None) -> Population | None:
    """What the run knew of a suite's cases beyond its results (a partial run's
    population counts, in its summary.json), for the recomputed verdict."""
    from pytest_evals.controller.suite_verdict import Population

    if not cases or "population" not in cases:
        return None
    def number(key: str) -> int:
        return int(cases.get(key) or 0)

    return Population(
        defined=cases.get("population"),
        deselected=number("deselected"),
        sampled_out=number("sampled_out"),
        not_run=number("not_run"),
        xfailed=number("xfailed"),
        xpassed=number("xpassed"),
    )


def rescore(run: Path, overrides: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Suite summaries (JSON, as in summary.json) recomputed from a run folder."""
    from pytest_evals.controller.suite_verdict import suite_summary
    from pytest_evals.suites.suite_config import Suite, set_path

    manifest = _read_json(run / "manifest.json")
    # A partial run stays partial: its population and whether it was allowed are in
    # the stored summary (absent in folders written before they were recorded).
    stored = _read_json(run / "summary.json") if (run / "summary.json").is_file() else {}
    stored_cases = {str(s.get("suite")): s.get("cases") for s in stored.get("suites") or []}
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for result in iter_results(run / "results.jsonl"):
        by_suite[result.suite].append(result)
    out = []
    for entry in manifest.get("suites") or []:
        suite_id = entry["suite"]
        config_path = run / entry["folder"] / "config.json"
        if not config_path.exists():
            raise RescoreError(f"{config_path}: no effective configuration for suite {suite_id}")
        raw = _read_json(config_path)
        for key, value in (overrides or {}).get(entry.get("name") or "", {}).items():
            set_path(raw, key, value)
        task_cls = _task_class(entry, raw["task"], str(config_path))
        config = task_cls.config_model.model_validate(raw)
        suite = Suite(path=Path(entry["suite_path"]), nodeid=suite_id, name=entry.get("name") or suite_id, config=config, raw=raw)
        results = sorted(by_suite.get(suite_id, []), key=lambda r: (r.index, r.case_id))
        out.append(
            suite_summary(
                suite, task_cls(suite), results, accounted=True,
                population=stored_population(stored_cases.get(suite_id)),
                allow_partial=bool(stored.get("allow_partial")),
            ).to_json()
        )
    return out


#: Keys holding wall-clock measurements: they differ on every computation.
TIMING_KEYS = frozenset({"elapsed_time", "elapsed time", "setup_time", "elapsed", "duration", "duration_s"})

#: The recomputed parts of a suite summary that a stored run must reproduce.
COMPARED = ("metrics", "tables", "gates", "cases", "passed")


def _comparable(stored: Any, fresh: Any) -> tuple[Any, Any]:
    """Both values without timings, and the stored one cut to the keys recomputed."""
    if isinstance(stored, Mapping) and isinstance(fresh, Mapping):
        keys = [k for k in fresh if k not in TIMING_KEYS]
        pairs = {k: _comparable(stored.get(k), fresh[k]) for k in keys}
        return {k: a for k, (a, _) in pairs.items()}, {k: b for k, (_, b) in pairs.items()}
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        pairs_list = [_comparable(a, b) for a, b in zip(stored, fresh, strict=True)]
        return [a for a, _ in pairs_list], [b for _, b in pairs_list]
    return stored, fresh


def differences(stored: Sequence[Mapping[str, Any]], fresh: Sequence[Mapping[str, Any]]) -> list[str]:
    """What differs between the stored and recomputed suites (metrics, gates, verdicts)."""
    lines = []
    old = {s["suite"]: s for s in stored}
    for s in fresh:
        before = old.get(s["suite"])
        if before is None:
            lines.append(f"{s['suite']}: not in summary.json")
            continue
        for key in COMPARED:
            a, b = _comparable(before.get(key), s.get(key))
            if json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str):
                lines.append(f"{s['suite']}: {key} differ")
    return lines


def unknown_set_suites(run: Path, sets: Mapping[str, Any]) -> list[str]:
    """``--set`` suite names that name no suite of the run."""
    if not sets:
        return []
    manifest = _read_json(run / "manifest.json")
    names = {str(e.get("name") or "") for e in manifest.get("suites") or []}
    return [name for name in sets if name not in names]


def _parse_sets(items: list[str]) -> dict[str, dict[str, Any]]:
    from pytest_evals.suites.suite_config import Override

    out: dict[str, dict[str, Any]] = defaultdict(dict)
    for text in items:
        ov = Override.parse(text)
        if ov.suite is None:
            raise RescoreError(f"--set {text!r}: name the suite, e.g. my_suite:thresholds.accuracy.min=0.8")
        out[ov.suite][ov.key] = ov.value
    return out


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", type=Path, help="a run folder written by --evals-report-dir")
    parser.add_argument("--set", action="append", default=[], metavar="SUITE:KEY=VALUE", help="change a suite field before re-scoring")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the recomputed suite summaries as JSON")


def register(subparsers: Any) -> None:
    """``pytest-evals rescore RUN``: the same as ``python -m pytest_evals.reports.rescore_command``."""
    parser = subparsers.add_parser("rescore", help="recompute a run's aggregates from its result files",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    parser.set_defaults(func=_run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_evals.reports.rescore_command", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_arguments(parser)
    return _run(parser.parse_args(argv))


def _run(args: argparse.Namespace) -> int:
    try:
        sets = _parse_sets(args.set)
        fresh = rescore(args.run, sets)
        stored = _read_json(args.run / "summary.json").get("suites") or []
        unknown = unknown_set_suites(args.run, sets)
    except RescoreError as exc:
        print(f"rescore: {exc}", file=sys.stderr)
        return 2
    if unknown:
        have = ", ".join(sorted(str(s["name"]) for s in fresh)) or "none"
        for name in unknown:
            print(f"rescore: warning: --set names suite {name!r}, which is not in this run (suites: {have}); "
                  "nothing was changed for it", file=sys.stderr)
    for s in fresh:
        verdict = ("PARTIAL" if s.get("partial") else "PASSED") if s["passed"] else "FAILED"
        missed = [g for g in s["gates"] if not g["passed"]]
        print(f"{s['name']}: {s['cases']['total']} cases -> {verdict}" + (f" ({len(missed)} gate(s) missed)" if missed else ""))
    if args.json:
        args.json.write_text(strictjson.dumps(fresh, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    if not sets:
        diff = differences(stored, fresh)
        for line in diff:
            print(f"DIFFERS {line}")
        if diff:
            return 1
        print("recomputed aggregates equal summary.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
