"""What an OpenAI-compatible endpoint says about itself, asked once before the first case.

Two GET requests, neither of them a chat completion (nothing is generated or paid for):

- ``{base_url}/models``: is the server there at all, and which model(s) does it serve.
  vLLM adds ``max_model_len`` (the context) to each model; llama.cpp's C++ server adds
  ``meta.n_ctx_train``.
- ``{root}/props`` (llama.cpp's C++ server, at the root beside ``/v1``): ``total_slots``
  (requests it works on at once, ``--parallel``) and ``default_generation_settings.n_ctx``
  (the context of one slot). Not asked of OpenAI's own API.

A missing endpoint (404, or a body we cannot read) is fine: the limits stay unknown and
the client adapts as before. Only a refused or dropped connection, or a server that says
it is still loading (503), makes the endpoint unreachable.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

if TYPE_CHECKING:
    import urllib.request

# urllib.request, http.client and asyncio are imported by the probe itself: every
# suite run imports this module for is_hosted() and the client's types, and a run
# against a hosted API (no probe) or answered from the cache needs none of them.

#: Seconds each GET may take: a server that cannot list its models this fast is busy
#: enough that the first case will find out anyway.
PROBE_TIMEOUT = 5.0
#: Host names that are this machine or a private network's, besides IP addresses.
_LOCAL_SUFFIXES = (".local", ".internal", ".lan", ".home.arpa", ".localhost")
#: Limits beyond these are not a server's: read as unknown (a hostile or broken answer).
MAX_SLOTS = 4096
MAX_CONTEXT = 100_000_000


@dataclass(frozen=True)
class EndpointInfo:
    """The endpoint's answer; every field is optional (servers publish different things)."""

    reachable: bool
    #: Why it is not reachable (connection refused, HTTP 503 loading...).
    error: str = ""
    #: Model ids from ``/models``, in the server's order.
    models: tuple[str, ...] = ()
    #: Requests the server works on at once (llama.cpp ``total_slots``).
    slots: int | None = None
    #: The model's context in tokens (llama.cpp ``n_ctx``, vLLM ``max_model_len``).
    context: int | None = None
    #: Which endpoints answered (``/models``, ``/props``): shown with the limits.
    sources: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["models"] = list(self.models)
        data["sources"] = list(self.sources)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EndpointInfo:
        return cls(
            reachable=bool(data.get("reachable")),
            error=str(data.get("error") or ""),
            models=tuple(str(m) for m in data.get("models") or ()),
            slots=_positive(data.get("slots")),
            context=_positive(data.get("context")),
            sources=tuple(str(s) for s in data.get("sources") or ()),
        )

    def limits_text(self) -> str:
        """``2 slots, context 2048 tokens (/props)``; empty when nothing was published."""
        parts = []
        if self.slots:
            parts.append(f"{self.slots} slot{'s' if self.slots != 1 else ''}")
        if self.context:
            parts.append(f"context {self.context} tokens")
        if not parts:
            return ""
        return ", ".join(parts) + (f" ({', '.join(self.sources)})" if self.sources else "")


def is_local_host(host: str) -> bool:
    """This machine or a private network: loopback, private and link-local addresses,
    ``localhost``, single-label names (a container's service name) and local suffixes."""
    host = host.lower().rstrip(".")
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return host == "localhost" or "." not in host or host.endswith(_LOCAL_SUFFIXES)
    return address.is_loopback or address.is_private or address.is_link_local


def is_hosted(base_url: str) -> bool:
    """A service on the internet (OpenAI, a gateway such as OpenRouter or Azure), not a
    server of one's own: its model is the one asked for, its prices the built-in ones,
    and it is not asked for llama.cpp's /props."""
    return not is_local_host(urlsplit(base_url).hostname or "")


def server_root(base_url: str) -> str:
    """``http://host:8080/v1?key=S`` -> ``http://host:8080?key=S`` (where llama.cpp serves
    /props; the query stays, it may be what lets a request through a gateway)."""
    parts = urlsplit(base_url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def endpoint_url(base_url: str, path: str) -> str:
    """``path`` under ``base_url``, before its query string:
    ``http://host/v1?key=S`` + ``/chat/completions`` -> ``http://host/v1/chat/completions?key=S``.

    A gateway's query (Azure's ``?api-version=``, a proxy's ``?key=``) belongs to every
    request; appended after it, the path would become part of the last parameter's value.
    The fragment is never sent."""
    parts = urlsplit(base_url.strip())
    joined = parts.path.rstrip("/") + "/" + path.lstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


def split_query(base_url: str) -> tuple[str, dict[str, str]]:
    """(``base_url`` without query and fragment, its query parameters): for the openai
    SDK, which appends request paths after a query left in its ``base_url`` and takes
    the parameters as ``default_query`` instead. A repeated name keeps its last value."""
    parts = urlsplit(base_url.strip())
    base = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
    return base, dict(parse_qsl(parts.query, keep_blank_values=True))


def _positive(value: Any, limit: int = MAX_CONTEXT) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):  # inf, NaN, 1e400 in the JSON
        return None
    return number if 0 < number <= limit else None


#: A model id longer than this, or with control characters, is not used as a name: it
#: would be sent in every request and printed in every report.
MAX_ID = 256


def _usable_id(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 0 < len(value) <= MAX_ID
        and value.isprintable()
        and value.strip() == value
    )


def read_models(data: Any) -> tuple[tuple[str, ...], int | None]:
    """Model ids and a context length (vLLM ``max_model_len``, llama.cpp ``meta.n_ctx_train``)."""
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return (), None
    ids: list[str] = []
    context: int | None = None
    for item in items:
        if not isinstance(item, dict) or not _usable_id(item.get("id")):
            continue
        ids.append(item["id"])
        if context is None:
            meta = item.get("meta")
            context = _positive(item.get("max_model_len")) or (
                _positive(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
            )
    return tuple(ids), context


def read_props(data: Any) -> tuple[int | None, int | None]:
    """llama.cpp's ``/props``: (total_slots, n_ctx of a slot)."""
    if not isinstance(data, dict):
        return None, None
    settings = data.get("default_generation_settings")
    context = _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None
    return _positive(data.get("total_slots"), MAX_SLOTS), context or _positive(data.get("n_ctx"))


@functools.cache
def _opener() -> urllib.request.OpenerDirector:
    """No proxy from the environment (the requests themselves use none either), no redirects."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        """A redirect is an answer, not followed: urllib would copy the Authorization
        header to whatever host the Location names."""

        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())


def _get(url: str, headers: dict[str, str], timeout: float) -> tuple[int, Any]:
    """(status, parsed JSON or None); a refused or dropped connection raises OSError.

    The standard library, on a thread: the process transport keeps aiohttp out of the
    pytest process, and two GETs per run need no connection pool."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers=headers, method="GET")
    try:
        with _opener().open(request, timeout=timeout) as resp:
            status, raw = resp.status, resp.read(1 << 20)
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, b""
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, None


def probe_endpoint_sync(
    base_url: str, authorization: str | None = None, *, timeout: float = PROBE_TIMEOUT
) -> EndpointInfo:
    """Ask ``/models`` and ``/props``. Never raises: an unreachable server is an answer."""
    import http.client

    headers = {"Accept": "application/json"}
    if authorization:
        headers["Authorization"] = authorization
    models_url = endpoint_url(base_url, "/models")
    try:
        status, data = _get(models_url, headers, timeout)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return EndpointInfo(False, error=_describe(exc, timeout))
    if status in (502, 503, 504):
        # llama.cpp's server answers 503 on every endpoint while the model loads.
        # Named without its query string: a gateway's ?key= is a credential.
        shown = urlunsplit(urlsplit(models_url)._replace(query=""))
        return EndpointInfo(False, error=f"HTTP {status} from {shown} (loading?)")
    models, context = read_models(data) if status == 200 else ((), None)
    slots = None
    props_context = None
    if not is_hosted(base_url):
        with contextlib.suppress(OSError, http.client.HTTPException, ValueError):
            props_status, props = _get(endpoint_url(server_root(base_url), "/props"), headers, timeout)
            if props_status == 200:
                slots, props_context = read_props(props)
    # Where the limits were read (a slot's context is what one request may use).
    sources = ["/models"] if context and not props_context else []
    if slots or props_context:
        sources.append("/props")
    context = props_context or context
    return EndpointInfo(True, models=models, slots=slots, context=context, sources=tuple(sources))


async def probe_endpoint(
    base_url: str, authorization: str | None = None, *, timeout: float = PROBE_TIMEOUT
) -> EndpointInfo:
    """:func:`probe_endpoint_sync` off the event loop."""
    import asyncio

    return await asyncio.to_thread(
        probe_endpoint_sync, base_url, authorization, timeout=timeout
    )


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError) or "timed out" in str(exc):
        return f"no answer within {timeout:g}s"
    reason = getattr(exc, "reason", None)  # URLError wraps the socket's error
    if isinstance(reason, BaseException):
        exc = reason
    return f"connection error: {type(exc).__name__}: {exc}"
