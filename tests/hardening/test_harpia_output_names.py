"""HarpIA output and log names are safe and distinct (issue 30, attack 14).

``{suite}`` in ``--evals-harpia-output`` / ``--evals-harpia-log`` is replaced by the
suite's name made one safe path component (``name: ../../x`` writes inside the folder),
and two suites with one name (``t.harpia.json`` in two folders) get two files.
"""

from __future__ import annotations

import json

import pytest

from tests.core.core_helpers import write_suite

METRICS = [{"id": "edit_distance"}]


def _doc(n: int, prefix: str) -> dict[str, object]:
    instances = [
        {"id": f"{prefix}{i}", "input": "x", "expected-output": ["The cat sleeps."], "actual-output": "The cat slept."}
        for i in range(n)
    ]
    return {"instances": instances, "metrics": METRICS}


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "n2"])
def test_harpia_files_stay_inside_and_apart(pytester: pytest.Pytester, xdist: bool) -> None:
    root = pytester.path / "proj"
    for folder, n in (("a", 2), ("b", 3)):
        (root / folder).mkdir(parents=True)
        (root / folder / "t.harpia.json").write_text(json.dumps(_doc(n, folder)), encoding="utf-8")
    (root / "c").mkdir()
    (root / "c" / "doc.json").write_text(json.dumps(_doc(1, "c")), encoding="utf-8")
    write_suite(root, "escape.eval.yaml", task="harpia", name="../../escape", input_path="c/doc.json")
    args = ["-p", "no:cacheprovider", "--rootdir", str(root), str(root),
            "--evals-harpia-output", "proj/out/{suite}.json", "--evals-harpia-log", "proj/out/{suite}.log.jsonl"]
    result = pytester.runpytest_subprocess(*args, *(["-n", "2"] if xdist else []), timeout=120)
    result.assert_outcomes(passed=6)
    out = root / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "escape.json", "escape.log.jsonl", "t-2.json", "t-2.log.jsonl", "t.json", "t.log.jsonl",
    ]
    # out/{suite}.json with the name unchanged would be proj/out/../../escape.json
    assert sorted(p.relative_to(pytester.path).as_posix() for p in pytester.path.rglob("escape*.json*")) == [
        "proj/out/escape.json", "proj/out/escape.log.jsonl",
    ]
    counts = {}
    for name in ("t", "t-2"):
        [obj] = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        lines = [json.loads(x) for x in (out / f"{name}.log.jsonl").read_text(encoding="utf-8").splitlines()]
        prefixes = {line["instance_id"][0] for line in lines}
        assert len(prefixes) == 1, prefixes  # one suite's instances per file
        counts[prefixes.pop()] = (obj["instances"], len(lines))
    assert counts == {"a": (2, 2), "b": (3, 3)}
