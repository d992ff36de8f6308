"""The core's artifacts: the per-run result folder (``--evals-report-dir DIR`` ->
``DIR/<timestamp>/``), the JSON summary, generated outputs and JUnit XML properties."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.controller.artifact_writers import (
    artifact_problems,
    names_artifact,
    record_problem,
    sync_summary,
    write_problem_lines,
    writing,
)
from pytest_evals.controller.run_report import get_run_report
from pytest_evals.hardening.redaction import scrub
from pytest_evals.output import strict_json as strictjson

if TYPE_CHECKING:
    from pytest_evals.controller.run_report import RunReport

_RUN_DIR = pytest.StashKey["Path | None"]()


def run_dir(config: pytest.Config) -> Path | None:
    """This run's timestamped folder, created on first use; None without --evals-report-dir,
    or when it cannot be created (read-only, full, a file on the way: then one artifact
    problem, and the other artifacts are still written)."""
    if _RUN_DIR in config.stash:
        return config.stash[_RUN_DIR]
    base = config.getoption("evals_report_dir", None) or config.getini("evals_report_dir")
    folder: Path | None = None
    if base:
        root = Path(base)
        if not root.is_absolute():
            root = Path(config.invocation_params.dir) / root
        stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime())
        folder = root / stamp
        try:
            n = 1
            while folder.exists():
                n += 1
                folder = root / f"{stamp}_{n}"
            folder.mkdir(parents=True)
        except (OSError, ValueError) as exc:
            record_problem(config, "run folder", folder, exc)
            folder = None
    config.stash[_RUN_DIR] = folder
    return folder


_UNSAFE = re.compile(r"[^\w.\-]+")


def folder_name(name: str) -> str:
    """A suite name as a single, safe path component (never "..", never a separator)."""
    cleaned = _UNSAFE.sub("_", name).strip("._") or "suite"
    return cleaned[:120]


def suite_folders(suites: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """suite id -> its folder in the run folder: the safe name, made unique in order."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for s in suites:
        name = base = folder_name(str(s.get("name") or s.get("suite")))
        n = 1
        while name in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name)
        out[str(s.get("suite"))] = name
    return out


class SpecialFileError(OSError):
    """An output path names a device, a pipe, a socket or a folder: never replaced."""


def refuse_special(path: Path) -> None:
    """The rename below would replace whatever ``path`` is (as root, ``/dev/null`` itself)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # absent (the usual case) or unreadable: the write reports it
    if not stat.S_ISREG(mode):
        kind = "folder" if stat.S_ISDIR(mode) else "device, pipe or socket"
        raise SpecialFileError(f"{path}: is a {kind}, not a regular file; not replaced")


#: Options naming one file the run writes (checked before the run starts).
OUTPUT_FILE_OPTIONS = ("evals_json",)


def check_output_paths(config: pytest.Config) -> None:
    """A usage error, before any case runs, for an output file option naming a device,
    pipe, socket or folder (pytest's own JUnit writer leaves those alone too)."""
    for name in OUTPUT_FILE_OPTIONS:
        value = config.getoption(name, None)
        if value:
            try:
                refuse_special(Path(value))
            except SpecialFileError as exc:
                raise pytest.UsageError(f"--{name.replace('_', '-')} {exc}") from None


def atomic_write(path: Path, data: str | bytes, durable: bool = False) -> None:
    """Write a file so that readers (another xdist process, a crashed run's rerun) see the
    old content or the new one, never half a file: a temporary file, then a rename.

    The temporary file's name is unique per call (two threads may write one path), and
    it is removed when the write fails. ``durable=True`` also fsyncs before the rename,
    for stores a later session merges into (a power cut must not leave an empty file).
    """
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        # Every text file the run writes passes here: mask secrets, escape surrogates.
        data = scrub(data).encode("utf-8")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        # O_EXCL with mode 0o666: a fresh file, permissions as the umask says.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def generated_dir(config: pytest.Config) -> Path:
    folder = run_dir(config)
    return folder if folder is not None else config.rootpath / ".pytest_evals" / "generated"


def write_generated(report: RunReport) -> dict[str, str]:
    """generated.jsonl per generate:true suite, in case order, re-scorable with generate: false."""

    per_suite: dict[str, list[tuple[int, Any]]] = {}
    generate_suites = {s.suite: s.name for s in report.suites if s.generate}
    if not generate_suites:
        return {}
    # A suite with variants: one file per variant (docs/variants.md), each re-scorable alone.
    variants = {s.suite: s.sections["variants"]["names"] for s in report.suites if "variants" in s.sections}
    references = {s.suite: s.sections["variants"]["reference"] for s in report.suites if "variants" in s.sections}
    for data in report.iter_full_results():
        generated = (data.get("details") or {}).get("generated")
        if data.get("suite") in generate_suites and generated is not None:
            key = data["suite"]
            if key in variants:
                variant = str(data.get("case_id", ""))[:-1].rpartition("[")[2]
                key = f"{key}\0{variant}" if variant in variants[key] else key
            per_suite.setdefault(key, []).append((data.get("index", 0), generated))
    written: dict[str, str] = {}
    base = generated_dir(report.config)
    in_run_dir = run_dir(report.config) is not None
    # Safe, unique names: a suite named "../x" or two suites with one name never collide.
    folders = suite_folders({"suite": s.suite, "name": s.name} for s in report.suites)
    for suite_id, rows in per_suite.items():
        suite_id, _, variant = suite_id.partition("\0")
        name = folders[suite_id]
        if variant:
            path = base / name / f"generated.{variant}.jsonl" if in_run_dir else base / f"{name}.{variant}.jsonl"
            rows.sort(key=lambda r: r[0])
            atomic_write(path, "".join(strictjson.dumps(g) + "\n" for _, g in rows))
            # The suite's generated_path: its reference variant's file (the others beside it).
            if variant == references.get(suite_id) or suite_id not in written:
                written[suite_id] = str(path)
            continue
        path = base / name / "generated.jsonl" if in_run_dir else base / f"{name}.jsonl"
        rows.sort(key=lambda r: r[0])
        # One suite's file failing leaves the others' written (and named).
        with writing(report.config, "generated outputs", path):
            atomic_write(path, "".join(strictjson.dumps(g) + "\n" for _, g in rows))
            written[suite_id] = str(path)
    return written


class GeneratedWriter:
    """generated.jsonl files: first, since the other writers point at them."""

    @pytest.hookimpl(tryfirst=True)
    @names_artifact("generated outputs")
    def pytest_evals_write_outputs(self, report: RunReport) -> None:
        write_generated_paths(report)


class SummaryWriter:
    """The JSON summary and JUnit properties: last, with every section others added
    (and the problems of the artifacts written before, which it also shows)."""

    @pytest.hookimpl(trylast=True)
    @names_artifact("JSON summary")
    def pytest_evals_write_outputs(self, report: RunReport) -> None:
        write_summary(report)

    def pytest_evals_terminal_summary(self, config: pytest.Config, terminalreporter: pytest.TerminalReporter) -> None:
        write_problem_lines(config, terminalreporter)


def write_generated_paths(report: RunReport) -> None:
    generated = write_generated(report)
    for s in report.suites:
        if s.suite in generated:
            s.generated_path = generated[s.suite]
    for entry in report.summary["suites"]:
        if entry["suite"] in generated:
            entry["generated_path"] = generated[entry["suite"]]


def write_summary(report: RunReport) -> None:
    path = report.config.getoption("evals_json", None)
    if path:
        with writing(report.config, "JSON summary", path):
            atomic_write(Path(path), strictjson.dumps(report.summary, indent=2) + "\n")
    with writing(report.config, "JUnit XML properties", report.config.getoption("xmlpath", None)):
        junit_properties(report)


def rewrite_summary(config: pytest.Config) -> None:
    """The JSON summary again, after an artifact written later than it failed (pytest-html
    writes after every pytest_evals writer): its ``exit_status`` and ``artifact_problems``
    stay what the run ends with."""
    report = get_run_report(config)
    path = config.getoption("evals_json", None)
    if report is None or not path or any(p.artifact == "JSON summary" for p in artifact_problems(config)):
        return
    sync_summary(report)
    with writing(config, "JSON summary", path):
        atomic_write(Path(path), strictjson.dumps(report.summary, indent=2) + "\n")


def junit_xml(config: pytest.Config) -> Any:
    """pytest's JUnit XML writer, if ``--junitxml`` is on: found as the registered plugin
    offering ``add_global_property`` (what the public ``record_testsuite_property``
    fixture calls), so no private pytest module is imported."""
    if not config.getoption("xmlpath", None):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "LogXML" and hasattr(plugin, "add_global_property"):
            return plugin
    return None


def junit_properties(report: RunReport) -> None:
    from pytest_evals.model.metric_value import walk

    xml = junit_xml(report.config)
    if xml is None:
        return
    for s in report.suites:
        prefix = f"evals.{s.name}"
        xml.add_global_property(f"{prefix}.passed", str(s.passed).lower())
        xml.add_global_property(f"{prefix}.partial", str(s.partial).lower())
        if s.partial:
            xml.add_global_property(f"{prefix}.population", s.cases.partial_text())
        for metric_path, metric in walk(s.metrics):
            xml.add_global_property(f"{prefix}.{metric_path}", _fmt_plain(metric.value))
            if metric.ci is not None:
                xml.add_global_property(f"{prefix}.{metric_path}.ci", f"{metric.ci[0]:.6g},{metric.ci[1]:.6g}")
        for g in s.gates:
            xml.add_global_property(f"{prefix}.gate.{g.metric}.{g.op}", "passed" if g.passed else "failed")


def _fmt_plain(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.6g}"
