"""Command-line options and ini keys of the LLM layer (group "evals")."""

from __future__ import annotations

import pytest

from pytest_evals.llm.settings import PROVIDERS, TRANSPORTS


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("evals", "LLM evaluation suites (pytest_evals)")
    add = group.addoption
    add(
        "--evals-model",
        metavar="NAME",
        help="default model of judges and generators (default gpt-4o-mini; ini evals_model)",
    )
    add(
        "--evals-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (ini evals_base_url; env "
        "OPENAI_BASE_URL); with --evals-provider bedrock, an endpoint override of bedrock-runtime",
    )
    add(
        "--evals-provider",
        choices=PROVIDERS,
        help="who answers: openai (any OpenAI-compatible endpoint, the default) or bedrock "
        "(AWS Bedrock's Converse API through boto3, credentials from AWS's standard chain; "
        "ini evals_provider)",
    )
    add(
        "--evals-aws-region",
        metavar="REGION",
        help="AWS region of the bedrock provider (ini evals_aws_region; env "
        "AWS_BEDROCK_REGION, AWS_REGION, AWS_DEFAULT_REGION, or the AWS profile's)",
    )
    add(
        "--evals-api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default OPENAI_API_KEY; ini evals_api_key_env)",
    )
    add(
        "--evals-timeout",
        metavar="SECONDS",
        help="hard timeout of one request attempt (default 60)",
    )
    add(
        "--evals-max-retries",
        metavar="N",
        help="retries after a 429/5xx/timeout/bad body (default 6)",
    )
    add(
        "--evals-outage-wait",
        metavar="SECONDS",
        help="how long an endpoint that stops answering (connection refused or reset, a "
        "local server restarting) is waited for before the remaining requests fail "
        "(default 120; one that never answered in this run: at most 10)",
    )
    add(
        "--evals-max-tokens",
        metavar="N",
        help="max_tokens sent with every request (default: not sent)",
    )
    add(
        "--evals-temperature",
        metavar="T",
        help="default temperature (default 0; 'none' to not send it); given here, it also "
        "wins over a suite's own temperature field",
    )
    add(
        "--evals-structured-output",
        choices=("auto", "off"),
        help="JSON judges ask for response_format (json_schema where the endpoint takes it, "
        "detected once per endpoint) (auto, default) or parse plain replies (off)",
    )
    add("--evals-model-seed", metavar="S", help="'seed' sent to the model (default: not sent)")
    add(
        "--evals-concurrency",
        type=int,
        metavar="C",
        help="model requests in flight per process (default 32)",
    )
    add(
        "--evals-transport",
        choices=TRANSPORTS,
        help="HTTP path: auto (default: lean for http://, aiohttp for https://), lean (a "
        "minimal HTTP/1.1 client, http:// only), aiohttp, process (aiohttp in a helper "
        "process on another core) or openai (the SDK)",
    )
    add(
        "--evals-cache-dir",
        metavar="DIR",
        help="response cache root, one sub-directory per task (default ~/.cache/pytest_evals; "
        "env PYTEST_EVALS_CACHE_DIR)",
    )
    for names, value in (
        (("--evals-cache", "--cache"), True),
        (("--no-evals-cache", "--no-cache"), False),
    ):
        add(
            *names,
            dest="evals_cache",
            action="store_true" if value else "store_false",
            default=None,
            # The short spellings are the HaluEval spec's; documented aliases (docs/llm.md).
            help="use the LLM response cache (default; --cache: alias)"
            if value
            else "bypass the LLM response cache (--no-cache: alias)",
        )
    add(
        "--evals-refresh",
        action="store_true",
        default=None,
        help="ask again and overwrite cached answers (answers written by this run are reused)",
    )
    add(
        "--evals-dry-run",
        action="store_true",
        default=None,
        help="send nothing: estimate tokens and cost of the uncached requests (cases are skipped)",
    )
    add(
        "--evals-price",
        action="append",
        metavar="MODEL=IN,OUT",
        help="price in USD per 1M input and output tokens (repeatable; extends the built-in table)",
    )
    add(
        "--evals-offline",
        action="store_true",
        default=None,
        help="ignore any endpoint: judge with the embedded local model",
    )
    ini = parser.addini
    ini("evals_model", "default model (see --evals-model)", default="")
    ini("evals_base_url", "OpenAI-compatible endpoint (see --evals-base-url)", default="")
    ini("evals_provider", "openai or bedrock (see --evals-provider)", default="")
    ini("evals_aws_region", "AWS region of the bedrock provider", default="")
    ini("evals_bedrock_models", "KEY=MODEL_ID lines: model keys the bedrock provider accepts",
        type="linelist", default=[])
    ini("evals_api_key_env", "environment variable holding the API key", default="")
    ini("evals_timeout", "seconds per request attempt", default="")
    ini("evals_max_retries", "retries per request", default="")
    ini("evals_outage_wait", "seconds a restarting endpoint is waited for", default="")
    ini("evals_max_tokens", "max_tokens of every request", default="")
    ini("evals_temperature", "default temperature", default="")
    ini("evals_model_seed", "seed sent to the model", default="")
    ini("evals_concurrency", "model requests in flight per process", default="")
    ini("evals_transport", "auto, lean, aiohttp, process or openai", default="")
    ini("evals_structured_output", "auto or off (see --evals-structured-output)", default="")
    ini("evals_max_response_bytes", "largest response body read from the endpoint (default 16 MiB)", default="")
    ini("evals_cache_dir", "response cache root", default="")
    ini("evals_cache", "use the response cache", type="bool", default=True)
    ini("evals_offline", "judge with the embedded local model", type="bool", default=False)
    ini("evals_prices", "MODEL=IN,OUT lines: USD per 1M tokens", type="linelist", default=[])
