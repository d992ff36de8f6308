"""A suite that needs an extra which is not installed says which extra to install.

The default install is the core and the classification tasks. The libraries of the
extras are hidden here the way a fresh ``pip install pytest-evals`` lacks them
(``sys.modules[name] = None`` makes every import of it fail with ModuleNotFoundError),
in a subprocess, on the controller and on xdist workers alike.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pytest

from pytest_evals.cli import main as cli
from pytest_evals.registry.missing_extras import describe, install_hint

REPO = Path(__file__).resolve().parents[2]


def hide(pytester: pytest.Pytester, *modules: str) -> None:
    lines = ["import sys", *(f"sys.modules[{m!r}] = None" for m in modules)]
    pytester.makeconftest("\n".join(lines) + "\n")


def test_the_hint_names_the_extra_of_a_known_library_only() -> None:
    hint = install_hint(ModuleNotFoundError("No module named 'nltk.translate'", name="nltk.translate"))
    assert hint == "'nltk' is not installed; it comes with the 'harpia' extra: pip install \"pytest-evals[harpia]\" (in a checkout: pip install -e \".[harpia]\")"
    assert install_hint(ModuleNotFoundError("No module named 'left_pad'", name="left_pad")) is None
    assert install_hint(ValueError("nltk")) is None
    assert describe(KeyError("x")) == "KeyError: 'x'"
    assert "'reports' extra" in describe(ImportError("no", name="matplotlib"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_rag_answers_without_the_rag_extra_errors_naming_it(pytester: pytest.Pytester, workers: list[str]) -> None:
    hide(pytester, "inscriptis")
    shutil.copy(REPO / "eval_suites" / "rag_answers.eval.yaml", pytester.path / "rag.eval.yaml")
    (pytester.path / "data").mkdir()
    shutil.copy(REPO / "eval_suites" / "data" / "rag_answers.jsonl", pytester.path / "data" / "rag_answers.jsonl")
    result = pytester.runpytest_subprocess(*workers, "-p", "no:cacheprovider", "--evals-json", "s.json")
    [suite] = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["suites"]
    assert suite["cases"]["errors"] == suite["cases"]["total"] > 0
    assert suite["cases"]["errors_by_kind"] == {"infrastructure": suite["cases"]["total"]}
    result.stdout.fnmatch_lines([
        "*[[]infrastructure error[]] HTML contexts: 'inscriptis' is not installed; it comes with the 'rag' extra: pip install \"pytest-evals[[]rag[]]\"*"
    ])
    assert "Traceback" not in result.stdout.str() and "flatten.py" not in result.stdout.str()


def test_harpia_metrics_without_the_harpia_extra_name_it(pytester: pytest.Pytester) -> None:
    hide(pytester, "nltk", "sacrebleu", "rouge_score")
    doc = {
        "instances": [{"id": "a", "expected-output": ["The cat sleeps."], "actual-output": "The cat sleeps."}],
        "metrics": [{"id": "bleu"}, {"id": "rouge", "parameters": {"rouge_types": ["rougeL"]}}],
    }
    (pytester.path / "t.harpia.json").write_text(json.dumps(doc), encoding="utf-8")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*metric 'bleu': 'nltk' is not installed; it comes with the 'harpia' extra*",
        "*aggregation failed: * is not installed; it comes with the 'harpia' extra*",
    ])
    assert "ModuleNotFoundError" not in result.stdout.str()


def test_a_subcommand_of_a_missing_extra_says_which(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def needs_plots(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    def parser(only: str | None = None) -> argparse.ArgumentParser:
        p = argparse.ArgumentParser(prog="pytest-evals")
        sub = p.add_subparsers(dest="command")
        sub.add_parser("plot").set_defaults(func=needs_plots)
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main(["plot"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "pytest-evals plot: 'matplotlib' is not installed; it comes with the 'reports' extra: pip install \"pytest-evals[reports]\" (in a checkout: pip install -e \".[reports]\")"


def test_the_families_declare_the_libraries_of_their_extras() -> None:
    from pytest_evals.registry.missing_extras import CORE_EXTRAS, known_extras

    extras = known_extras()
    assert {extras[lib] for lib in ("nltk", "sacrebleu", "rouge_score", "bert_score")} == {"harpia"}
    assert (extras["inscriptis"], extras["lxml"], extras["datasets"]) == ("rag", "rag", "hf")
    assert not {"nltk", "inscriptis", "datasets"} & set(CORE_EXTRAS)


def _commands(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, module: str, source: str) -> None:
    """A family that offers the commands of ``module`` (written into ``tmp_path``)."""
    from pytest_evals.registry.family_registry import registry

    (tmp_path / f"{module}.py").write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry(), "commands", [*registry().commands, module])


def test_a_command_module_that_is_missing_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_evals.registry.family_registry import registry

    monkeypatch.setattr(registry(), "commands", [*registry().commands, "no_such_family_xyz.cli"])
    assert cli.main(["viz", "--help"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pytest-evals: command module 'no_such_family_xyz.cli' does not exist (No module named 'no_such_family_xyz')"
    )


def test_a_command_module_that_needs_a_missing_extra_names_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "nltk", None)
    _commands(monkeypatch, tmp_path, "needs_nltk_cli_xyz", "import nltk\n")
    assert cli.main(["viz", "--help"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pytest-evals: the commands of needs_nltk_cli_xyz: 'nltk' is not installed; it comes with the 'harpia' "
        "extra: pip install \"pytest-evals[harpia]\" (in a checkout: pip install -e \".[harpia]\")"
    )


def test_a_command_module_with_a_bug_is_not_hidden(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _commands(monkeypatch, tmp_path, "buggy_cli_xyz", "from os import no_such_name_xyz\n")
    with pytest.raises(ImportError, match="no_such_name_xyz"):
        cli.main(["viz", "--help"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_jailbreak_suite_runs_with_every_extra_library_hidden(pytester: pytest.Pytester, workers: list[str]) -> None:
    """What the fresh no-extras venv has: the core dependencies suffice for this path."""
    from pytest_evals.registry.missing_extras import known_extras

    hide(pytester, *known_extras())
    shutil.copy(REPO / "eval_suites" / "jailbreak_guardrails.eval.yaml", pytester.path / "jb.eval.yaml")
    (pytester.path / "data").mkdir()
    shutil.copy(REPO / "eval_suites" / "data" / "jailbreak_guardrails.jsonl", pytester.path / "data" / "jailbreak_guardrails.jsonl")
    # pytest-html is itself an extra: installed here, so it is switched off as if absent.
    result = pytester.runpytest_subprocess(*workers, "-p", "no:html", "-p", "no:cacheprovider", "--evals-json", "s.json")
    assert result.ret == 0, result.stdout.str()[-3000:]
    [suite] = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["suites"]
    assert suite["passed"] and suite["cases"]["errors"] == 0 and suite["cases"]["total"] == 20


def test_a_target_that_needs_a_missing_extra_names_it() -> None:
    import asyncio

    from pytest_evals.model.errors import TargetError
    from pytest_evals.targets.target_kinds import CallableTarget

    def answer(case: dict[str, object]) -> str:
        raise ModuleNotFoundError("No module named 'inscriptis'", name="inscriptis")

    with pytest.raises(TargetError, match=r"^target targets:answer: 'inscriptis' is not installed; it comes with the 'rag' extra"):
        asyncio.run(CallableTarget(answer, "targets:answer").run({}))
