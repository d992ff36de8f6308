"""attack2: the endpoint probe (GET /models, /props) against hostile answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from attack2_http import ScriptedServer
from variant_helpers import write_suite

from pytest_evals.llm.endpoint_probe import probe_endpoint_sync
from pytest_evals.llm.settings import LLMSettings

KEY = "sk-attack2-SECRET-0123456789abcdef"


@pytest.mark.defect("A2-1 HIGH: the probe's urllib GET follows a redirect to another host and "
                    "sends the API key there")
def test_probe_does_not_send_the_key_to_the_host_a_redirect_names() -> None:
    """A2-1 (HIGH). ``endpoint_probe._get`` uses urllib's default opener, whose
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


@pytest.mark.defect("A2-1 HIGH (end to end): a pytest run against a redirecting /models "
                    "sends OPENAI_API_KEY to the other host")
def test_run_does_not_send_the_key_to_a_redirect_host(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A2-1 (HIGH), as a user meets it: ``OPENAI_API_KEY=... pytest --evals-base-url
    http://gateway/v1`` where the gateway's /models redirects elsewhere."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    write_suite(pytester.path, n=2, thresholds={"accuracy": {"min": 0.0}})
    with ScriptedServer() as thief:
        routes = {"/v1/models": (302, {"Location": f"http://localhost:{thief.port}/v1/models"}, b"")}
        with ScriptedServer(routes) as gateway:
            pytester.runpytest("--evals-base-url", f"http://127.0.0.1:{gateway.port}/v1",
                               "--evals-cache-dir", str(pytester.path / "cache"), "-p", "no:randomly")
        leaked = [r for r in thief.requests if KEY in (r["authorization"] or "")]
    assert leaked == []


@pytest.mark.defect("A2-2 MEDIUM-HIGH: /props or /models with a JSON Infinity crashes the run "
                    "with INTERNALERROR (OverflowError in _positive)")
@pytest.mark.parametrize("route, body", [
    ("/props", b'{"total_slots": Infinity, "default_generation_settings": {"n_ctx": 4096}}'),
    ("/props", b'{"total_slots": 2, "default_generation_settings": {"n_ctx": 1e400}}'),
    ("/v1/models", b'{"object": "list", "data": [{"id": "m1", "max_model_len": Infinity}]}'),
])
def test_probe_never_raises_on_an_infinite_number(route: str, body: bytes) -> None:
    """A2-2 (MEDIUM-HIGH). ``endpoint_probe._positive`` catches TypeError and ValueError
    but ``int(float('inf'))`` raises OverflowError; Python's json reads ``Infinity`` and
    ``1e400`` as inf. The docstring says the probe never raises; in a run the error escapes
    as INTERNALERROR and no case runs (reproducer: /tmp/attack2/probe/hostile_server.py inf).
    Expected: the limit is unknown (None), the run goes on."""
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/v1/models": (200, {}, b'{"object": "list", "data": [{"id": "m1"}]}'), route: (200, {}, body)}
    with ScriptedServer(routes) as srv:
        info = probe_endpoint_sync(f"http://127.0.0.1:{srv.port}/v1", None, timeout=5)
    assert info.reachable


@pytest.mark.defect("A2-2 MEDIUM-HIGH (end to end): INTERNALERROR, no case runs")
def test_run_survives_infinite_slots(pytester: pytest.Pytester) -> None:
    """A2-2 as a user meets it: a server whose /props says ``"total_slots": Infinity``."""
    write_suite(pytester.path, n=2, thresholds={"accuracy": {"min": 0.0}})
    routes: dict[str, tuple[int, dict[str, str], bytes]] = {
        "/v1/models": (200, {}, b'{"object": "list", "data": [{"id": "m1"}]}'),
        "/props": (200, {}, b'{"total_slots": Infinity}')}
    with ScriptedServer(routes) as srv:
        result = pytester.runpytest("--evals-base-url", f"http://127.0.0.1:{srv.port}/v1",
                                    "--evals-cache-dir", str(pytester.path / "cache"), "-p", "no:randomly")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert result.ret == 0


@pytest.mark.defect("A2-3 MEDIUM: any non-api.openai.com URL is a 'local endpoint': a hosted "
                    "gateway's first listed model silently replaces the default model")
@pytest.mark.parametrize("url", [
    "https://openrouter.ai/api/v1",
    "https://api.groq.com/openai/v1",
    "https://myresource.openai.azure.com/openai/v1",
    "https://api.together.xyz/v1",
])
def test_a_hosted_gateway_is_not_a_local_server(url: str) -> None:
    """A2-3 (MEDIUM). ``LLMSettings.local`` is ``not is_hosted(base_url)`` and ``is_hosted``
    knows only api.openai.com. So ``--evals-base-url https://openrouter.ai/api/v1``
    without ``--evals-model`` is treated as a local server "serving its own model": the run
    asks for whatever model the gateway lists first (OpenRouter lists hundreds, newest
    first), labels the run with it, drops every built-in price, and also sends the key to
    ``/props`` at the gateway's root. docs/local-models.md promises this only for a local
    endpoint (llama.cpp, vLLM, Ollama). Expected: a remote host is not 'local' unless the
    user says so (or the first-listed model is not adopted for a multi-model listing)."""
    settings = LLMSettings(configured_base_url=url, model_explicit=False)
    assert not settings.serves_own_model


def test_reproducer_files_exist_note() -> None:
    """Not a defect: the command-line reproducers of this file are in /tmp/attack2/probe
    (hostile_server.py MODE LOG [REDIRECT]); this test only checks the scripted server."""
    with ScriptedServer({"/x": (200, {}, json.dumps({"ok": 1}).encode())}) as srv:
        assert srv.port > 0
    assert Path(__file__).exists()


@pytest.mark.defect("A2-10 LOW: --evals-outage-wait nan is accepted and silently means 0 s "
                    "(while the startup line promises 10 s)")
def test_outage_wait_nan_is_refused() -> None:
    """A2-10 (LOW). ``--evals-outage-wait nan`` passes the ``< 0`` check (NaN compares
    False), ``EndpointGate`` then takes ``max(0.0, nan)`` = 0.0: a server restart loses
    every case in flight, and the run's first line says "waits up to 10s" while the
    errors say "unreachable for 0s". Expected: a usage error like the one for -5."""
    with pytest.raises(ValueError):
        LLMSettings(outage_wait=float("nan"))
