"""The project's hooks follow pytest's contract: every hookspec decorated and fully typed.

Inspects :mod:`pytest_evals.hookspecs` itself, so a hook added later without
``@pytest.hookspec`` or with an untyped argument fails here, and checks that pytest
knows every spec once the plugin is loaded.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Sequence
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest

from pytest_evals import hookspecs
from pytest_evals.controller.run_report import RunReport
from pytest_evals.controller.suite_verdict import SuiteSummary
from pytest_evals.model.case_result import CaseResult
from pytest_evals.suites.suite_config import Suite
from pytest_evals.tasks.task_contract import Task

#: Hooks whose first non-None answer is the answer (the others notify every plugin).
FIRSTRESULT = {"pytest_evals_make_target"}


def specs() -> dict[str, FunctionType]:
    return {
        name: obj
        for name, obj in vars(hookspecs).items()
        if isinstance(obj, FunctionType) and obj.__module__ == hookspecs.__name__
    }


def test_the_module_defines_only_prefixed_hooks() -> None:
    names = set(specs())
    assert names >= {"pytest_evals_write_outputs", "pytest_evals_case_result", "pytest_evals_make_target"}
    assert all(name.startswith("pytest_evals_") for name in names), names


@pytest.mark.parametrize("name", sorted(specs()))
def test_each_hookspec_is_decorated_as_meant(name: str) -> None:
    options = getattr(specs()[name], "pytest_spec", None)
    assert options is not None, f"{name} lacks @pytest.hookspec"
    assert bool(options.get("firstresult")) == (name in FIRSTRESULT), f"{name}: firstresult={options.get('firstresult')}"
    assert not options.get("historic"), f"{name} is historic: its callers would need call_historic"


@pytest.mark.parametrize("name", sorted(specs()))
def test_each_hookspec_is_fully_typed_with_resolvable_types(name: str) -> None:
    func = specs()[name]
    signature = inspect.signature(func)
    untyped = [p.name for p in signature.parameters.values() if p.annotation is inspect.Parameter.empty]
    assert not untyped, f"{name}: untyped arguments {untyped}"
    assert signature.return_annotation is not inspect.Signature.empty, f"{name}: no return annotation"
    # The names imported only for type checkers must resolve to real types.
    namespace: dict[str, Any] = {
        **vars(hookspecs), "RunReport": RunReport, "CaseResult": CaseResult, "Suite": Suite,
        "SuiteSummary": SuiteSummary, "Task": Task, "Sequence": Sequence, "Path": Path,
    }
    hints = typing.get_type_hints(func, globalns=namespace)
    assert set(hints) == {*signature.parameters, "return"}
    assert func.__doc__ and func.__doc__.strip(), f"{name}: no docstring (the hook's contract)"


def test_pytest_knows_every_spec_and_the_project_implements_them_within_it(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    for name, func in specs().items():
        caller = getattr(config.hook, name)
        assert caller.spec is not None, name
        spec_args = set(inspect.signature(func).parameters)
        for impl in caller.get_hookimpls():
            # pluggy checks this when a spec exists at registration; an optionalhook
            # registered before the spec would slip through, so check every one here.
            assert set(impl.argnames) <= spec_args, f"{impl.plugin_name}.{name} takes {impl.argnames}"
