"""The LLM layer's configuration, resolved once from options, ini keys and environment.

Precedence: command line > ini (``evals_*`` keys) > environment (``OPENAI_BASE_URL``,
the API key variable) > defaults.
"""

from __future__ import annotations

import base64
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from pytest_evals.hardening import redaction as redact
from pytest_evals.llm.bedrock_models import parse_model_aliases
from pytest_evals.llm.pricing import DEFAULT_PRICES, build_price_table, parse_price
from pytest_evals.llm.secret import Secret

if TYPE_CHECKING:
    import pytest

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"
#: The embedded offline judge's model and display name (llm/offline.py runs it; the
#: names live here, where every run's summary reads them without loading it).
OFFLINE_MODEL_NAME = "all-MiniLM-L6-v2"
OFFLINE_DISPLAY_NAME = f"{OFFLINE_MODEL_NAME} (embedded offline judge)"
#: Lets a test suite (or CI) move every cache away from the user's home in one place.
CACHE_DIR_ENV = "PYTEST_EVALS_CACHE_DIR"

#: A chat completion is kilobytes; 16 MiB leaves room for long replies and logprobs.
DEFAULT_MAX_BODY_BYTES = 16 * 2**20

Transport = Literal["auto", "process", "openai", "aiohttp", "lean"]
TRANSPORTS: tuple[str, ...] = ("auto", "process", "openai", "aiohttp", "lean")
#: ``openai``: any OpenAI-compatible endpoint; ``bedrock``: AWS Bedrock's Converse API
#: through botocore (llm/transport/bedrock_transport.py).
Provider = Literal["openai", "bedrock"]
PROVIDERS: tuple[str, ...] = ("openai", "bedrock")


def default_cache_dir() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "pytest_evals"


@dataclass(frozen=True)
class LLMSettings:
    model: str = DEFAULT_MODEL
    #: The configured endpoint (None: OpenAI's, if a key is set; otherwise offline).
    configured_base_url: str | None = None
    api_key: Secret | None = field(default=None, repr=False)
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60.0
    max_retries: int = 6
    max_tokens: int | None = None
    temperature: float | None = 0.0
    #: ``--evals-temperature`` was given on the command line: tasks whose suites carry
    #: their own temperature yield to it (HaluEval does).
    temperature_explicit: bool = False
    seed: int | None = None
    concurrency: int = 32
    cache_dir: Path = field(default_factory=default_cache_dir)
    cache: bool = True
    refresh: bool = False
    dry_run: bool = False
    force_offline: bool = False
    transport: Transport = "auto"
    provider: Provider = "openai"
    #: The Bedrock provider's region (resolved by settings_from_config).
    aws_region: str | None = None
    #: Model keys the Bedrock provider accepts, and the ids they stand for (ini
    #: evals_bedrock_models).
    bedrock_models: dict[str, str] = field(default_factory=dict)
    #: JSON judges ask for response_format where the endpoint takes it (auto) or never (off).
    structured_output: str = "auto"
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    #: Largest response body read from the endpoint (an endless body must not fill memory).
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: Identifies one pytest run (shared by its xdist workers): with --evals-refresh an
    #: answer written during this run counts as fresh, so workers do not re-ask it.
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: Seconds a restarting endpoint is waited for (connection refused or reset) before
    #: the remaining requests fail (llm/endpoint_gate.py).
    outage_wait: float = 120.0
    #: The model was named (--evals-model / ini). If not, a local endpoint's own model
    #: (from its /models listing) is asked for and shown, and no built-in price applies.
    model_explicit: bool = True

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(
                f"--evals-transport {self.transport!r}: choose one of {', '.join(TRANSPORTS)}"
            )
        if self.provider not in PROVIDERS:
            raise ValueError(
                f"--evals-provider {self.provider!r}: choose one of {', '.join(PROVIDERS)}"
            )
        if self.provider == "bedrock":
            if not self.aws_region:
                raise ValueError("--evals-provider bedrock: no AWS region; set --evals-aws-region")
            if self.transport != "auto":
                raise ValueError(
                    f"--evals-transport {self.transport}: only for the OpenAI-compatible "
                    "provider; --evals-provider bedrock sends through botocore"
                )
        if self.concurrency < 1:
            raise ValueError(f"--evals-concurrency must be at least 1, got {self.concurrency}")
        if self.timeout <= 0:
            raise ValueError(f"--evals-timeout must be positive, got {self.timeout}")
        if self.max_retries < 0:
            raise ValueError(f"--evals-max-retries cannot be negative, got {self.max_retries}")
        if not self.outage_wait >= 0:  # NaN too
            raise ValueError(f"--evals-outage-wait cannot be negative, got {self.outage_wait}")
        if self.max_body_bytes < 1:
            raise ValueError(f"evals_max_response_bytes must be positive, got {self.max_body_bytes}")
        if self.api_key and any(c in self.api_key.reveal() for c in "\r\n\0"):
            # No HTTP header may carry it (each transport would fail differently, some
            # quoting the header); a key read from a file often ends in a newline. The
            # key itself is never repeated here.
            raise ValueError(
                f"the API key (environment variable {self.api_key_env}) holds a line break or "
                "a NUL character, which no HTTP header may carry: remove it (a key file's last "
                "newline?)"
            )
        userinfo = split_userinfo(self.configured_base_url or "")[1]
        if userinfo is not None:
            redact.register_userinfo(*userinfo)
            # As typed in the URL too: its percent-encoding may mix upper- and lower-case
            # hex, which no encoding of the password reproduces.
            raw = urlsplit(self.configured_base_url or "").netloc.rpartition("@")[0]
            redact.register(raw.partition(":")[2])
        register_query_credentials(self.configured_base_url or "")

    @property
    def base_url(self) -> str:
        """The endpoint without the URL's user and password: what is requested."""
        if self.provider == "bedrock" and not self.configured_base_url:
            return f"https://bedrock-runtime.{self.aws_region}.amazonaws.com"
        return _requested_url(self.configured_base_url or OPENAI_DEFAULT_BASE_URL)

    @property
    def keyed_base_url(self) -> str:
        """The endpoint as the response cache keys it: without any credential, so a
        rotated ``?key=`` (like a changed password or API key) finds the answers paid for
        with the old one; other parameters (``api-version``) still tell endpoints apart."""
        return _without_query_credentials(self.base_url)

    @property
    def authorization(self) -> str | None:
        """The Authorization header: Basic from the URL's userinfo, else Bearer with the key.

        Credentials in the URL are the user's explicit choice for this endpoint (a proxy
        with Basic auth), so they win over an API key set in the environment; sending
        both would make the HTTP client refuse the request.
        """
        userinfo = split_userinfo(self.configured_base_url or "")[1]
        if userinfo is not None:
            pair = f"{userinfo[0]}:{userinfo[1]}".encode()
            return "Basic " + base64.b64encode(pair).decode("ascii")
        if self.api_key:
            return f"Bearer {self.api_key.reveal()}"
        return None

    @property
    def local(self) -> bool:
        """A configured endpoint other than OpenAI's own API (llama.cpp, vLLM, Ollama...)."""
        from pytest_evals.llm.endpoint_probe import is_hosted

        if self.provider == "bedrock":
            return False  # AWS's service, whatever URL reaches it
        return bool(self.configured_base_url) and not is_hosted(self.base_url)

    @property
    def serves_own_model(self) -> bool:
        """No model named and a local endpoint: the server's own model is used and shown."""
        return self.local and not self.model_explicit

    @property
    def offline(self) -> bool:
        """No endpoint configured (or forced): judges use the embedded local model."""
        if self.provider == "bedrock":
            return self.force_offline
        return self.force_offline or (not self.configured_base_url and not self.api_key)

    def key_fields(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """What the cache key holds besides the endpoint and the body: for Bedrock the
        provider (one URL may serve either API) and the id a model key stands for."""
        if self.provider == "openai":
            return {}
        fields: dict[str, Any] = {"provider": self.provider}
        model = str(body.get("model"))
        if model in self.bedrock_models:
            fields["model_id"] = self.bedrock_models[model]
        return fields

    def public(self) -> dict[str, Any]:
        """What reports may show (never the key)."""
        return {
            "model": self.model,
            "provider": self.provider,
            "aws_region": self.aws_region,
            # without the query string: a gateway's ?key=... is a credential
            "base_url": None if self.offline else display_url(self.base_url),
            "api_key_env": self.api_key_env,
            "api_key_set": bool(self.api_key),
            "transport": self.transport,
            "concurrency": self.concurrency,
            "outage_wait": self.outage_wait,
            "cache": self.cache,
            "cache_dir": str(self.cache_dir),
            "refresh": self.refresh,
            "dry_run": self.dry_run,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }


#: Query parameters of a base URL that carry a credential (a gateway's ``?key=``, a
#: token, a signature); others (``api-version``) are ordinary text.
_CREDENTIAL_PARAM = re.compile(r"key|token|secret|sig|pass|auth|credential|code", re.IGNORECASE)


def register_query_credentials(url: str) -> None:
    """Make the credentials in ``url``'s query string secrets of the redaction layer,
    decoded and as typed: the command line (kept in a run folder's manifest), error
    messages and logs quote the URL whole."""
    for part in urlsplit(url).query.split("&"):
        raw = part.partition("=")[2]
        if raw and _is_credential(part):
            redact.register(raw)
            redact.register(unquote_plus(raw))


def _is_credential(part: str) -> bool:
    """Whether one ``name=value`` of a query string carries a credential (by its name)."""
    return _CREDENTIAL_PARAM.search(unquote(part.partition("=")[0])) is not None


@lru_cache(maxsize=16)
def _requested_url(url: str) -> str:
    # Asked for on every request: parsed once per URL.
    parts = urlsplit(split_userinfo(url)[0])
    # No trailing slash before a query either (``/v1/?key=``): shown and keyed as ``/v1``.
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


@lru_cache(maxsize=16)
def _without_query_credentials(url: str) -> str:
    parts = urlsplit(url)
    if not parts.query:
        return url
    kept = [part for part in parts.query.split("&") if not _is_credential(part)]
    return urlunsplit(parts._replace(query="&".join(kept)))


def display_url(url: str) -> str:
    """The URL without credentials or query string (safe for reports and messages)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``http://user:pw@host/v1`` -> (``http://host/v1``, ("user", "pw"))."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, hostport, parts.path, parts.query, parts.fragment))
    return clean, (unquote(user), unquote(password))


def _pick(config: pytest.Config, dest: str, ini: str | None) -> Any:
    value = config.getoption(dest, None)
    if value is not None:
        return value
    if ini is not None:
        try:
            ini_value = config.getini(ini)
        except (ValueError, KeyError):
            return None
        if ini_value not in ("", None, []):
            return ini_value
    return None


def _optional_number(text: Any, kind: type[int] | type[float], name: str) -> Any:
    if text is None or isinstance(text, (int, float)):
        return text
    if str(text).strip().lower() in ("", "none", "null", "default"):
        return None
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{name}: expected a number or 'none', got {text!r}") from None


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def settings_from_config(config: pytest.Config) -> LLMSettings:
    """Resolve the settings of this process; raises ValueError naming a bad option."""

    def pick(name: str, ini: bool = True) -> Any:
        return _pick(config, f"evals_{name}", f"evals_{name}" if ini else None)

    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput.get("testrunuid") if isinstance(workerinput, dict) else None
    extra: dict[str, Any] = {"run_id": str(run_id)} if run_id else {}

    def number(name: str, kind: type[int] | type[float], default: Any) -> Any:
        value = _optional_number(pick(name), kind, "--evals-" + name.replace("_", "-"))
        return default if value is None else value

    key_env = pick("api_key_env") or "OPENAI_API_KEY"
    key = os.environ.get(key_env) or ""
    provider = str(pick("provider") or "openai").strip().lower()
    base_url = pick("base_url") or os.environ.get("OPENAI_BASE_URL") or None
    if provider == "bedrock":
        from pytest_evals.llm import bedrock_session

        _refuse_batch(config)

        # OPENAI_BASE_URL is the OpenAI path's: only an explicit URL overrides Bedrock's.
        base_url = pick("base_url") or None
        extra["aws_region"] = bedrock_session.resolve_region(pick("aws_region"))
        extra["bedrock_models"] = parse_model_aliases(_ini_lines(config, "evals_bedrock_models"))
        if not (_bool(pick("offline") or False) or _bool(pick("dry_run", ini=False) or False)):
            bedrock_session.check_credentials()
    temperature = pick("temperature")
    cache_dir = pick("cache_dir")
    cache = pick("cache")
    model = pick("model")
    own_prices = [*(_ini_lines(config, "evals_prices")), *(pick("price", ini=False) or [])]
    prices = build_price_table(own_prices)
    if not model and base_url and not _hosted(base_url):
        # A local server's model is not OpenAI's, whatever name the request carries:
        # only prices the user gave apply (an unknown price is shown as such).
        prices = dict(parse_own(own_prices))
    return LLMSettings(
        model=model or DEFAULT_MODEL,
        model_explicit=bool(model),
        configured_base_url=base_url,
        api_key=Secret(key) if key else None,
        api_key_env=key_env,
        timeout=number("timeout", float, 60.0),
        max_retries=number("max_retries", int, 6),
        max_tokens=number("max_tokens", int, None),
        temperature=0.0
        if temperature is None
        else _optional_number(temperature, float, "--evals-temperature"),
        temperature_explicit=config.getoption("evals_temperature", None) is not None,
        seed=number("model_seed", int, None),
        concurrency=number("concurrency", int, 32),
        cache_dir=Path(str(cache_dir)).expanduser() if cache_dir else default_cache_dir(),
        cache=True if cache is None else _bool(cache),
        refresh=_bool(pick("refresh", ini=False) or False),
        dry_run=_bool(pick("dry_run", ini=False) or False),
        force_offline=_bool(pick("offline") or False),
        transport=pick("transport") or "auto",
        provider=provider,  # type: ignore[arg-type]  # checked by __post_init__
        structured_output=_structured(pick("structured_output")),
        max_body_bytes=_optional_number(
            _pick(config, "evals_max_response_bytes", "evals_max_response_bytes"),
            int,
            "evals_max_response_bytes",
        )
        or DEFAULT_MAX_BODY_BYTES,
        prices=prices,
        outage_wait=number("outage_wait", float, 120.0),
        **extra,
    )


def _refuse_batch(config: pytest.Config) -> None:
    """Batch mode drives OpenAI's Batch API (files, batches, the API key as Bearer) at the
    endpoint: against Bedrock it would send the OpenAI key and every prompt to AWS."""
    flag = config.getoption("evals_batch", None)  # llm/batch/batch_options.py
    if flag is None:
        try:
            flag = config.getini("evals_batch")
        except (ValueError, KeyError):
            flag = False
    if _bool(flag or False):
        raise ValueError(
            "--evals-batch (ini evals_batch) cannot be used with --evals-provider bedrock: "
            "batch mode speaks OpenAI's Batch API only; drop one of the two options"
        )


def _structured(value: Any) -> str:
    text = str(value or "auto").strip().lower()
    if text not in ("auto", "off"):
        raise ValueError(f"evals_structured_output: expected auto or off, got {value!r}")
    return text


def _hosted(base_url: str) -> bool:
    from pytest_evals.llm.endpoint_probe import is_hosted

    return is_hosted(split_userinfo(base_url)[0])


def parse_own(items: list[str]) -> list[tuple[str, tuple[float, float]]]:
    return [parse_price(item) for item in items]


def _ini_lines(config: pytest.Config, name: str) -> list[str]:
    try:
        value = config.getini(name)
    except (ValueError, KeyError):
        return []
    return [str(v) for v in value or [] if str(v).strip()]
