"""Adapters that let an existing command be a target without a wrapper script.

GOV.UK Chat's generate step runs ``bundle exec rake evaluation:<task>`` in the Rails
app with the question in the ``INPUT`` environment variable, and reads back JSON whose
fields are the app's own (``{"jailbreak_guardrails_status": "fail", "metrics": {...}}``).
A command target accepts, next to ``command``:

- ``cwd``: where the command runs (``~`` expanded, relative to the suite's folder);
- ``input_env``: ``{ENV_VAR: case_field}``, e.g. ``{INPUT: question}``;
- ``output_map``: ``{field: expression}``: each field of the case's output computed from
  the command's JSON by a small expression (field names, dotted paths into objects,
  constants, ``== != < <= > >= in not in and or not``), e.g.
  ``actual_outcome: jailbreak_guardrails_status == "fail"``;
- ``output_hook``: ``"module:function"`` called as ``function(output, case)`` and
  returning the case's output, for anything an expression cannot say.

Expressions are parsed with :mod:`ast` and walked by hand: nothing is ``eval``-ed.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_evals.llm.settings import DEFAULT_MAX_BODY_BYTES
from pytest_evals.model.errors import SuiteConfigError, TargetError
from pytest_evals.targets.target_kinds import (
    CallableTarget,
    CommandTarget,
    ModelTarget,
    Target,
    import_object,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

    from pytest_evals.llm.client import LLMClient
    from pytest_evals.suites.suite_config import Suite

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

#: The keys a command target spec may carry for these adapters.
ADAPTER_KEYS = ("cwd", "input_env", "output_map", "output_hook")


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


class OutputExpression:
    """One ``output_map`` expression, checked when the suite loads."""

    def __init__(self, field: str, text: str) -> None:
        self.field, self.text = field, text
        try:
            self.tree = ast.parse(text, mode="eval").body
        except SyntaxError as exc:
            raise SuiteConfigError(f"target.output_map.{field}: cannot parse {text!r}: {exc.msg}") from None
        self._check(self.tree)

    def _check(self, node: ast.AST) -> None:
        allowed = (ast.Name, ast.Attribute, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp,
                   ast.Subscript, ast.List, ast.Tuple, ast.Load, ast.And, ast.Or, ast.Not, *_COMPARE)
        for child in ast.walk(node):
            if not isinstance(child, allowed):
                raise SuiteConfigError(
                    f"target.output_map.{self.field}: {type(child).__name__} is not allowed in {self.text!r} "
                    "(use field names, constants, comparisons, and/or/not; or an output_hook)"
                )

    def __call__(self, output: Any) -> Any:
        return self._eval(self.tree, output)

    def _eval(self, node: ast.AST, output: Any) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return output.get(node.id, MISSING) if isinstance(output, Mapping) else MISSING
        if isinstance(node, ast.Attribute):
            base = self._eval(node.value, output)
            return base.get(node.attr, MISSING) if isinstance(base, Mapping) else MISSING
        if isinstance(node, ast.Subscript):
            base, key = self._eval(node.value, output), self._eval(node.slice, output)
            try:
                return base[key]
            except (KeyError, IndexError, TypeError):
                return MISSING
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self._eval(e, output) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self._eval(node.operand, output)
        if isinstance(node, ast.BoolOp):
            values = (self._eval(v, output) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, output)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self._eval(right_node, output)
                if left is MISSING or right is MISSING:
                    raise KeyError(self.text)
                try:
                    if not _COMPARE[type(op)](left, right):
                        return False
                except TypeError as exc:
                    raise TargetError(f"output_map.{self.field}: {self.text!r}: {exc}") from None
                left = right
            return True
        raise TargetError(f"output_map.{self.field}: cannot evaluate {self.text!r}")  # pragma: no cover


class MappedCommandTarget(CommandTarget):
    """A command target with per-case environment variables and a mapped output."""

    def __init__(self, spec: dict[str, Any], cwd: str, *, max_output: int = DEFAULT_MAX_BODY_BYTES) -> None:
        super().__init__(spec, cwd, max_output=max_output)
        self.input_env = {str(k): str(v) for k, v in (spec.get("input_env") or {}).items()}
        raw_map = spec.get("output_map") or {}
        if not isinstance(raw_map, Mapping):
            raise SuiteConfigError("target.output_map must map output fields to expressions")
        self.output_map = {str(k): OutputExpression(str(k), str(v)) for k, v in raw_map.items()}
        hook = spec.get("output_hook")
        self.output_hook: Callable[[Any, dict[str, Any]], Any] | None = (
            import_object(str(hook), cwd, what="target.output_hook") if hook else None
        )

    async def run(self, case: dict[str, Any], extra_env: dict[str, str] | None = None) -> Any:
        per_case = dict(extra_env or {})
        for var, field in self.input_env.items():
            if field not in case or case[field] is None:
                raise TargetError(f"{self.description}: input_env {var}: the case has no field {field!r}")
            per_case[var] = str(case[field])
        # Passed down, never stored on self: several cases are in flight on the loop.
        output = await super().run(case, per_case)
        return self.map_output(output, case)

    def map_output(self, output: Any, case: dict[str, Any]) -> Any:
        if self.output_hook is not None:
            try:
                output = self.output_hook(output, case)
            except Exception as exc:
                raise TargetError(f"{self.description}: output_hook raised {type(exc).__name__}: {exc}") from exc
        if not self.output_map:
            return output
        mapped: dict[str, Any] = dict(output) if isinstance(output, Mapping) else {}
        for field, expr in self.output_map.items():
            try:
                mapped[field] = expr(output)
            except KeyError:
                keys = sorted(output) if isinstance(output, Mapping) else type(output).__name__
                raise TargetError(
                    f"{self.description}: output_map.{field}: {expr.text!r} names a field the output "
                    f"does not have (output keys: {keys})"
                ) from None
            if mapped[field] is MISSING:
                raise TargetError(f"{self.description}: output_map.{field}: {expr.text!r} found nothing in the output")
        return mapped


def command_target(spec: dict[str, Any], suite_dir: str, *, max_output: int = DEFAULT_MAX_BODY_BYTES) -> CommandTarget:
    """The command target for ``spec``, with the adapters when it uses any."""
    if not any(k in spec for k in ADAPTER_KEYS):
        return CommandTarget(spec, suite_dir, max_output=max_output)
    cwd = suite_dir
    if spec.get("cwd"):
        path = Path(str(spec["cwd"])).expanduser()
        cwd = str(path if path.is_absolute() else Path(suite_dir) / path)
        if not Path(cwd).is_dir():
            raise SuiteConfigError(f"target.cwd {spec['cwd']!r}: no such folder ({cwd})")
    return MappedCommandTarget(spec, cwd, max_output=max_output)


def output_cap(config: pytest.Config) -> int:
    """The most a command target may print on stdout: ini ``evals_max_response_bytes``,
    the cap of a model's response body (an invalid value is reported by the LLM settings)."""
    try:
        value = int(str(config.getini("evals_max_response_bytes") or "").strip() or DEFAULT_MAX_BODY_BYTES)
    except ValueError:
        return DEFAULT_MAX_BODY_BYTES
    return value if value > 0 else DEFAULT_MAX_BODY_BYTES


def make_target(suite: Suite, config: pytest.Config, client: Callable[[], LLMClient]) -> Target:
    """The suite's target: a plugin's (``pytest_evals_make_target``), else built from
    the suite's ``target`` field (callable, command with its adapters, or model)."""
    spec = suite.config.target
    hook_target = config.hook.pytest_evals_make_target(config=config, suite=suite, spec=spec)
    if hook_target is not None:
        return hook_target
    if spec is None:
        raise SuiteConfigError(
            f"{suite.path}: generate: true needs a 'target' (\"module:function\", "
            "{command: [...]} or {model: ...})"
        )
    search_dir = str(suite.path.parent)
    if isinstance(spec, str):
        return CallableTarget(import_object(spec, search_dir), spec)
    if "callable" in spec:
        return CallableTarget(import_object(str(spec["callable"]), search_dir), str(spec["callable"]))
    if "command" in spec:
        # cwd, input_env, output_map, output_hook (GOV.UK's rake tasks as targets)
        return command_target(spec, search_dir, max_output=output_cap(config))
    if "model" in spec:
        return ModelTarget(spec, client)
    raise SuiteConfigError(
        f"{suite.path}: field 'target': expected a string or a mapping with 'callable', "
        f"'command' or 'model', got keys {sorted(spec)}"
    )

