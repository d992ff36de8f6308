"""A corrupt, read-only or failing response cache is one visible warning, never silence."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_evals.llm import cache as llm_cache
from pytest_evals.llm.cache import ReadOnlyCache, ResponseCache
from pytest_evals.testing.fake_openai import FakeOpenAI
from tests.llm.helpers import endpoint_args, probe_suite


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_a_corrupt_cache_is_one_warning_in_the_summary(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path, xdist: bool
) -> None:
    probe_suite(pytester, [f"question {i}" for i in range(4)])
    cache = tmp_path / "cache"
    (cache / "probe").mkdir(parents=True)
    (cache / "probe" / "cache.db").write_bytes(b"this is not a database" * 100)
    args = ["-p", "no:cacheprovider", *endpoint_args(server, cache)] + (["-n", "2"] if xdist else [])
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=4)
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*pytest_evals warnings*",
        f"WARNING: response cache {cache / 'probe'} is unusable (*): every request goes to the endpoint*",
    ])
    # One warning, however many cases and workers met the problem.
    assert out.count("WARNING: response cache") == 1


def _fill(root: Path) -> None:
    cache = ResponseCache(root, run_id="r1")

    async def store() -> None:
        await cache.store("probe", "k1", {"text": "stored answer", "model": "m", "prompt_tokens": 1,
                                          "completion_tokens": 1, "finish_reason": "stop"})

    asyncio.run(store())
    cache.close()


def test_the_read_only_reader_finds_stored_answers(tmp_path: Path) -> None:
    _fill(tmp_path)
    reader = ReadOnlyCache.open(tmp_path / "probe")
    assert reader is not None
    value = reader.get("k1")
    assert value["text"] == "stored answer"
    assert reader.get("missing") is None
    assert list(reader.iterkeys()) == ["k1"]
    reader.close()


def test_a_cache_that_cannot_be_opened_for_writing_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root no folder is read-only, so the open failure a read-only mount gives
    (sqlite: "attempt to write a readonly database") is raised by diskcache itself."""
    import sqlite3

    import diskcache

    _fill(tmp_path)

    def refuse(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(diskcache, "Cache", refuse)
    monkeypatch.setattr(llm_cache, "_PROBLEMS", [])
    cache = ResponseCache(tmp_path, run_id="r2")
    stored = cache.get("probe", "k1")
    assert stored is not None and stored["text"] == "stored answer"
    assert asyncio.run(cache.lookup_or_claim("probe", "k1"))[0] == "hit"
    assert asyncio.run(cache.lookup_or_claim("probe", "nope")) == ("claimed", None)
    asyncio.run(cache.store("probe", "nope", {"text": "x"}))  # silently not saved
    [note] = llm_cache.problems()
    assert "is read-only" in note and "stored answers are used" in note


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only folders")
def test_a_read_only_cache_folder_is_read_end_to_end(
    pytester: pytest.Pytester, server: FakeOpenAI, tmp_path: Path
) -> None:
    probe_suite(pytester, [f"question {i}" for i in range(3)])
    cache = tmp_path / "cache"
    args = ["-p", "no:cacheprovider", *endpoint_args(server, cache)]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=3)
    answered = server.stats()["answered"]
    for path in [cache, *cache.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        result = pytester.runpytest_subprocess(*args)
    finally:
        for path in [cache, *cache.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    result.assert_outcomes(passed=3)
    assert server.stats()["answered"] == answered  # every answer came from the cache
    result.stdout.fnmatch_lines(["*WARNING: response cache*read-only*"])
