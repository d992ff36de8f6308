"""Shared by the Bedrock provider's tests: fake AWS credentials in a sealed environment,
the loopback fake of the Converse API, and a scan of written files for the credentials.

The environment is sealed so nothing of the developer's AWS set-up (profile, config
files, a real region or key) is read, and botocore never asks an instance-metadata
address (the only network is loopback).
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_evals.testing.fake_bedrock import FakeBedrock

ACCESS_KEY = "AKIAFAKEBEDROCK0TEST1"
SECRET_KEY = "fake/Secret+Key0123456789abcdefWXYZ5678"
SESSION_TOKEN = "FakeSessionToken//Bedrock+Test0123456789==tail"
CREDENTIALS = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)
MODEL = "eu.amazon.nova-pro-v1:0"

AWS_VARS = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
    "AWS_BEDROCK_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
)


def seal_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, credentials: bool = True) -> None:
    """No AWS state but what the test sets; the fake credentials when asked."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    if credentials:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        monkeypatch.setenv("AWS_SESSION_TOKEN", SESSION_TOKEN)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seal_aws(monkeypatch, tmp_path)


@pytest.fixture
def bedrock(aws_env: None) -> Iterator[FakeBedrock]:
    with FakeBedrock(responder="model-echo", require_access_key=ACCESS_KEY) as server:
        yield server


def credential_forms() -> list[str]:
    """Each credential as written in clear, and base64 (both alphabets, with and
    without padding) of it alone and of the pairs an encoder might put it in."""
    forms: set[str] = set(CREDENTIALS)
    texts = [*CREDENTIALS, f"{ACCESS_KEY}:{SECRET_KEY}"]
    for text in texts:
        raw = text.encode()
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(raw).decode()
            forms.update((encoded, encoded.rstrip("=")))
    return sorted(forms)


def files_holding_credentials(*roots: Path) -> list[tuple[str, str]]:
    """(file, form) for every file under the roots holding any credential form."""
    found = []
    forms = [f.encode() for f in credential_forms()]
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            for form in forms:
                if form in data:
                    found.append((str(path), form.decode()))
    return found
