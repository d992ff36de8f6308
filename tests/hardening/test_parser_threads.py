"""ast.parse from two threads at once (python/cpython#106905), and our modules kept out of
pytest's assertion rewriting (hardening/parser_threads.py)."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from _pytest.assertion.rewrite import AssertionRewritingHook

import pytest_evals.stats
from pytest_evals.hardening import parser_threads

needs_guard = pytest.mark.skipif(sys.version_info >= (3, 13), reason="the AST builder is per call from 3.13 on")


@needs_guard
def test_ast_parse_waits_while_another_thread_builds_a_tree() -> None:
    parser_threads.serialise_ast_parse()
    done = threading.Event()

    def parse() -> None:
        ast.parse("x = 1")
        done.set()

    with parser_threads._LOCK:  # as if this thread were inside ast.parse
        thread = threading.Thread(target=parse)
        thread.start()
        time.sleep(0.2)
        assert not done.is_set()
    thread.join(5)
    assert done.is_set()


@needs_guard
def test_two_threads_parsing_with_finalisers_running_never_fail() -> None:
    # Finalisers run by the garbage collector in the middle of building a tree are what
    # switch threads there; unguarded, this script fails within a second on 3.11.
    script = textwrap.dedent(
        """
        import argparse, ast, inspect, sys, threading
        from pytest_evals.hardening.parser_threads import serialise_ast_parse
        serialise_ast_parse()
        source = inspect.getsource(argparse)
        sys.setswitchinterval(1e-6)
        errors = []
        class Cycle:
            def __del__(self):
                sum(range(50))
        def work():
            for _ in range(40):
                for _ in range(200):
                    a, b = Cycle(), Cycle()
                    a.other, b.other = b, a
                try:
                    ast.parse(source)
                except SystemError as exc:
                    errors.append(str(exc))
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads: t.start()
        for t in threads: t.join()
        print("errors", len(errors))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "errors 0", out.stdout + out.stderr


@needs_guard
def test_a_finaliser_that_parses_during_a_parse_never_fails() -> None:
    # The single-thread form: the collector runs a finaliser in the middle of building a
    # tree and the finaliser parses (pytest's hook formatting an "Exception ignored"
    # traceback does). Unguarded, 15 of these 20 parses fail on 3.11.
    script = textwrap.dedent(
        """
        import argparse, ast, inspect
        from pytest_evals.hardening.parser_threads import serialise_ast_parse
        serialise_ast_parse()
        source = inspect.getsource(argparse)
        errors = []
        class Cycle:
            def __del__(self):
                try:
                    ast.parse("x = [1, 2]\\n" * 5)
                except SystemError as exc:
                    errors.append(str(exc))
        for _ in range(20):
            for _ in range(300):
                a, b = Cycle(), Cycle()
                a.other, b.other = b, a
            del a, b
            try:
                ast.parse(source)
            except SystemError as exc:
                errors.append(str(exc))
        print("errors", len(errors))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "errors 0", out.stdout + out.stderr


def test_the_collector_is_running_again_after_a_parse() -> None:
    parser_threads.serialise_ast_parse()
    assert gc.isenabled()
    ast.parse("x = 1")
    assert gc.isenabled()
    gc.disable()
    try:
        ast.parse("x = 1")
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()


def test_wrapping_is_done_once() -> None:
    parser_threads.serialise_ast_parse()
    first = ast.parse
    parser_threads.serialise_ast_parse()
    assert ast.parse is first


@pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")
def test_our_package_is_not_rewritten_once_unmarked(pytestconfig: pytest.Config) -> None:
    # As pytest marks an installed plugin's whole distribution (a wheel install of ours).
    hook = AssertionRewritingHook(pytestconfig)
    hook.mark_rewrite("pytest_evals")
    package = list(pytest_evals.stats.__path__)
    assert hook.find_spec("pytest_evals.stats.beta_quantile", package) is not None
    parser_threads.keep_out_of_rewriting(hook)
    assert hook.find_spec("pytest_evals.stats.intervals", package) is None
    # other packages keep their marks
    hook.mark_rewrite("some_other_plugin")
    parser_threads.keep_out_of_rewriting(hook)
    assert "some_other_plugin" in hook._must_rewrite


def test_no_plugin_module_of_ours_is_rewritten_in_a_run(pytester: pytest.Pytester) -> None:
    # pytest's import_plugin marks each plugin it imports: the core's and the families'
    # plugins were parsed and rewritten in every process (never cached where bytecode is
    # not written). Only plugin.py, which pytest itself imports, may be.
    pytester.makepyfile(
        """
        import sys
        from _pytest.assertion.rewrite import AssertionRewritingHook

        def test_loaders():
            ours = sorted(
                name for name, module in list(sys.modules.items())
                if name.startswith("pytest_evals.")
                and isinstance(getattr(module, "__loader__", None), AssertionRewritingHook)
            )
            assert "pytest_evals.llm.llm_plugin" in sys.modules
            assert "pytest_evals.families.harpia.plugin" in sys.modules
            assert set(ours) <= {"pytest_evals.plugin"}, ours
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
