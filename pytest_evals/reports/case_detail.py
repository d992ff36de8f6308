"""What a reviewer reads when a case row expands: one compact entry per case.

An entry is plain JSON (rendered in the browser with DOM text nodes only, so nothing in
it can become markup). ``details`` of any task are grouped into sections by their key
names (inputs, expected, actual, judge, other), long text is cut at a configurable
length, and a case gets either its full detail or a summary (scores, verdict and the
beginning of its inputs), which is what keeps a 35,000-case report small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_evals.output.strict_json import finite

Level = Literal["full", "summary"]

#: How many characters of each input a summarised case keeps.
SUMMARY_CHARS = 300
#: Lists longer than this are cut (with a note) in full detail.
MAX_ITEMS = 200
MAX_DEPTH = 8

_INPUT_KEYS = {
    "question", "input", "query", "user_query", "knowledge", "document", "dialogue_history",
    "context", "contexts", "structured_contexts", "system_prompt", "user_prompt", "instruction",
}
_EXPECTED_KEYS = {"ideal_answer", "right_answer", "reference", "references", "label", "gold"}
_ACTUAL_KEYS = {
    "llm_answer", "answer", "generated", "response", "output", "shown", "predicted",
    "prediction", "completion", "attack",
}
_JUDGE_KEYS = {
    "judge", "prompt", "messages", "reply", "raw_reply", "reasoning", "reason", "verdict",
    "verdicts", "claims", "statements", "truths", "metrics", "judge_prompt", "judge_reply",
    "explanation", "traceback",
}

SECTION_ORDER = ("Inputs", "Expected", "Actual", "Judge", "Other")


def section_of(key: str) -> str:
    low = key.lower().replace("-", "_")
    if low in _INPUT_KEYS:
        return "Inputs"
    if low.startswith("expected") or low in _EXPECTED_KEYS:
        return "Expected"
    if low.startswith("actual") or low in _ACTUAL_KEYS:
        return "Actual"
    if low.startswith("judge") or low in _JUDGE_KEYS:
        return "Judge"
    return "Other"


@dataclass
class Trim:
    """Cuts long values; counts what it cut so the entry can say so."""

    chars: int
    cuts: int = 0

    def value(self, value: Any, depth: int = 0) -> Any:
        if isinstance(value, str):
            if len(value) > self.chars:
                self.cuts += 1
                rest = len(value) - self.chars
                return f"{value[: self.chars]} [... {rest:,} more characters: see results.jsonl]"
            return value
        if depth >= MAX_DEPTH and isinstance(value, (Mapping, list, tuple)):
            self.cuts += 1
            return "[nested too deep to show: see results.jsonl]"
        if isinstance(value, Mapping):
            return {str(k): self.value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self.value(v, depth + 1) for v in value[:MAX_ITEMS]]
            if len(value) > MAX_ITEMS:
                self.cuts += 1
                items.append(f"[... {len(value) - MAX_ITEMS:,} more items: see results.jsonl]")
            return items
        return finite(value)


def score_rows(result: Mapping[str, Any], thresholds: Mapping[str, float]) -> list[list[Any]]:
    """[name, score, threshold, passed] per headline score.

    The threshold comes from the case's own data (``data.metrics.<name>.threshold``, as
    the RAG and HarpIA tasks record it) or else from the suite's ``metrics`` list.
    """
    rows: list[list[Any]] = []
    data = result.get("data") or {}
    per_metric = data.get("metrics") if isinstance(data, Mapping) else None
    for name, score in (result.get("scores") or {}).items():
        threshold: Any = None
        passed: Any = None
        own = per_metric.get(name) if isinstance(per_metric, Mapping) else None
        if isinstance(own, Mapping):
            threshold = own.get("threshold")
            passed = own.get("passed")
        if threshold is None:
            threshold = thresholds.get(name)
        if passed is None and isinstance(threshold, (int, float)) and isinstance(score, (int, float)):
            passed = score >= threshold
        rows.append([name, finite(score), finite(threshold), passed if isinstance(passed, bool) else None])
    return rows


def sections(details: Mapping[str, Any], trim: Trim) -> list[list[Any]]:
    grouped: dict[str, list[list[Any]]] = {name: [] for name in SECTION_ORDER}
    for key, value in details.items():
        if value is None:
            continue
        grouped[section_of(str(key))].append([str(key), trim.value(value)])
    return [[name, items] for name, items in grouped.items() if items]


def _is_chat(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(m, Mapping) and "role" in m and "content" in m for m in value)
    )


def preview(value: Any) -> Any:
    """A short form of a value, for a summarised case.

    Text keeps its beginning; a chat prompt keeps the end of its last message, where the
    case's own fields follow the (shared) instructions.
    """
    import json

    if isinstance(value, (bool, int, float)) or value is None:
        return finite(value)
    if _is_chat(value):
        last = str(value[-1]["content"])
        return last if len(last) <= SUMMARY_CHARS else "[...] " + last[-SUMMARY_CHARS:]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SUMMARY_CHARS else text[:SUMMARY_CHARS] + " [...]"


def build_entry(
    result: Mapping[str, Any],
    *,
    level: Level,
    field_chars: int,
    thresholds: Mapping[str, float],
    nodeid: str,
) -> dict[str, Any]:
    details = result.get("details") or {}
    if not isinstance(details, Mapping):
        details = {"details": details}
    entry: dict[str, Any] = {
        "id": result.get("case_id"),
        "node": nodeid,
        "suite": result.get("suite"),
        "task": result.get("task"),
        "src": result.get("source"),
        "st": result.get("status"),
        "lv": level,
        "sc": score_rows(result, thresholds),
    }
    if result.get("error_kind"):
        entry["ek"] = result["error_kind"]
    if result.get("message"):
        entry["msg"] = Trim(field_chars).value(str(result["message"]))
    usage = result.get("usage")
    if usage:
        entry["use"] = finite(dict(usage))
    if level == "full":
        trim = Trim(field_chars)
        entry["sec"] = sections(details, trim)
        if trim.cuts:
            entry["cut"] = trim.cuts
    else:
        grouped: dict[str, list[list[Any]]] = {name: [] for name in SECTION_ORDER}
        for key, value in details.items():
            if value is not None:
                grouped[section_of(str(key))].append([str(key), preview(value)])
        entry["sec"] = [[name, items] for name, items in grouped.items() if items]
    return entry
