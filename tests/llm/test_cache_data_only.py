"""The response cache holds data, never code: a planted pickle is a miss, not a command.

A cache folder is shared, restored from CI caches and downloaded as an artifact, so
whoever could write it must not be able to run code in the next run. These tests plant
pickles whose ``__reduce__`` calls ``os.system`` where diskcache keeps values (the
database row, a value file) and keys, and check the command never runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import pickle
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_evals.llm import LLMClient
from pytest_evals.llm import cache as llm_cache
from pytest_evals.llm.cache import ResponseCache
from pytest_evals.llm.cache_format import TAG, UNREADABLE, decode, encode
from pytest_evals.testing.fake_openai import FakeOpenAI

from .conftest import closing, run
from .helpers import endpoint_args, probe_suite

MakeClient = Callable[..., LLMClient]
MODE_PICKLE = 4  # diskcache's mode column for a pickled value


class Command:
    """Unpickling this runs ``touch <marker>``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def evil_pickle(marker: Path) -> bytes:
    return pickle.dumps(Command(marker))


@pytest.fixture(autouse=True)
def _own_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    """The warnings these tests cause stay theirs (not the outer run's summary)."""
    monkeypatch.setattr(llm_cache, "_PROBLEMS", [])


def test_the_payload_would_run_if_loaded(tmp_path: Path) -> None:
    """Guards the other tests: the planted pickle does run its command when unpickled."""
    marker = tmp_path / "ran"
    pickle.loads(evil_pickle(marker))
    assert marker.exists()


def plant(db: Path, marker: Path, *, in_file: bool) -> int:
    """Replace every row's value by the pickle (in the row, or in a value file)."""
    payload = evil_pickle(marker)
    connection = sqlite3.connect(db)
    try:
        rows = connection.execute("SELECT rowid FROM Cache").fetchall()
        for n, (rowid,) in enumerate(rows):
            if in_file:
                name = f"ab/cd/planted-{n}.val"
                path = db.parent / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(payload)
                connection.execute(
                    "UPDATE Cache SET mode = ?, filename = ?, value = NULL WHERE rowid = ?",
                    (MODE_PICKLE, name, rowid),
                )
            else:
                connection.execute(
                    "UPDATE Cache SET mode = ?, filename = NULL, value = ? WHERE rowid = ?",
                    (MODE_PICKLE, sqlite3.Binary(payload), rowid),
                )
        connection.commit()
    finally:
        connection.close()
    return len(rows)


@pytest.mark.parametrize("in_file", [False, True], ids=["row", "value-file"])
def test_a_planted_pickle_is_a_miss_and_never_runs(
    make_client: MakeClient,
    server: FakeOpenAI,
    cache_dir: Path,
    tmp_path: Path,
    in_file: bool,
) -> None:
    client = make_client()
    run(closing(client, client.chat("plant here", namespace="t")))
    client.close()
    marker = tmp_path / "code-ran"
    assert plant(cache_dir / "t" / "cache.db", marker, in_file=in_file) == 1

    again = make_client()

    async def twice() -> tuple[bool, bool]:
        first = await again.chat("plant here", namespace="t")
        second = await again.chat("plant here", namespace="t")
        assert first.text == second.text == "plant here"
        return first.cached, second.cached

    # Asked again (a miss), stored over the planted entry, then a hit.
    assert run(closing(again, twice())) == (False, True)
    assert server.stats()["answered"] == 2
    assert not marker.exists()
    [note] = llm_cache.problems()
    assert "not this version's data" in note and "never loaded" in note


def test_a_pickled_key_is_never_loaded(cache_dir: Path, tmp_path: Path) -> None:
    """diskcache unpickles keys stored with raw = 0 when it lists them."""
    cache = ResponseCache(cache_dir, run_id="r")

    async def store() -> None:
        await cache.store("t", "k1", {"text": "a", "model": "m", "prompt_tokens": 1,
                                      "completion_tokens": 1, "finish_reason": "stop"})

    asyncio.run(store())
    cache.close()
    marker = tmp_path / "key-ran"
    connection = sqlite3.connect(cache_dir / "t" / "cache.db")
    connection.execute(
        "INSERT INTO Cache (key, raw, store_time, mode, value) VALUES (?, 0, 0, 1, ?)",
        (sqlite3.Binary(evil_pickle(marker)), encode({"text": "x"})),
    )
    connection.commit()
    connection.close()
    cache = ResponseCache(cache_dir, run_id="r2")
    assert cache.answers("t") == 1  # listing the keys loads none of them
    cache.close()
    assert not marker.exists()


def test_an_older_or_foreign_entry_is_a_miss(cache_dir: Path) -> None:
    answer = {"text": "a", "model": "m", "prompt_tokens": 1, "completion_tokens": 1,
              "finish_reason": None, "v": 2}
    assert decode(encode(answer)) == answer
    assert decode(b"pytest-evals-cache/1\n" + json.dumps(answer).encode()) is UNREADABLE
    cache = ResponseCache(cache_dir, run_id="r")
    ns = cache.namespace("t")
    assert ns is not None
    ns.set("old", b"pytest-evals-cache/1\n" + json.dumps(answer).encode())
    ns.set("typed", TAG + json.dumps({**answer, "prompt_tokens": "many"}).encode())
    ns.set("deep", TAG + b"[" * 100_000)
    with pytest.raises(TypeError):
        ns.set("text", "a str value")  # only entries (dicts) are written, never pickled
    connection = sqlite3.connect(cache_dir / "t" / "cache.db")
    connection.execute(  # a text value, as diskcache would keep one
        "INSERT INTO Cache (key, raw, store_time, mode, value) VALUES ('text', 1, 0, 1, ?)",
        (TAG.decode() + json.dumps(answer),),
    )
    connection.commit()
    connection.close()
    for key in ("old", "typed", "deep", "text"):
        assert cache.get("t", key) is None, key
    # Stored over like any miss.
    assert asyncio.run(cache.lookup_or_claim("t", "old")) == ("claimed", None)
    cache.close()


def test_a_row_naming_a_file_elsewhere_never_deletes_it(cache_dir: Path, tmp_path: Path) -> None:
    """diskcache deletes the value file of an entry it replaces: a planted row naming a
    file outside the folder must not make the cache delete that file."""
    victim = tmp_path / "keep-me" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("not the cache's")
    cache = ResponseCache(cache_dir, run_id="r")
    ns = cache.namespace("t")
    assert ns is not None
    ns.set("k", {"claim": "x", "previous": None})
    connection = sqlite3.connect(cache_dir / "t" / "cache.db")
    for name in (str(victim), f"../../{victim.relative_to(tmp_path)}"):
        connection.execute("UPDATE Cache SET mode = 2, filename = ? WHERE key = 'k'", (name,))
        connection.commit()
        asyncio.run(cache.store("t", "k", {"text": "a", "model": "m", "prompt_tokens": 1,
                                           "completion_tokens": 1, "finish_reason": None}))
        assert victim.read_text() == "not the cache's"
        assert cache.get("t", "k") is not None
    connection.close()
    cache.close()


@pytest.mark.parametrize(
    ("key", "value"),
    [("disk_fetch", "boom"), ("_disk", "boom"), ("sqlite_cache_size", "1; DROP TABLE Cache")],
)
def test_a_folder_with_foreign_settings_is_not_opened(
    cache_dir: Path, key: str, value: str
) -> None:
    """diskcache turns Settings rows into attributes and PRAGMA statements."""
    cache = ResponseCache(cache_dir, run_id="r")
    assert cache.namespace("t") is not None
    cache.close()
    connection = sqlite3.connect(cache_dir / "t" / "cache.db")
    connection.execute("INSERT OR REPLACE INTO Settings VALUES (?, ?)", (key, value))
    connection.commit()
    connection.close()
    cache = ResponseCache(cache_dir, run_id="r2")
    assert cache.namespace("t") is None
    cache.close()
    [note] = llm_cache.problems()
    assert "is not opened" in note and key in note


@pytest.mark.parametrize(
    ("transport", "xdist", "in_file"),
    [("aiohttp", False, False), ("aiohttp", True, True), ("process", False, True), ("process", True, False)],
    ids=["aiohttp-row", "aiohttp-n2-file", "process-file", "process-n2-row"],
)
def test_a_poisoned_cache_runs_nothing_end_to_end(
    pytester: pytest.Pytester,
    server: FakeOpenAI,
    tmp_path: Path,
    transport: str,
    xdist: bool,
    in_file: bool,
) -> None:
    prompts = [f"question {i}" for i in range(6)]
    probe_suite(pytester, prompts)
    cache = tmp_path / "cache"
    args = [
        "-p", "no:cacheprovider", *endpoint_args(server, cache), "--evals-transport", transport,
        "--evals-json", "summary.json", *(["-n", "2"] if xdist else []),
    ]
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=6)
    assert server.stats()["answered"] == 6
    marker = tmp_path / "code-ran"
    assert plant(cache / "probe" / "cache.db", marker, in_file=in_file) == 6

    poisoned = pytester.runpytest_subprocess(*args)
    poisoned.assert_outcomes(passed=6)
    assert poisoned.ret == pytest.ExitCode.OK
    assert not marker.exists()
    assert server.stats()["answered"] == 12  # every planted entry was a miss, asked again
    out = poisoned.stdout.str()
    poisoned.stdout.fnmatch_lines([
        "*pytest_evals warnings*",
        f"WARNING: response cache {cache}: entries that are not this version's data*never loaded*",
    ])
    assert out.count("WARNING: response cache") == 1  # one warning, whatever the entries and workers
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert (summary["llm"]["cache_misses"], summary["llm"]["cache_hits"]) == (6, 0)

    # The answers asked again replaced the planted entries: the next run asks nothing.
    healed = pytester.runpytest_subprocess(*args)
    healed.assert_outcomes(passed=6)
    assert server.stats()["answered"] == 12
    assert "WARNING: response cache" not in healed.stdout.str()
    summary = json.loads((pytester.path / "summary.json").read_text(encoding="utf-8"))
    assert (summary["llm"]["requests"], summary["llm"]["cache_hits"]) == (0, 6)
    assert not marker.exists()
