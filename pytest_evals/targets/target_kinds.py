"""The system under test for ``generate: true`` suites.

A target receives the case as a dict and returns what the system produced. Three kinds,
as GOV.UK's pipeline has them: a Python callable (``"package.module:function"``), a
command that reads the case as JSON on stdin and prints JSON on stdout, or an
OpenAI-compatible model (through the session's LLM client, so it is cached).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_evals.hardening.code_escapes import describe_escape, is_code_escape
from pytest_evals.llm.settings import DEFAULT_MAX_BODY_BYTES
from pytest_evals.model.errors import SuiteConfigError, TargetError

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_evals.llm.client import LLMClient

#: Environment variable naming a file that also holds the case (for commands that do
#: not read stdin). The case itself never goes into the environment: the kernel caps
#: one variable at 128 KiB (E2BIG), and environments leak into process listings.
CASE_FILE_ENV = "EVALS_CASE_FILE"


class Target(Protocol):
    description: str

    async def run(self, case: dict[str, Any]) -> Any: ...


def import_object(spec: str, search_dir: str | None = None, what: str = "target") -> Any:
    """Import ``"package.module:attr"``; the suite's folder is importable too."""
    from pytest_evals.registry.dotted_names import ResolveError, resolve_name

    if search_dir and search_dir not in sys.path:
        sys.path.insert(0, search_dir)
    try:
        return resolve_name(spec, what, importer=lambda name: _import_near(name, search_dir))
    except ResolveError as exc:
        raise SuiteConfigError(str(exc)) from exc


def _import_near(module_name: str, search_dir: str | None) -> Any:
    """Import a target module, preferring the file beside the suite.

    Two suites in different folders may both name ``t:f``; Python keeps one module per
    name, so the second suite would silently run the first one's target. When the name
    is taken by a module from elsewhere, the suite's own file is loaded under a name
    unique to its path.
    """
    local = None
    if search_dir:
        base = Path(search_dir, *module_name.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                local = candidate.resolve()
                break
    loaded = sys.modules.get(module_name)
    if local is None or loaded is None:
        return importlib.import_module(module_name)
    loaded_file = getattr(loaded, "__file__", None)
    if loaded_file and Path(loaded_file).resolve() == local:
        return loaded
    unique = f"_pytest_evals_target_{hashlib.sha1(str(local).encode()).hexdigest()[:12]}"
    if unique in sys.modules:
        return sys.modules[unique]
    spec = importlib.util.spec_from_file_location(unique, local)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {local}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    spec.loader.exec_module(module)
    return module


class CallableTarget:
    def __init__(self, func: Callable[..., Any], description: str) -> None:
        self.func = func
        self.description = description
        self._is_async = inspect.iscoroutinefunction(func)

    async def run(self, case: dict[str, Any]) -> Any:
        try:
            if self._is_async:
                return await self.func(case)
            # Sync user code may block (HTTP, subprocess): keep it off the event loop,
            # on threads that do not keep pytest alive when it hangs. (Imported here:
            # every suite's loading imports this module, few suites run a target.)
            from pytest_evals.targets.daemon_threads import THREADS

            return await asyncio.wrap_future(THREADS.submit(self.func, case))
        except Exception as exc:
            from pytest_evals.registry.missing_extras import install_hint

            hint = install_hint(exc)  # the example targets use the extras' libraries too
            if hint is not None:
                raise TargetError(f"target {self.description}: {hint}") from exc
            raise TargetError(f"target {self.description} raised {type(exc).__name__}: {exc}") from exc
        except BaseException as exc:
            # SystemExit from a click/argparse main(), KeyboardInterrupt, a BaseException
            # of its own: the case's error, not the end of the engine loop or of pytest.
            if not is_code_escape(exc):
                raise
            raise TargetError(f"target {self.description} raised {describe_escape(exc)}") from None


class CommandTarget:
    def __init__(self, spec: dict[str, Any], cwd: str, *, max_output: int = DEFAULT_MAX_BODY_BYTES) -> None:
        command = spec["command"]
        self.argv: list[str] = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        if not self.argv:
            raise SuiteConfigError("target.command is empty")
        problems = command_limit_problems(spec)
        if problems:
            raise SuiteConfigError("; ".join(problems))
        self.timeout = float(spec.get("timeout", DEFAULT_COMMAND_TIMEOUT))
        self.env = {str(k): str(v) for k, v in (spec.get("env") or {}).items()}
        self.cwd = cwd
        #: stdout beyond this ends the case as an error (a model's response body has the same cap).
        self.max_output = max_output
        # GOV.UK runs their generate commands five at a time.
        self._limit = asyncio.Semaphore(int(spec.get("concurrency", DEFAULT_COMMAND_CONCURRENCY)))
        self.description = f"command {shlex.join(self.argv)!r}"

    async def run(self, case: dict[str, Any], extra_env: dict[str, str] | None = None) -> Any:
        # ASCII JSON: any text (lone surrogates included) encodes, and commands that
        # decode stdin in another charset still read it.
        payload = json.dumps(case, ensure_ascii=True).encode("ascii")
        # This case's variables, fixed before the first await: other cases run meanwhile.
        variables = {**self.env, **(extra_env or {})}
        async with self._limit:
            with tempfile.TemporaryDirectory(prefix="evals-case-") as folder:
                case_file = Path(folder, "case.json")
                # A private folder (0700) and file: the case may hold personal data.
                case_file.write_bytes(payload)
                env = {**os.environ, **variables, CASE_FILE_ENV: str(case_file)}
                env.pop("EVALS_CASE_JSON", None)
                return await self._run(payload, env)

    async def _run(self, payload: bytes, env: dict[str, str]) -> Any:
        from pytest_evals.targets.command_process import CommandTimeout, OutputTooLarge, run_command

        try:
            done = await run_command(
                self.argv, payload, cwd=self.cwd, env=env, timeout=self.timeout, max_output=self.max_output
            )
        except OSError as exc:
            raise TargetError(f"{self.description} could not start: {exc}") from exc
        except CommandTimeout:
            raise TargetError(
                f"{self.description} timed out after {self.timeout:g} s (it and the processes it started were killed)"
            ) from None
        except OutputTooLarge as exc:
            raise TargetError(
                f"{self.description} {exc} (the limit is evals_max_response_bytes); it was stopped"
            ) from None
        if done.status != 0:
            tail = done.stderr_tail.decode(errors="replace").strip()[-500:]
            raise TargetError(f"{self.description} exited with status {done.status}: {tail}")
        text = done.stdout.decode(errors="replace").strip()
        try:
            return json.loads(text)
        except ValueError:
            raise TargetError(f"{self.description} did not print JSON; stdout began: {text[:200]!r}") from None
        except RecursionError:
            raise TargetError(f"{self.description} printed JSON nested too deeply") from None


#: Seconds a command target may run per case, and how many run at once, unless the
#: suite's ``target`` says otherwise.
DEFAULT_COMMAND_TIMEOUT = 120.0
DEFAULT_COMMAND_CONCURRENCY = 5


def command_limit_problems(spec: Any) -> list[str]:
    """What is wrong with a command target's ``timeout`` (seconds above 0) and
    ``concurrency`` (a whole number >= 1). Checked when the suite loads: a bad value is
    the suite's ERROR naming the field, not an exception in every case (nor every case
    waiting for a slot that never frees, with ``concurrency: 0``)."""
    if not isinstance(spec, Mapping) or "command" not in spec:
        return []
    problems = []
    timeout = spec.get("timeout", DEFAULT_COMMAND_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        problems.append(f"field 'target.timeout': expected a number of seconds above 0, got {timeout!r}")
    concurrency = spec.get("concurrency", DEFAULT_COMMAND_CONCURRENCY)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        problems.append(f"field 'target.concurrency': expected a whole number of 1 or more, got {concurrency!r}")
    return problems


class ModelTarget:
    """An OpenAI-compatible chat model; returns ``{"text": reply}``."""

    def __init__(self, spec: dict[str, Any], client: Callable[[], LLMClient]) -> None:
        self.spec = spec
        # The session's client, asked for when the first case runs: a suite that never
        # generates never builds one.
        self._client = client
        self.description = f"model {spec.get('model') or '(session default)'}"

    async def run(self, case: dict[str, Any]) -> Any:
        messages: list[dict[str, str]] = []
        if self.spec.get("system_prompt"):
            messages.append({"role": "system", "content": str(self.spec["system_prompt"])})
        template = self.spec.get("prompt_template")
        if template:
            # "Answer yes or no: {question}": the case's fields by name.
            try:
                content = str(template).format_map(case)
            except (KeyError, IndexError, ValueError, AttributeError) as exc:
                raise TargetError(f"{self.description}: prompt_template cannot be filled from the case: "
                                  f"{type(exc).__name__}: {exc}") from None
            messages.append({"role": "user", "content": content})
        else:
            prompt_field = str(self.spec.get("input_field", "question"))
            if prompt_field not in case:
                raise TargetError(f"{self.description}: the case has no field {prompt_field!r} to send")
            messages.append({"role": "user", "content": str(case[prompt_field])})
        resp = await self._client().chat(
            messages,
            model=self.spec.get("model"),
            temperature=self.spec.get("temperature"),
            max_tokens=self.spec.get("max_tokens"),
            namespace="targets",
        )
        return {"text": resp.text}
