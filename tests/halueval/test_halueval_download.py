"""``pytest-evals halueval download`` against a local HTTP server serving the files."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_evals.cli.main import main
from pytest_evals.families.halueval.layout import OFFICIAL_COMMIT, OFFICIAL_FILES


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """(base URL, served root, request log) of a threaded HTTP server on loopback."""
    root = tmp_path / "served"
    root.mkdir()
    log: list[str] = []
    handler = functools.partial(type("H", (_Handler,), {"requests": log}), directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root, log
    finally:
        server.shutdown()
        server.server_close()


def mirror(root: Path, ref: str, data_dir: Path) -> None:
    """Lay out the official repository paths under ``root/ref`` (links to the real files)."""
    for local, remote in OFFICIAL_FILES.items():
        target = root / ref / remote
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(data_dir / local, target)


def test_download_official_files_verified(served: tuple[str, Path, list[str]], data_dir: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    url, root, log = served
    mirror(root, OFFICIAL_COMMIT, data_dir)
    dest = tmp_path / "data" / "halueval"
    assert main(["halueval", "download", "--dest", str(dest), "--base-url", url]) == 0
    for local in OFFICIAL_FILES:
        assert (dest / local).read_bytes() == (data_dir / local).read_bytes(), local
    assert sorted(log) == sorted(f"/{OFFICIAL_COMMIT}/{r}" for r in OFFICIAL_FILES.values())
    assert not list(dest.rglob("*.part"))
    # a second run checks the checksums and fetches nothing
    log.clear()
    assert main(["halueval", "download", "--dest", str(dest), "--base-url", url]) == 0
    assert log == []
    assert "up to date" in capsys.readouterr().out


def test_checksum_mismatch_writes_nothing(served: tuple[str, Path, list[str]], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    url, root, _ = served
    for remote in OFFICIAL_FILES.values():
        (root / OFFICIAL_COMMIT / remote).parent.mkdir(parents=True, exist_ok=True)
        (root / OFFICIAL_COMMIT / remote).write_text('{"fake": "copy"}\n', encoding="utf-8")
    dest = tmp_path / "dest"
    assert main(["halueval", "download", "--dest", str(dest), "--base-url", url]) == 1
    err = capsys.readouterr().err
    assert "sha256" in err and "does not match the official file" in err
    assert not (dest / "qa_data.json").exists()
    assert not list(dest.rglob("*.part"))
    # a fake copy is accepted when verification is turned off
    assert main(["halueval", "download", "--dest", str(dest), "--base-url", url, "--no-verify"]) == 0
    assert (dest / "prompts" / "qa_evaluation_instruction.txt").read_text(encoding="utf-8") == '{"fake": "copy"}\n'


def test_http_error_is_reported(served: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    url, _, _ = served
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_evals.cli.main", "halueval", "download", "--dest", str(tmp_path / "d"),
         "--base-url", url, "--ref", "main"],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1
    assert f"{url}/main/data/qa_data.json: HTTP 404" in proc.stderr
