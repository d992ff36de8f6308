"""A baseline run: an earlier run's per-case results keyed by suite and case id.

A baseline is any run the core's reader of earlier runs accepts
(:mod:`pytest_evals.output.run_reader`): a ``--evals-report-dir`` run folder, its
``results.jsonl``, or a ``--evals-json`` summary, whose suites carry ``case_results``.
Here the cases are indexed for pairing; a case id twice in one suite is an error (a
pairing would be ambiguous).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_evals.output.run_reader import RunCase, RunFileError, read_run, results_file


class BaselineError(RunFileError):
    """The baseline cannot be read; the message names the file and line."""


@dataclass
class Baseline:
    path: Path
    #: suite node id -> case id -> case
    suites: dict[str, dict[str, RunCase]] = field(default_factory=dict)
    #: suite name -> suite node id, to pair suites whose file moved
    names: dict[str, str] = field(default_factory=dict)

    def suite(self, suite_id: str, name: str) -> dict[str, RunCase] | None:
        if suite_id in self.suites:
            return self.suites[suite_id]
        other = self.names.get(name)
        return self.suites.get(other) if other is not None else None

    @property
    def n_cases(self) -> int:
        return sum(len(cases) for cases in self.suites.values())

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


def load_baseline(path: str | Path) -> Baseline:
    """Read a baseline run; raises :class:`BaselineError` naming what is wrong."""
    p = Path(path)
    try:
        # The file read, as the summary's baseline block names it.
        baseline = Baseline(results_file(p) if p.is_dir() else p)
        for case in read_run(baseline.path):
            baseline.add(case)
    except BaselineError:
        raise
    except RunFileError as exc:
        raise BaselineError(str(exc)) from None
    return baseline
