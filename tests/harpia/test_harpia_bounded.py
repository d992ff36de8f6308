"""Means of bounded HarpIA scores keep their intervals inside the bounds (plain and -n 2)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import INSTANCES


def leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for key, value in tree.items():
        if isinstance(value, dict) and "kind" in value and "value" in value:
            yield prefix + key, value
        elif isinstance(value, dict):
            yield from leaves(value, f"{prefix}{key}.")


@pytest.mark.parametrize("args", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_bounded_means_stay_in_bounds(pytester: pytest.Pytester, write_harpia: Callable[..., Path], args: list[str]) -> None:
    # Two very different instances: a t interval of their mean spans far beyond [0, 1].
    two = [INSTANCES[5], {**INSTANCES[1], "actual-output": "Completely unrelated words here."}]
    write_harpia([{"id": "edit_distance"}, {"id": "bleu"}], two, name="two")
    run = pytester.runpytest_subprocess if args else pytester.runpytest
    result = run("-p", "no:cacheprovider", *args, "--evals-json", "s.json")
    assert result.ret in (0, 1), result.stdout.str()[-2000:]
    (suite,) = json.loads((pytester.path / "s.json").read_text(encoding="utf-8"))["suites"]
    found = {path: leaf for path, leaf in leaves(suite["metrics"])}
    checked = [p for p in found if p.endswith("similarity") or p == "per_instance.bleu.mean"]
    assert checked, sorted(found)
    for path in checked:
        leaf = found[path]
        assert leaf["n"] == 2 and "ci_low" in leaf, (path, leaf)
        assert 0.0 <= leaf["ci_low"] <= leaf["value"] <= leaf["ci_high"] <= 1.0, (path, leaf)
        assert leaf["ci_high"] - leaf["ci_low"] > 0.3, (path, leaf)  # two cases say little
