"""How metric trees are walked and their numbers shown, for every output of a run.

The terminal summary, the HTML report, the run folder's CSV files and the Markdown
summary all list a suite's metrics with their intervals and gates. They walk the tree
and format the numbers here, so a value reads the same in each of them. Typed trees
(:class:`pytest_evals.model.metric_value.Metric` leaves) and their JSON form (``{"value": ...,
"kind": ...}`` leaves) go through the same walker. Standard library only: the terminal
imports this on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

G = TypeVar("G")

#: Gate paths may end in an interval bound; such a gate belongs to the metric above it.
BOUND_SUFFIXES = (".ci_low", ".ci_high")


# -- walking ------------------------------------------------------------------------------


def is_json_leaf(node: Any) -> bool:
    """A metric in a JSON metric tree (what ``Metric.to_json`` writes)."""
    return isinstance(node, Mapping) and "value" in node and "kind" in node


def walk(
    tree: Mapping[str, Any], prefix: str = "", is_leaf: Callable[[Any], bool] = is_json_leaf
) -> Iterator[tuple[str, Any]]:
    """(dotted path, leaf) pairs of a metric tree, in insertion order.

    Inner nodes are mappings that are not leaves; anything else is skipped.
    """
    for key, node in tree.items():
        path = f"{prefix}{key}"
        if is_leaf(node):
            yield path, node
        elif isinstance(node, Mapping):
            yield from walk(node, path + ".", is_leaf)


# -- numbers ------------------------------------------------------------------------------


def metric_value(value: float | None, kind: str | None, reason: str | None = None) -> str:
    """A metric's value: three decimals, counts as integers, or why it is undefined."""
    if value is None:
        why = str(reason or "").removeprefix("undefined: ")
        return f"undefined ({why})" if why else "undefined"
    if kind == "count":
        return f"{int(value)}"
    return f"{value:.3f}"


def interval(low: float | None, high: float | None) -> str:
    """A 95% interval as ``[low, high]``; empty when either bound is missing."""
    if low is None or high is None:
        return ""
    return f"[{low:.3f}, {high:.3f}]"


def metric_interval(value: float | None, kind: str | None, low: float | None, high: float | None) -> str:
    """The interval shown beside a metric: none for counts and undefined values."""
    if value is None or kind == "count":
        return ""
    return interval(low, high)


def gate_value(value: float | None) -> str:
    """The value a gate read (four significant digits, as its failure message says)."""
    return "undefined" if value is None else f"{value:.4g}"


def threshold(value: float) -> str:
    return f"{value:g}"


def sign(op: str, unicode: bool = False) -> str:
    if unicode:
        return "≥" if op == "min" else "≤"
    return ">=" if op == "min" else "<="


# -- gates --------------------------------------------------------------------------------


def _field(gate: Any, name: str) -> Any:
    """A field of a gate given as a GateResult or as its JSON dict."""
    return gate[name] if isinstance(gate, Mapping) else getattr(gate, name)


def gate_base(metric: str) -> str:
    """The metric a gate path belongs to (``x.ci_low`` -> ``x``)."""
    return metric.rsplit(".", 1)[0] if metric.endswith(BOUND_SUFFIXES) else metric


def gates_by_metric(gates: Iterable[G]) -> dict[str, list[G]]:
    """Gates keyed by the metric they read, in their order."""
    out: dict[str, list[G]] = {}
    for g in gates:
        out.setdefault(gate_base(str(_field(g, "metric"))), []).append(g)
    return out


def gate_requirement(path: str, gate: Any, unicode: bool = False) -> str:
    """What a gate asks of the metric at ``path``: ``>= 0.8`` or ``ci_low >= 0.8``."""
    target = str(_field(gate, "metric"))[len(path) + 1 :]
    required = f"{sign(str(_field(gate, 'op')), unicode)} {threshold(_field(gate, 'threshold'))}"
    return f"{target} {required}" if target else required


def gate_cells(path: str, gates: Iterable[Any], unicode: bool = False) -> tuple[str, str]:
    """(requirements, result) of a metric's gates: result is "pass", "FAIL" or ""."""
    parts: list[str] = []
    result = ""
    for g in gates:
        parts.append(gate_requirement(path, g, unicode))
        result = "FAIL" if (result == "FAIL" or not _field(g, "passed")) else "pass"
    return ", ".join(parts), result


def gate_line(gate: Any) -> str:
    """One gate in full (``recall >= 0.8``), as the CSV files list them."""
    return f"{_field(gate, 'metric')} {sign(str(_field(gate, 'op')))} {threshold(_field(gate, 'threshold'))}"


# -- regression against a baseline ---------------------------------------------------------


def change(baseline: float | None, current: float | None, diff: float | None) -> str:
    """``0.8000 → 0.7500 (-0.0500)``: a metric of the baseline and of this run."""
    if diff is None or baseline is None or current is None:
        return ""
    return f"{baseline:.4f} → {current:.4f} ({diff:+.4f})"


def signed_interval(low: float | None, high: float | None) -> str:
    """The interval of a change, signs shown."""
    if low is None or high is None:
        return ""
    return f"[{low:+.4f}, {high:+.4f}]"


def p_value(p: float | None) -> str:
    return "" if p is None else f"{p:.3g}"


def margin(op: str, value: float) -> str:
    """A regression gate: ``max drop 0.02``."""
    return f"{op.replace('_', ' ')} {value:g}"


# -- a suite's population ---------------------------------------------------------------

#: Why cases of a suite were not measured, as the JSON summary's ``cases`` names them.
UNMEASURED = (("deselected", "deselected"), ("sampled_out", "sampled out"), ("skipped", "skipped"), ("not_run", "not run"))


def population_text(cases: Mapping[str, Any]) -> str:
    """``90 of 100 cases run (deselected 10)``: what a partial suite's verdict covers,
    from its ``cases`` counts (JSON form; ``sampled`` is true when the command line
    sampled it without a known population)."""
    why = {label: int(cases.get(key) or 0) for key, label in UNMEASURED}
    why = {label: n for label, n in why.items() if n}
    ran = int(cases.get("total") or 0) - int(cases.get("skipped") or 0)
    whole = cases.get("population")
    if whole is None:
        whole = ran + sum(why.values())
    parts = [f"{label} {n}" for label, n in why.items()]
    if cases.get("sampled") and "sampled out" not in why:
        parts.append("sampled by the command line")
    return f"{ran} of {whole} cases run ({', '.join(parts)})"


def regression_result(status: str | None, verdict: str | None) -> str:
    """A regression gate's outcome in words: its verdict (regression, no regression,
    inconclusive) and whether it fails the suite; "not checked" for a gate that failed
    without a verdict (unusable or mismatched baseline, metric undefined)."""
    if verdict == "inconclusive":
        return "inconclusive (fails: --evals-fail-inconclusive)" if status == "failed" else "inconclusive (passes)"
    if verdict in ("regression", "no regression"):
        return str(verdict)
    if status == "skipped":
        return "skipped"
    return "not checked" if status == "failed" else str(status or "")
