"""AWS for the Bedrock provider: the region, the credentials check, botocore's session.

Credentials come from botocore's standard chain only (environment variables, a profile
in ``~/.aws/config`` / ``~/.aws/credentials``, SSO, web identity, container and
instance roles): there is no option or ini key for them, so they never sit in a
command line, a config file of ours or a report. Their values are registered with the
redaction layer as soon as they are known, so a server or a log record that quotes
one is masked like the OpenAI key (docs/llm.md, "AWS Bedrock").

botocore is imported only when the Bedrock provider is chosen.
"""

from __future__ import annotations

import os
import re
from typing import Any

from pytest_evals.hardening import redaction as redact

#: Where the region is looked for after ``--evals-aws-region`` / ``evals_aws_region``:
#: GOV.UK's evaluation names it ``AWS_BEDROCK_REGION``; the others are AWS's own.
REGION_ENV = ("AWS_BEDROCK_REGION", "AWS_REGION", "AWS_DEFAULT_REGION")

INSTALL_HINT = "pip install 'pytest-evals[bedrock]' (boto3)"

CHAIN = (
    "AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN), AWS_PROFILE with "
    "~/.aws/config or ~/.aws/credentials, SSO, web identity, a container or instance role"
)


def botocore_session(profile: str | None = None) -> Any:
    try:
        import botocore.session
    except ImportError:
        raise ValueError(f"--evals-provider bedrock needs AWS's SDK: {INSTALL_HINT}") from None
    return botocore.session.Session(profile=profile)


#: A region is one host name label (``eu-west-1``, ``us-gov-west-1``): it becomes part of
#: the endpoint's host and of every request's signature.
_REGION = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def resolve_region(explicit: str | None) -> str:
    """The region: the option or ini key, then the environment, then the profile's."""
    if explicit and str(explicit).strip():
        return _checked(str(explicit).strip(), "--evals-aws-region (ini evals_aws_region)")
    for name in REGION_ENV:
        value = os.environ.get(name, "").strip()
        if value:
            return _checked(value, f"the environment variable {name}")
    region = botocore_session().get_config_variable("region")
    if region:
        return _checked(str(region).strip(), "the AWS profile's region")
    raise ValueError(
        "--evals-provider bedrock: no AWS region; set --evals-aws-region (ini "
        f"evals_aws_region), or {', '.join(REGION_ENV)}, or a region in the AWS profile"
    )


def _checked(region: str, source: str) -> str:
    if not _REGION.fullmatch(region):
        raise ValueError(
            f"--evals-aws-region: {region!r} from {source} is not an AWS region name "
            "(lower-case letters, digits and hyphens, such as eu-west-1)"
        )
    return region


def register_credentials(credentials: Any) -> tuple[str, ...]:
    """Mask these credentials' values everywhere; returns them for comparison."""
    values = tuple(
        str(v) for v in (credentials.access_key, credentials.secret_key, credentials.token) if v
    )
    for value in values:
        redact.register(value)
    return values


def check_credentials() -> None:
    """Fail now, naming the chain, when botocore finds no credentials (a run whose every
    judge call would fail the same way). Their values are registered for redaction."""
    session = botocore_session()
    try:
        found = session.get_credentials()
        frozen = found.get_frozen_credentials() if found is not None else None
    except Exception as exc:  # partial credentials, a broken profile, SSO expired...
        raise ValueError(
            "--evals-provider bedrock: the AWS credentials could not be loaded: "
            f"{redact.redact(f'{type(exc).__name__}: {exc}')} (standard chain: {CHAIN})"
        ) from None
    if frozen is None or not frozen.access_key or not frozen.secret_key:
        raise ValueError(
            "--evals-provider bedrock: no AWS credentials found; botocore's standard chain "
            f"was searched: {CHAIN}. Credentials are never read from options or ini keys."
        )
    register_credentials(frozen)
