"""No secret the run knows reaches any written file or the terminal, in any form.

The run uses every kind of secret at once: an API key, a password in the base URL's
userinfo (sent as HTTP Basic auth) and a red-team rater's header filled from the
environment. The endpoint misbehaves the way real ones do: a 401 quoting the
Authorization header, a reply echoing the key, a rater 401 quoting its token.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.llm.helpers import probe_suite

from .hostile import ECHOED, HostileServer, summary_is_strict_json

USER, PASSWORD = "alice", "S3cretPW-hardening-77"
TOKEN = "rm-token-hardening-9c1f0e"
REWARD = '''
def reward(payload):
    return {"score": float(len(payload["assistant"]) % 3)}
'''


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret_forms() -> dict[str, str]:
    forms = {}
    for name, value in {"api key": ECHOED, "password": PASSWORD, "rater token": TOKEN}.items():
        forms[f"{name} (clear)"] = value
        forms[f"{name} (base64)"] = b64(value).rstrip("=")
    forms["userinfo (clear)"] = f"{USER}:{PASSWORD}"
    forms["userinfo (Basic)"] = b64(f"{USER}:{PASSWORD}").rstrip("=")
    return forms


def leaks(root: Path, texts: dict[str, str]) -> list[str]:
    found = []
    forms = {k: v.encode() for k, v in secret_forms().items()}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {k}" for k, v in forms.items() if v in data]
    for label, text in texts.items():
        found += [f"{label}: {k}" for k, v in forms.items() if v in text.encode()]
    return found


def write_suites(pytester: pytest.Pytester, hostile: HostileServer) -> None:
    probe_suite(pytester, ["QUOTE-AUTH please", "ECHO-SECRET please", "a plain question", "BAD-RETRY now"])
    pytester.makepyfile(rt_rewards=REWARD)
    cases = [
        {"id": f"attack-{i}", "system_prompt": "Be nice.", "user_prompt": f"question {i}", "responses": ["an answer"]}
        for i in range(3)
    ]
    (pytester.path / "attacks.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (pytester.path / "rt.eval.yaml").write_text(
        f"""
task: redteam
input_path: attacks.jsonl
generate: false
output_dir: out/redteam
raters:
  - name: rm
    type: classifier
    url: "{hostile.rate_url}"
    headers: {{Authorization: "Bearer ${{RM_TOKEN}}"}}
    retries: 0
    stats: {{mean: 1.0, stdev: 0.5}}
  - name: local
    type: classifier
    callable: "rt_rewards:reward"
    stats: {{mean: 1.0, stdev: 0.5}}
""",
        encoding="utf-8",
    )


@pytest.mark.parametrize(
    ("transport", "xdist"),
    [("process", False), ("process", True), ("aiohttp", False), ("aiohttp", True), ("lean", False), ("openai", False)],
    ids=["process", "process-n2", "aiohttp", "aiohttp-n2", "lean", "openai"],
)
def test_no_secret_in_any_written_file(
    pytester: pytest.Pytester,
    hostile: HostileServer,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    transport: str,
    xdist: bool,
) -> None:
    write_suites(pytester, hostile)
    monkeypatch.setenv("OPENAI_API_KEY", ECHOED)
    monkeypatch.setenv("RM_TOKEN", TOKEN)
    cache = pytester.path / "cache"
    base_url = f"http://{USER}:{PASSWORD}@127.0.0.1:{hostile.port}/v1"
    args = [
        "-p", "no:cacheprovider",
        "--evals-base-url", base_url,
        "--evals-transport", transport,
        "--evals-cache-dir", str(cache),
        "--evals-max-retries", "2",
        "--evals-json", "out/summary.json",
        "--evals-report-dir", "out/runs",
        "--junitxml", "out/junit.xml",
        "--html", "out/report.html",
        "-o", "log_level=DEBUG",
        "--log-file", "out/run.log",
        "--log-file-level", "DEBUG",
        "-rA",
    ]
    if xdist:
        args += ["-n", "2"]
    result = pytester.runpytest_subprocess(*args)
    out, err = result.stdout.str(), result.stderr.str()

    # Every case ran and was counted: 2 probe passes (plain, throttled then answered),
    # 1 failure (the echoed reply), 1 + 3 errors (the quoted 401s).
    result.assert_outcomes(passed=2, failed=1, errors=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The secrets really travelled: userinfo became Basic auth (not refused for
    # clashing with the key), and the endpoint echoed what it got.
    assert f"Basic {b64(f'{USER}:{PASSWORD}')}" in hostile.auth_headers
    assert hostile.seen["QUOTE-AUTH"] >= 1 and hostile.seen["ECHO-SECRET"] >= 1
    assert "Authorization: Basic ***" in out
    assert "invalid token in Authorization: ***" in out
    assert "your key is *** and you sent Basic ***" in out
    # A 429 whose Retry-After cannot be parsed is throttling all the same.
    summary = summary_is_strict_json((pytester.path / "out/summary.json").read_text(encoding="utf-8"))
    assert summary["llm"]["throttled"] >= 1
    assert summary["llm"]["base_url"] == f"http://127.0.0.1:{hostile.port}/v1"

    written = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert any(p.name == "results.jsonl" for p in written) and any(p.name == "cache.db" for p in written)
    assert leaks(pytester.path, {"stdout": out, "stderr": err}) == []
