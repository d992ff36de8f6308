"""Line numbers of a suite file's entries, for errors that name the line.

The suite's configuration arrives as plain values (the core read and validated it);
an assertion found malformed later is located again in the file's node tree.
"""

from __future__ import annotations

from pathlib import Path

import yaml


def _child(node: yaml.Node, step: str | int) -> tuple[yaml.Node, int] | None:
    """The node at ``step`` under ``node`` and its line (a key's own line for a mapping
    entry, where an editor should jump)."""
    if isinstance(step, int) and isinstance(node, yaml.SequenceNode):
        if 0 <= step < len(node.value):
            item = node.value[step]
            return item, item.start_mark.line + 1
        return None
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(step):
                return value, key.start_mark.line + 1
    return None


def line_of(path: Path, steps: list[str | int]) -> int | None:
    """1-based line of the node at ``steps`` (keys and list indexes) in the YAML file at
    ``path``: the deepest node found along the way; None if the file cannot be read."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8-sig"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for step in steps:
        found = _child(node, step)
        if found is None:
            break
        node, line = found
    return line
