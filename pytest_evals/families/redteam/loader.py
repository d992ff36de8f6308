"""Reading runs back: ``data/<runner_dir>/<run_name>/seed_<id>/...``.

A malformed file is reported as a :class:`LoadIssue` naming the file and the field, and
only that file is skipped: the rest of the seed and the run still load.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from pytest_evals.collection.collector_pause import collector_paused
from pytest_evals.families.redteam.attribute_stats import (
    SEED_FILE,
    AttributeSeed,
    AttributeStatsError,
    has_final_stats,
    parse_attribute_list,
    stats_files,
)
from pytest_evals.families.redteam.convert import field_path, hash_system_prompt
from pytest_evals.families.redteam.edge_rules import CONTEXT_KEY, DEFAULT_EDGES, EdgeRules
from pytest_evals.families.redteam.schema import (
    CLUSTER_INFO_FILE,
    POPULATION_FILE,
    RUNNER_DIRS,
    ClusterInfo,
    SystemPromptStats,
)
from pytest_evals.families.redteam.scoring import (
    DEFAULT_PARTIAL,
    PartialScores,
    attack_adversarial_score,
    compute_adversarial_score,
    score_stats,
)
from pytest_evals.suites.json_files import read_json_file

SEED_DIR = re.compile(r"^seed_(.+)$")


@dataclass
class LoadIssue:
    """A file that could not be used, and why."""

    path: Path
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f" field {self.field!r}:" if self.field else ""
        return f"{self.path}:{where} {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": str(self.path), "field": self.field, "message": self.message}


@dataclass
class PromptRecord:
    """One system prompt file with its scores resolved the way rm-bias's viewer does.

    The attacks' scores are computed from their ratings (a stored
    ``aux_info.adversarial_score`` only fills in where the ratings give none), and the
    prompt's mean/std are those of the attack scores, N/A when there are none. The
    file's own ``mean_score`` / ``stdev_score`` are kept beside them: rm-bias writes
    0.0 for a prompt without scores, which its viewer shows as N/A.
    """

    hash: str
    path: Path
    stats: SystemPromptStats
    #: One per attack, None for N/A.
    adversarial_scores: list[float | None]
    mean_score: float | None
    stdev_score: float | None
    #: The rule used for partially missing normalized scores ("average" or "na").
    partial: PartialScores = DEFAULT_PARTIAL
    #: Per attack: whether the score was computed from the ratings (else stored or N/A).
    computed: list[bool] = field(default_factory=list)
    #: The edge rules the file was read under (see :mod:`.edge_rules`).
    edges: EdgeRules = DEFAULT_EDGES

    @property
    def file_mean_given(self) -> bool:
        """Whether the file has a ``mean_score`` key at all (null and NaN count as given)."""
        return "mean_score" in self.stats.model_fields_set

    @property
    def sort_score(self) -> float | None:
        """rm-bias's Explore order key: the file's ``mean_score``, 0 when the key is absent.

        A null or NaN ``mean_score`` has no place in their order (their sort raises on
        null); it is None here and sorts last.
        """
        return self.stats.mean_score if self.file_mean_given else 0.0

    @property
    def file_mean(self) -> float | None:
        return self.stats.mean_score

    @property
    def file_stdev(self) -> float | None:
        return self.stats.stdev_score

    @property
    def hash_ok(self) -> bool:
        """Whether the file name is the md5 of its stripped system prompt."""
        return hash_matches(self)

    @property
    def step(self) -> int | None:
        return self.stats.meta.step


@dataclass
class SeedData:
    seed_id: str
    path: Path
    prompts: list[PromptRecord] = field(default_factory=list)
    cluster_info: ClusterInfo | None = None
    #: step -> {system prompt hash: generation}
    population_history: dict[str, dict[str, int]] | None = None


@dataclass
class RunData:
    runner: str
    name: str
    path: Path
    seeds: list[SeedData] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=list)
    #: rm-bias's current output, ``final_stats/seed_<i>.json`` (see :mod:`.attribute_stats`).
    attribute_stats: list[AttributeSeed] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return f"{self.runner}/{self.name}"


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def _read_json(path: Path) -> Any:
    """Parse a JSON file; raises LoadIssue-friendly ValueError messages.

    Bounded (a run folder may come from anywhere): a regular file only, so a FIFO named
    ``*.json`` is refused instead of hanging the viewer; at most the JSON file size limit;
    nesting no deeper than the JSONL reader's limit.
    """
    try:
        return read_json_file(path)
    except json.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


def _issue_from_validation(path: Path, exc: ValidationError) -> LoadIssue:
    errors = exc.errors()
    first = errors[0]
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return LoadIssue(path, field_path(tuple(first["loc"])), f"{first['msg']}{more}")


def strict_field_issue(path: Path, stats: SystemPromptStats) -> LoadIssue | None:
    """Under edge rules "ours": the first rater without a type or response without ratings."""
    for a, attack in enumerate(stats.attacks):
        for r, response in enumerate(attack.responses):
            if "ratings" not in response.model_fields_set:
                return LoadIssue(path, field_path(("attacks", a, "responses", r, "ratings")),
                                 "Field required (edge rules 'ours'; rm-bias's viewer reads it as no ratings)")
            for g, rating in enumerate(response.ratings):
                if "rating_function_type" not in rating.rater.model_fields_set:
                    return LoadIssue(path, field_path(("attacks", a, "responses", r, "ratings", g, "rater", "rating_function_type")),
                                     "Field required (edge rules 'ours'; rm-bias's viewer reads the rating)")
    return None


def load_prompt_file(
    path: Path, partial: PartialScores = DEFAULT_PARTIAL, edges: EdgeRules = DEFAULT_EDGES
) -> PromptRecord:
    """Read one system prompt file; raises :class:`LoadError` carrying the issue."""
    try:
        raw = _read_json(path)
    except (OSError, ValueError) as exc:
        raise LoadError(LoadIssue(path, None, str(exc))) from None
    if not isinstance(raw, dict):
        raise LoadError(LoadIssue(path, None, f"expected a JSON object, got {type(raw).__name__}"))
    try:
        stats = SystemPromptStats.model_validate(raw, context={CONTEXT_KEY: edges})
    except ValidationError as exc:
        raise LoadError(_issue_from_validation(path, exc)) from None
    if edges == "ours" and (issue := strict_field_issue(path, stats)) is not None:
        raise LoadError(issue)
    computed = [compute_adversarial_score(a, partial) for a in stats.attacks]
    scores = [
        c if c is not None else attack_adversarial_score(a, partial, edges)
        for a, c in zip(stats.attacks, computed, strict=True)
    ]
    mean, stdev = score_stats(scores)
    return PromptRecord(path.stem, path, stats, scores, mean, stdev, partial, [c is not None for c in computed], edges)


class LoadError(Exception):
    def __init__(self, issue: LoadIssue) -> None:
        super().__init__(str(issue))
        self.issue = issue


def _load_population(path: Path) -> dict[str, dict[str, int]]:
    try:
        raw = _read_json(path)
    except (OSError, ValueError) as exc:
        raise LoadError(LoadIssue(path, None, str(exc))) from None
    if not isinstance(raw, dict):
        raise LoadError(LoadIssue(path, None, "expected a JSON object mapping step -> {hash: generation}"))
    out: dict[str, dict[str, int]] = {}
    for step, members in raw.items():
        try:
            int(step)
        except ValueError:
            raise LoadError(LoadIssue(path, step, "step keys must be integers")) from None
        if not isinstance(members, dict):
            raise LoadError(LoadIssue(path, step, "expected a mapping of hash -> generation"))
        row: dict[str, int] = {}
        for key, gen in members.items():
            if isinstance(gen, bool) or not isinstance(gen, int | float) or gen != int(gen):
                raise LoadError(LoadIssue(path, f"{step}.{key}", "generation must be an integer"))
            row[str(key)] = int(gen)
        out[str(int(step))] = row
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _load_cluster(path: Path) -> ClusterInfo:
    try:
        raw = _read_json(path)
    except (OSError, ValueError) as exc:
        raise LoadError(LoadIssue(path, None, str(exc))) from None
    try:
        return ClusterInfo.model_validate(raw)
    except ValidationError as exc:
        raise LoadError(_issue_from_validation(path, exc)) from None


def load_seed_dir(
    path: Path, issues: list[LoadIssue], partial: PartialScores = DEFAULT_PARTIAL, edges: EdgeRules = DEFAULT_EDGES
) -> SeedData:
    match = SEED_DIR.match(path.name)
    seed = SeedData(seed_id=match.group(1) if match else path.name, path=path)
    for file in sorted(path.glob("*.json"), key=lambda p: p.name):
        try:
            if file.name == CLUSTER_INFO_FILE:
                seed.cluster_info = _load_cluster(file)
            elif file.name == POPULATION_FILE:
                seed.population_history = _load_population(file)
            else:
                seed.prompts.append(load_prompt_file(file, partial, edges))
        except LoadError as exc:
            issues.append(exc.issue)
    # Files without a step (rm-bias's default meta={}) come first, as step 0 would.
    seed.prompts.sort(key=lambda r: (r.step if r.step is not None else -1, r.hash))
    return seed


def load_run_dir(
    path: str | os.PathLike[str],
    runner: str | None = None,
    partial: PartialScores = DEFAULT_PARTIAL,
    edges: EdgeRules = DEFAULT_EDGES,
) -> RunData:
    """Load one run directory (its ``seed_*`` subdirectories)."""
    run_path = Path(path)
    if not run_path.is_dir():
        raise FileNotFoundError(f"{run_path}: not a directory")
    run = RunData(runner=runner or run_path.parent.name, name=run_path.name, path=run_path)
    seed_dirs = [p for p in run_path.iterdir() if p.is_dir() and SEED_DIR.match(p.name)]
    # Loading 1,000 prompt files creates ~200,000 objects that all stay alive: each
    # automatic collection walked them again (loading was ~6x slower).
    with collector_paused():
        for seed_path in sorted(seed_dirs, key=lambda p: _natural(p.name)):
            run.seeds.append(load_seed_dir(seed_path, run.issues, partial, edges))
        run.attribute_stats = load_final_stats(run_path, run.issues)
    return run


def load_final_stats_file(path: Path, seed_id: str | None = None) -> AttributeSeed:
    """One ``final_stats/seed_<i>.json``; raises :class:`LoadError` naming the file and the field."""
    if seed_id is None:
        match = SEED_FILE.match(path.name)
        seed_id = match.group(1) if match else path.stem
    try:
        records = parse_attribute_list(_read_json(path))
    except (OSError, ValueError) as exc:
        where = exc.field if isinstance(exc, AttributeStatsError) else None
        raise LoadError(LoadIssue(path, where, str(exc))) from None
    return AttributeSeed(seed_id, path, records)


def load_final_stats(run_path: Path, issues: list[LoadIssue]) -> list[AttributeSeed]:
    """Every readable ``final_stats/seed_<i>.json``; a bad one is an issue, the others load."""
    out: list[AttributeSeed] = []
    for seed_id, file in stats_files(run_path):
        try:
            out.append(load_final_stats_file(file, seed_id))
        except LoadError as exc:
            issues.append(exc.issue)
    return out


def _is_run_dir(path: Path) -> bool:
    return has_final_stats(path) or any(p.is_dir() and SEED_DIR.match(p.name) for p in path.iterdir())


def find_runs(data_dir: str | os.PathLike[str]) -> Iterator[tuple[str, Path]]:
    """(runner, run path) for every run under ``data_dir``.

    ``data_dir`` may be the ``data`` directory (holding evo/, bon_iter/, pair/, one_turn/),
    one runner directory, or a single run directory. rm-bias's current runners name their
    directory after their own type (``data/recall/``, ``data/exp_test_clusters/``, ...):
    under any other directory of ``data``, runs holding ``final_stats/`` are found too.
    """
    root = Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: not a directory")
    if _is_run_dir(root):
        yield root.parent.name, root
        return
    runner_dirs = [root / r for r in RUNNER_DIRS if (root / r).is_dir()]
    if not runner_dirs and root.name in RUNNER_DIRS:
        runner_dirs = [root]
    for runner_dir in runner_dirs:
        for run in sorted((p for p in runner_dir.iterdir() if p.is_dir()), key=lambda p: p.name):
            if _is_run_dir(run):
                yield runner_dir.name, run
    if root.name in RUNNER_DIRS:
        return
    others = sorted((p for p in root.iterdir() if p.is_dir() and p.name not in RUNNER_DIRS), key=lambda p: p.name)
    if not runner_dirs and any(has_final_stats(p) for p in others):
        # ``root`` is itself a runner directory of another name (``data/recall``)
        others = [root]
    for runner_dir in others:
        try:
            runs = sorted((p for p in runner_dir.iterdir() if p.is_dir()), key=lambda p: p.name)
        except OSError:
            # Any folder of ``data`` is looked into here, not only runner folders: one that
            # cannot be listed (``lost+found``) holds no run of ours.
            continue
        for run in runs:
            if has_final_stats(run):
                yield runner_dir.name, run


def load_data_dir(
    data_dir: str | os.PathLike[str], partial: PartialScores = DEFAULT_PARTIAL, edges: EdgeRules = DEFAULT_EDGES
) -> list[RunData]:
    return [load_run_dir(path, runner, partial, edges) for runner, path in find_runs(data_dir)]


def hash_matches(record: PromptRecord) -> bool:
    """Whether the file name is the md5 of its stripped system prompt (as the seed names files)."""
    return record.hash == hash_system_prompt(record.stats.system_prompt)
