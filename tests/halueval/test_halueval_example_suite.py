"""The example suite ``eval_suites/halueval.eval.yaml`` and the sample of official records it ships.

The sample must be the official bytes (checked line by line against the real files),
carry the MIT notice, stay small, and run offline on a machine that has nothing but the
repository (the suite and its data are copied to an empty folder), plainly and under
``-n 2``. The full benchmark stays one override away.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "eval_suites" / "halueval.eval.yaml"
SAMPLE = REPO / "eval_suites" / "data" / "halueval"
FILES = ("qa_data.json", "dialogue_data.json", "summarization_data.json", "general_data.json")


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((SAMPLE / "MANIFEST.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("name", FILES)
def test_sample_lines_are_the_official_lines(data_dir: Path, name: str) -> None:
    entry = manifest()["files"][name]
    official = (data_dir / name).read_bytes()
    assert hashlib.sha256(official).hexdigest() == entry["sha256_of_official_file"]
    official_lines = official.splitlines(keepends=True)
    sample_lines = (SAMPLE / name).read_bytes().splitlines(keepends=True)
    lines = entry["official_lines"]
    assert len(sample_lines) == len(lines) == 15 and lines == sorted(set(lines))
    assert sample_lines == [official_lines[n - 1] for n in lines]
    if name == "general_data.json":
        assert all(line.endswith(b"\r\n") for line in sample_lines)  # CRLF kept


def test_sample_carries_the_licence_and_the_official_instructions(data_dir: Path) -> None:
    assert (SAMPLE / "LICENSE").read_bytes() == (data_dir / "LICENSE").read_bytes()
    assert "Copyright (c) 2020 RUCAIBox" in (SAMPLE / "LICENSE").read_text(encoding="utf-8")
    for task in ("qa", "dialogue", "summarization"):
        name = f"prompts/{task}_evaluation_instruction.txt"
        assert (SAMPLE / name).read_bytes() == (data_dir / name).read_bytes()
    size = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert size < 300_000


def fresh_copy(pytester: pytest.Pytester) -> None:
    """The suite as a fresh checkout has it, with no data beside the repository."""
    (pytester.path / "eval_suites" / "data").mkdir(parents=True)
    shutil.copy(SUITE, pytester.path / "eval_suites" / SUITE.name)
    shutil.copytree(SAMPLE, pytester.path / "eval_suites" / "data" / "halueval")


def test_example_suite_passes_offline_on_a_fresh_machine_plain_and_xdist(pytester: pytest.Pytester) -> None:
    fresh_copy(pytester)
    summaries = {}
    for name, extra in (("plain", ()), ("xdist", ("-n", "2"))):
        result = pytester.runpytest_subprocess(
            "eval_suites/halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-json", f"{name}.json", *extra
        )
        assert result.ret == 0, result.stdout.str()[-3000:]
        suite = json.loads((pytester.path / f"{name}.json").read_text(encoding="utf-8"))["suites"][0]
        assert suite["passed"] and suite["cases"]["total"] == 60 and suite["cases"]["errors"] == 0
        assert {t: suite["metrics"][t]["n"]["value"] for t in ("qa", "dialogue", "summarization", "general")} == {
            "qa": 15, "dialogue": 15, "summarization": 15, "general": 15,
        }
        summaries[name] = suite
    assert summaries["plain"]["metrics"] == summaries["xdist"]["metrics"]


def test_full_benchmark_is_one_override_away(pytester: pytest.Pytester, data_dir: Path) -> None:
    fresh_copy(pytester)
    result = pytester.runpytest_subprocess(
        "eval_suites/halueval.eval.yaml", "--collect-only", "-q", "-p", "no:cacheprovider",
        "--evals-set", f"halueval:data_dir={data_dir}",
    )
    result.stdout.fnmatch_lines(["34507 tests collected*"])
