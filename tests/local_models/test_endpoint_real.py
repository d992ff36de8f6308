"""What the client reads from a real llama.cpp server (llama-cpp-python's): its model
name from /v1/models (it has no /props: a 404, which is fine), used and shown when no
--evals-model is given, with no built-in price."""

from __future__ import annotations

import json

import pytest

from pytest_evals.llm.endpoint_probe import probe_endpoint_sync

from .conftest import LlamaServer

SUITE = """\
task: halueval
data_dir: {data_dir}
tasks: [qa]
sample: 3
seed: 5
thresholds:
  unparseable_rate: {{max: 1.0}}
"""


def test_the_real_server_describes_itself(llama_server: LlamaServer) -> None:
    info = probe_endpoint_sync(llama_server.base_url)
    assert info.reachable and info.models == ("smollm2-135m",)
    # llama-cpp-python publishes neither slots nor a context length: both unknown, and
    # the client adapts by latency as before (no cap from a guess).
    assert info.slots is None


@pytest.mark.usefixtures("local_env")
def test_no_model_named_runs_as_the_servers_own_and_unpriced(
    pytester: pytest.Pytester, llama_server: LlamaServer
) -> None:
    from .test_llama_server import DATA_DIR

    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=DATA_DIR))
    out = pytester.path / "s.json"
    result = pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--evals-base-url", llama_server.base_url, "--evals-cache-dir", str(pytester.path / "c"),
        "--evals-json", str(out), "--evals-max-tokens", "8",
    )
    result.stdout.fnmatch_lines(["evals llm: *: model smollm2-135m (the server's own)*"])
    llm = json.loads(out.read_text(encoding="utf-8"))["llm"]
    assert llm["model"] == "smollm2-135m" and llm["model_source"] == "server"
    assert llm["requests"] == 3 and llm["errors"] == 0
    assert llm["cost_usd"] == 0 and llm["unpriced_requests"] == 3
    assert "gpt-4o-mini" not in result.stdout.str()
    assert llm["lowest_concurrency"] >= 1
