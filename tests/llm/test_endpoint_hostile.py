"""The endpoint check (GET /models, /props) against hostile answers: redirects, infinite
numbers, hosted gateways, a NaN outage wait."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evals.llm.endpoint_probe import probe_endpoint_sync
from pytest_evals.llm.settings import LLMSettings

from .scripted_http import ScriptedServer

KEY = "sk-hostile-SECRET-0123456789abcdef"


def write_suite(root: Path) -> None:
    """Two jailbreak cases judged by the endpoint's model (each case one request)."""
    rows = [{"id": f"c{i}", "question": f"question {i}", "expected_outcome": bool(i % 2)} for i in range(2)]
    (root / "qs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (root / "jb.eval.yaml").write_text(
        "task: jailbreak_guardrails\ngenerate: true\ninput_path: qs.jsonl\ntarget: {model: m}\n"
        "thresholds: {accuracy: {min: 0.0}}\n", encoding="utf-8")


def test_probe_does_not_send_the_key_to_the_host_a_redirect_names() -> None:
    """``endpoint_probe._get`` uses urllib's default opener, whose
    HTTPRedirectHandler follows 301/302/307 to any host and copies the request's headers,
    Authorization included. A gateway (or anything at --evals-base-url) answering
    ``GET /models`` with ``302 Location: http://other-host/...`` makes the run send
    ``Bearer <OPENAI_API_KEY>`` to that other host before the first case. Expected: no
    redirect is followed (or the Authorization header is dropped across origins, as
    aiohttp and requests do)."""
    with ScriptedServer() as thief:
        target = f"http://localhost:{thief.port}"  # another origin than 127.0.0.1:<port>
        routes = {
            "/v1/models": (302, {"Location": target + "/v1/models"}, b""),
            "/props": (307, {"Location": target + "/props"}, b""),
        }
        with ScriptedServer(routes) as gateway:
            probe_endpoint_sync(f"http://127.0.0.1:{gateway.port}/v1", f"Bearer {KEY}", timeout=5)
        leaked = [r for r in thief.requests if r["authorization"] and KEY in r["authorization"]]
    assert leaked == [], f"the API key reached the redirect's host: {leaked}"


def test_run_does_not_send_the_key_to_a_redirect_host(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """As a user meets it: ``OPENAI_API_KEY=... pytest --evals-base-url
    http://gateway/v1`` where the gateway's /models redirects elsewhere."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_suite(pytester.path)
    with ScriptedServer() as thief:
        routes = {"/v1/models": (302, {"Location": f"http://localhost:{thief.port}/v1/models"}, b"")}
        with ScriptedServer(routes) as gateway:
            pytester.runpytest("--evals-base-url", f"http://127.0.0.1:{gateway.port}/v1",
                               "--evals-cache-dir", str(pytester.path / "cache"), "-p", "no:randomly")
        leaked = [r for r in thief.requests if KEY in (r["authorization"] or "")]
    assert leaked == []


@pytest.mark.parametrize("route, body", [
    ("/props", b'{"total_slots": Infinity, "default_generation_settings": {"n_ctx": 4096}}'),
    ("/props", b'{"total_slots": 2, "default_generation_settings": {"n_ctx": 1e400}}'),
    ("/v1/models", b'{"object": "list", "data": [{"id": "m1", "max_model_len": Infinity}]}'),
])
def test_probe_never_raises_on_an_infinite_number(route: str, body: bytes) -> None:
    """``endpoint_probe._positive`` catches TypeError and ValueError
    but ``int(float('inf'))`` raises OverflowError; Python's json reads ``Infinity`` and
    ``1e400`` as inf. The docstring says the probe never raises; in a run the error escapes
    as INTERNALERROR and no case runs.
    Expected: the limit is unknown (None), the run goes on."""
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/v1/models": (200, {}, b'{"object": "list", "data": [{"id": "m1"}]}'), route: (200, {}, body)}
    with ScriptedServer(routes) as srv:
        info = probe_endpoint_sync(f"http://127.0.0.1:{srv.port}/v1", None, timeout=5)
    assert info.reachable


def test_run_survives_infinite_slots(pytester: pytest.Pytester) -> None:
    """As a user meets it: a server whose /props says ``"total_slots": Infinity``."""
    write_suite(pytester.path)
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/v1/models": (200, {}, b'{"object": "list", "data": [{"id": "m1"}]}'),
        "/props": (200, {}, b'{"total_slots": Infinity}')}
    with ScriptedServer(routes) as srv:
        result = pytester.runpytest("--evals-base-url", f"http://127.0.0.1:{srv.port}/v1",
                                    "--evals-cache-dir", str(pytester.path / "cache"), "-p", "no:randomly")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.ret == 0


@pytest.mark.parametrize("url", [
    "https://openrouter.ai/api/v1",
    "https://api.groq.com/openai/v1",
    "https://myresource.openai.azure.com/openai/v1",
    "https://api.together.xyz/v1",
])
def test_a_hosted_gateway_is_not_a_local_server(url: str) -> None:
    """``LLMSettings.local`` is ``not is_hosted(base_url)`` and ``is_hosted``
    knows only api.openai.com. So ``--evals-base-url https://openrouter.ai/api/v1``
    without ``--evals-model`` is treated as a local server "serving its own model": the run
    asks for whatever model the gateway lists first (OpenRouter lists hundreds, newest
    first), labels the run with it, drops every built-in price, and also sends the key to
    ``/props`` at the gateway's root. docs/local-models.md promises this only for a local
    endpoint (llama.cpp, vLLM, Ollama). Expected: a remote host is not 'local' unless the
    user says so (or the first-listed model is not adopted for a multi-model listing)."""
    settings = LLMSettings(configured_base_url=url, model_explicit=False)
    assert not settings.serves_own_model


def test_outage_wait_nan_is_refused() -> None:
    """``--evals-outage-wait nan`` passes the ``< 0`` check (NaN compares
    False), ``EndpointGate`` then takes ``max(0.0, nan)`` = 0.0: a server restart loses
    every case in flight, and the run's first line says "waits up to 10s" while the
    errors say "unreachable for 0s". Expected: a usage error like the one for -5."""
    with pytest.raises(ValueError):
        LLMSettings(outage_wait=float("nan"))
