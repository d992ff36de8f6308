"""The viewer file and the ``pytest-evals viz`` command, without a browser."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from pytest_evals import save_system_prompt_stats
from pytest_evals.cli.main import main
from pytest_evals.families.redteam.viewer import embed_json, render_html
from tests.redteam.samples import attack_dict

META = {"step": 0, "operation": "init"}


def test_embedded_json_cannot_end_its_script_block_and_stays_valid() -> None:
    payload = {"x": "</script><script>alert(1)</script>", "y": "<!-- a & b -->", "z": "line\u2028sep\u2029", "n": [1.5, None]}
    text = embed_json(payload)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(text) == payload


def test_the_page_is_self_contained_and_its_script_is_pinned_by_the_csp() -> None:
    page = render_html({"v": 1, "generated": "now", "source": "", "runs": []})
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page, re.DOTALL)
    assert [attrs.strip() for attrs, _ in scripts] == ['type="application/json" id="viz-data"', ""]
    code = scripts[1][1]
    digest = base64.b64encode(hashlib.sha256(code.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    assert f"script-src 'sha256-{digest}'" in csp.group(1)
    assert "default-src 'none'" in csp.group(1)
    # nothing is fetched: no external src/href, no innerHTML in the script
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "innerHTML" not in code and "insertAdjacentHTML" not in code and "document.write" not in code


def make_data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    save_system_prompt_stats(data / "pair" / "r1", 0, "p", [attack_dict("p", "u", [(0.5, 1.0, 6, -1.0)])], meta=META)
    return data


def test_viz_command_writes_the_file_and_names_skipped_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = make_data(tmp_path)
    bad = data / "pair" / "r1" / "seed_0" / "bad.json"
    bad.write_text(json.dumps({"system_prompt": "x", "meta": {"step": "soon", "operation": "a"}, "attacks": []}), encoding="utf-8")
    out = tmp_path / "viz.html"
    assert main(["viz", str(data), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "1 run(s), 1 system prompt(s), 1 file(s) skipped" in captured.out
    assert f"skipped {bad}: field 'meta.step':" in captured.err
    page = out.read_text(encoding="utf-8")
    payload = json.loads(re.search(r'id="viz-data">(.*?)</script>', page, re.DOTALL).group(1))  # type: ignore[union-attr]
    assert [r["id"] for r in payload["runs"]] == ["pair/r1"]
    assert payload["runs"][0]["issues"][0]["field"] == "meta.step"


def test_viz_command_on_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["viz", str(tmp_path / "nope"), "-o", str(tmp_path / "v.html")]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert not (tmp_path / "v.html").exists()


def test_viz_serve_serves_the_same_file_on_loopback(tmp_path: Path) -> None:
    data = make_data(tmp_path)
    out = tmp_path / "viz.html"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_evals.cli.main", "viz", str(data), "-o", str(out), "--serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and not line.startswith("serving"):
            line = proc.stdout.readline()
        url = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        assert url, line
        with urllib.request.urlopen(url.group(1), timeout=10) as resp:
            assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
            assert resp.read() == out.read_bytes()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(url.group(1) + "other", timeout=10)
        assert info.value.code == 404
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_viz_watch_with_no_run_exits_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    assert main(["viz", str(tmp_path / "data"), "--watch", "--port", "0", "-o", str(tmp_path / "v.html")]) == 1
    assert not (tmp_path / "v.html").exists()
    assert "no runs found under" in capsys.readouterr().err


def test_the_live_page_may_fetch_from_its_own_origin_only_when_watching() -> None:
    still = render_html({"v": 2, "generated": "now", "source": "", "runs": [], "watch": None})
    live = render_html({"v": 2, "generated": "now", "source": "", "runs": [], "watch": 2.0})
    assert "connect-src" not in still
    assert "connect-src 'self'" in live
