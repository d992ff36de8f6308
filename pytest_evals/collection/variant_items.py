"""A suite with variants: one task per variant, every case collected once per variant.

The suite's cases are read once (the suite without its variants); each variant is the
suite's configuration with the variant's overrides (:mod:`pytest_evals.suites.variant_config`),
validated by the task's own model and built into a task of its own. Item ``case[name]``
is the case evaluated by variant ``name``'s task: the worker, the cache and the
prefetcher see an ordinary case of an ordinary task, so the variants share the one
client and its concurrency. Items are case-major (``c1[a]``, ``c1[b]``, ``c2[a]``...):
a run stopped early (``-x``) or a ``-k`` on a case keeps the pairs whole.

A case's result is that variant's result (its ``case_id`` ends with ``[name]``), which
is how baselines pair by case and variant; :func:`split_case_id` reads it back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_evals.model.errors import SuiteConfigError
from pytest_evals.tasks.task_contract import Task

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_evals.model.case_ref import CaseRef
    from pytest_evals.model.case_result import CaseResult
    from pytest_evals.model.metric_value import MetricTree
    from pytest_evals.suites.suite_config import Override, Suite
    from pytest_evals.suites.variant_config import VariantsConfig, VariantSpec

CLI_VARIANTS_KEY = pytest.StashKey["list[VariantSpec]"]()
#: Set when this process collected a suite with variants (its end of run compares them).
HAS_VARIANTS_KEY = pytest.StashKey[bool]()


def cli_variants(config: pytest.Config) -> list[VariantSpec]:
    """The variants the command line adds to every suite: ``--evals-variant`` options,
    then one per model of ``--evals-model a,b`` (read once per process)."""
    cached = config.stash.get(CLI_VARIANTS_KEY, None)
    if cached is not None:
        return cached
    texts = config.getoption("evals_variant", None) or []
    models = config.stash.get(MODEL_LIST_KEY, None) or []
    if not texts and not models:
        config.stash[CLI_VARIANTS_KEY] = []
        return []
    from pytest_evals.suites.variant_config import (
        VariantSpec,
        merge_cli_variants,
        model_variant_name,
        parse_cli_variant,
    )

    names: dict[str, str] = {}
    for m in models:
        other = names.setdefault(model_variant_name(m), m)
        if other != m:
            raise pytest.UsageError(
                f"--evals-model: {other!r} and {m!r} both become variant {model_variant_name(m)!r}; "
                f"name them apart with --evals-variant NAME:model=MODEL"
            )
    specs = [VariantSpec(name=model_variant_name(m), model=m) for m in models]
    try:
        specs += [parse_cli_variant(t) for t in texts]
        merged = merge_cli_variants(specs)
    except SuiteConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[CLI_VARIANTS_KEY] = merged
    return merged


#: The models of ``--evals-model a,b`` (set at configure; the session model is the first).
MODEL_LIST_KEY = pytest.StashKey["list[str]"]()


def split_model_option(config: pytest.Config) -> None:
    """``--evals-model a,b`` is a variant per model; the session's default model is ``a``."""
    value = config.getoption("evals_model", None)
    if not isinstance(value, str) or "," not in value:
        return
    models = list(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    if not models:
        raise pytest.UsageError(f"--evals-model {value!r}: no model named")
    config.stash[MODEL_LIST_KEY] = models
    config.option.evals_model = models[0]


@dataclass
class Variant:
    name: str
    suite: Suite
    task: Task[Any]
    spec: VariantSpec


def split_case_id(case_id: str, names: set[str] | frozenset[str]) -> tuple[str, str | None]:
    """(case id, variant) of a variant item's id ``case[name]``; (id, None) otherwise."""
    if case_id.endswith("]"):
        head, sep, tail = case_id[:-1].rpartition("[")
        if sep and tail in names:
            return head, tail
    return case_id, None


class VariantTask(Task[Any]):
    """The suite as a whole: its cases (read once) times its variants' tasks."""

    def __init__(self, suite: Suite, base: Task[Any], variants: list[Variant], spec: VariantsConfig) -> None:
        super().__init__(suite)
        self.base = base
        self.variants = variants
        self.spec = spec
        self.name = base.name  # type: ignore[misc]
        self.by_name = {v.name: v for v in variants}
        #: For membership tests only; :attr:`order` is the variants' order.
        self.names = frozenset(self.by_name)
        self.order = [v.name for v in variants]
        self._refs: list[CaseRef] | None = None

    @property
    def reference(self) -> str:
        return self.spec.reference_name

    # -- collection -------------------------------------------------------------------
    def base_refs(self) -> list[CaseRef]:
        """The suite's cases (ids made unique), read once for every variant and check."""
        if self._refs is None:
            from pytest_evals.collection.case_ids import unique_refs

            self._refs = list(unique_refs(self.base.case_refs()))
        return self._refs

    def variant_refs(self) -> Iterator[tuple[CaseRef, Variant]]:
        """Every (case, variant) pair, case-major; ids made unique once, then suffixed."""
        for ref in self.base_refs():
            for v in self.variants:
                yield dataclasses.replace(ref, case_id=f"{ref.case_id}[{v.name}]", meta=dict(ref.meta)), v

    def case_refs(self) -> Iterator[CaseRef]:
        for ref, _v in self.variant_refs():
            yield ref

    def needs_engine(self) -> bool:
        return any(v.task.needs_engine() for v in self.variants)

    def named_metrics(self) -> Iterator[tuple[str, str, Task[Any]]]:
        """(field, metric, task) for every metric the suite's variant fields name: each gate's
        metric in the tasks of both its variants, each of ``compare_metrics`` in the reference's."""
        for v in self.variants:
            for kind, gates in (("better_than", v.spec.better_than), ("no_worse_than", v.spec.no_worse_than)):
                for i, g in enumerate(gates):
                    where = f"variants.{v.name}.{kind}" + (f"[{i}]" if len(gates) > 1 else "") + ".metric"
                    yield where, g.metric, self.by_name[g.variant].task
                    yield where, g.metric, v.task
        ref = self.by_name[self.reference].task
        for metric in self.spec.compare_metrics or []:
            yield "compare_metrics", metric, ref

    # -- controller -------------------------------------------------------------------
    def variant_of(self, result: CaseResult) -> str | None:
        return split_case_id(result.case_id, self.names)[1]

    def aggregate(self, results: list[CaseResult]) -> tuple[MetricTree, dict[str, Any]]:
        metrics: MetricTree = {}
        tables: dict[str, Any] = {}
        for v in self.variants:
            mine = [r for r in results if self.variant_of(r) == v.name]
            metrics[v.name], t = v.task.aggregate(mine)
            if t:
                tables[v.name] = t
        return metrics, tables

    def run_settings(self) -> dict[str, Any]:
        return {"variants": {v.name: v.task.run_settings() for v in self.variants}}


def is_variant_task(task: Any) -> bool:
    return isinstance(task, VariantTask)


def read_raw(path: Path) -> dict[str, Any]:
    """The suite file's fields (a file that is a suite by its name: its family's)."""
    from pytest_evals.registry.family_registry import implicit_suite
    from pytest_evals.suites.suite_config import read_yaml

    raw = implicit_suite(path)
    return dict(raw) if raw is not None else read_yaml(path)


def load_with_variants(
    config: pytest.Config, path: Path, nodeid: str, overrides: list[Override], used: set[int] | None,
) -> tuple[Suite, Task[Any]] | None:
    """The suite and its :class:`VariantTask` when it has variants (its own or the command
    line's that apply to it); None for a suite without (loaded as before)."""
    from pytest_evals.collection.variant_outputs import recording_class
    from pytest_evals.suites.suite_config import load_suite
    from pytest_evals.suites.variant_config import (
        applicable,
        split_variants,
        variant_raw,
        with_cli_variants,
    )
    from pytest_evals.targets.target_kinds import command_limit_problems
    from pytest_evals.tasks import TASK_CATALOG, get_task_class

    raw = read_raw(path)
    base_raw, spec = split_variants(raw, str(path))
    cli = cli_variants(config)
    if spec is None and not cli:
        return None
    base = load_suite(path, nodeid, overrides, base_raw, used, rootdir=config.rootpath, catalog=TASK_CATALOG)
    task_cls = get_task_class(base.config.task)
    fields = list(type(base.config).model_fields)
    if cli and spec is None and any(applicable(base_raw, v, fields) for v in cli):
        # The command line's variants do not fit this suite (e.g. a model for a suite
        # scoring saved outputs): it runs as it would without them.
        return None
    spec = with_cli_variants(spec, cli, str(path))
    assert spec is not None
    variants: list[Variant] = []
    for v in spec.variants:
        v_raw = variant_raw(base_raw, v, fields, str(path))
        if not spec.per_variant and v.name != spec.reference_name and "thresholds" not in v.set:
            v_raw["thresholds"] = {}
        suite = load_suite(path, nodeid, overrides, v_raw, None, rootdir=config.rootpath, catalog=TASK_CATALOG)
        problems = command_limit_problems(suite.config.target)
        if problems:
            raise SuiteConfigError("\n".join([f"{path}: variant {v.name!r}: invalid configuration",
                                              *(f"  {p}" for p in problems)]))
        suite.variant = v.name
        # The variant's task records what it produced for each case (variant_outputs.py).
        variants.append(Variant(v.name, suite, recording_class(task_cls)(suite), v))
    task = VariantTask(base, task_cls(base), variants, spec)
    config.stash[HAS_VARIANTS_KEY] = True
    if spec.compare_metrics or any(v.better_than or v.no_worse_than for v in spec.variants):
        from pytest_evals.collection.variant_gate_metrics import check_variant_metrics

        check_variant_metrics(config, path, task.named_metrics(), task.base_refs)
    return base, task


def variant_items(task: Any) -> Iterator[tuple[int, CaseRef, Task[Any]]]:
    """(case position, variant ref, variant task) for each item of a variant suite; the
    position is the case's own, as in a run of that variant alone."""
    assert isinstance(task, VariantTask)
    position = -1
    last: str | None = None
    for ref, v in task.variant_refs():
        base = split_case_id(ref.case_id, task.names)[0]
        if base != last:
            position, last = position + 1, base
        yield position, ref, v.task
