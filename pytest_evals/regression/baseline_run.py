"""A baseline run: an earlier run's per-case results keyed by suite and case id.

A baseline is any run the core's reader of earlier runs accepts
(:mod:`pytest_evals.output.run_reader`): a ``--evals-report-dir`` run folder, a base
folder of run folders (its newest run, named in every output), its ``results.jsonl``,
or a ``--evals-json`` summary, whose suites carry ``case_results``. Here the cases are
indexed for pairing, with each suite's recorded settings (models, target); a case id
twice in one suite is an error (a pairing would be ambiguous).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_evals.output.run_reader import (
    RESULTS_FILE,
    RunCase,
    RunFileError,
    RunSettings,
    read_run,
    read_settings,
    source_file,
)


class BaselineError(RunFileError):
    """The baseline cannot be read; the message names the file and line."""


@dataclass
class Baseline:
    #: The file read (a folder's results.jsonl).
    path: Path
    #: suite node id -> case id -> case
    suites: dict[str, dict[str, RunCase]] = field(default_factory=dict)
    #: suite name -> suite node id, to pair suites whose file moved
    names: dict[str, str] = field(default_factory=dict)
    #: Each suite's recorded settings; None when the run records none (an older version).
    settings: RunSettings | None = None
    #: How the path given was resolved, when it was a base folder of runs.
    chosen: str | None = None

    def suite(self, suite_id: str, name: str) -> dict[str, RunCase] | None:
        if suite_id in self.suites:
            return self.suites[suite_id]
        other = self.names.get(name)
        return self.suites.get(other) if other is not None else None

    @property
    def n_cases(self) -> int:
        return sum(len(cases) for cases in self.suites.values())

    def describe(self) -> str:
        """The file read, and which run of a base folder it is."""
        return str(self.path) + (f" ({self.chosen})" if self.chosen else "")

    def add(self, case: RunCase) -> None:
        if not case.suite:
            raise BaselineError(f"{case.where}: a case needs string fields 'suite' and 'case_id'")
        cases = self.suites.setdefault(case.suite, {})
        if case.case_id in cases:
            raise BaselineError(f"{case.where}: case id {case.case_id!r} appears twice in suite {case.suite!r}")
        cases[case.case_id] = case
        if case.suite_name is not None:  # the summary names the suite
            self.names[case.suite_name] = case.suite
        else:  # a results file: the suite file's stem
            self.names.setdefault(Path(case.suite.split("::")[0]).name.split(".")[0], case.suite)


def _chosen(given: Path, read: Path) -> str | None:
    """"newest of 3 runs in main-run" when ``given`` is a base folder of run folders."""
    if not given.is_dir() or (given / RESULTS_FILE).is_file():
        return None
    runs = sum(1 for p in given.glob(f"*/{RESULTS_FILE}") if p.is_file())
    return f"the newest of {runs} run folder(s) in {given}"


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline run; raises :class:`BaselineError` naming what is wrong (a path
    that does not exist included: a mistyped baseline must never pass for none)."""
    p = Path(path)
    try:
        if not p.exists():
            raise BaselineError(f"baseline {path} does not exist: no such file or folder (a mistyped path, or an "
                                "artifact not downloaded?)")
        read = source_file(p)
        baseline = Baseline(read, chosen=_chosen(p, read))
        for case in read_run(read):
            baseline.add(case)
        baseline.settings = read_settings(read)
    except BaselineError:
        raise
    except RunFileError as exc:
        raise BaselineError(str(exc)) from None
    return baseline
