"""Plots of a suite, drawn server-side with matplotlib (Agg) into SVG and PNG bytes.

Which plots a suite gets is read off its summary, whatever the task:

- a confusion matrix for ``tables.confusion_matrix`` (multiclass) and for every node of
  the metric tree holding ``tp``/``fp``/``fn``/``tn`` counts (binary; HaluEval has one
  per task type);
- accuracy bars with their 95% intervals for every node whose children each have an
  ``accuracy`` (HaluEval's task types, per-guardrail results), with the trivial
  baselines of a sibling ``baselines`` node drawn beside them;
- a histogram per case score that is not just 0/1 (RAG judge metrics, HarpIA metrics,
  red-team adversarial scores), with the metric's threshold marked.

Output is deterministic (no dates, fixed SVG ids), so plain and xdist runs match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_evals.model.value_format import is_json_leaf

MAX_PANELS = 6
MAX_BARS = 24
MAX_LABELS = 30


@dataclass
class Plot:
    name: str
    title: str
    svg: bytes = b""
    png: bytes = b""


@dataclass
class Panel:
    title: str
    labels: list[str]
    matrix: list[list[int]]
    axis_names: tuple[str, str] = ("expected", "actual")


@dataclass
class BarSeries:
    name: str
    values: list[float | None]
    lows: list[float | None] = field(default_factory=list)
    highs: list[float | None] = field(default_factory=list)


@dataclass
class BarChart:
    path: str
    groups: list[str]
    series: list[BarSeries]
    #: (group index, threshold) for gates on a group's accuracy.
    gates: list[tuple[int, float]] = field(default_factory=list)


_is_leaf = is_json_leaf


def _nodes(tree: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Mapping[str, Any]]]:
    """Every inner node of a JSON metric tree, with its dotted path ("" for the root)."""
    yield prefix, tree
    for key, child in tree.items():
        if isinstance(child, Mapping) and not _is_leaf(child):
            yield from _nodes(child, f"{prefix}.{key}" if prefix else str(key))


def _value(node: Any) -> float | None:
    if _is_leaf(node) and isinstance(node.get("value"), (int, float)):
        return float(node["value"])
    return None


# -- what to plot ---------------------------------------------------------------------


def confusion_panels(summary: Mapping[str, Any]) -> list[Panel]:
    panels: list[Panel] = []
    table = (summary.get("tables") or {}).get("confusion_matrix")
    if isinstance(table, Mapping) and table.get("labels") and table.get("matrix"):
        labels = [str(x) for x in table["labels"]][:MAX_LABELS]
        n = len(labels)
        matrix = [[int(c) for c in row[:n]] for row in table["matrix"][:n]]
        axes = (str(table.get("rows", "expected")), str(table.get("columns", "actual")))
        panels.append(Panel("confusion matrix", labels, matrix, axes))
    for path, node in _nodes(summary.get("metrics") or {}):
        counts = [_value(node.get(k)) for k in ("tp", "fn", "fp", "tn")]
        if any(c is None for c in counts):
            continue
        tp, fn, fp, tn = (int(c or 0) for c in counts)
        title = path.removesuffix(".confusion").removesuffix("confusion") or "all cases"
        panels.append(Panel(title, ["positive", "negative"], [[tp, fn], [fp, tn]], ("expected", "predicted")))
    return panels[:MAX_PANELS]


def accuracy_charts(summary: Mapping[str, Any]) -> list[BarChart]:
    tree = summary.get("metrics") or {}
    gates = {g["metric"]: g for g in summary.get("gates") or [] if g.get("op") == "min"}
    charts: list[BarChart] = []
    for path, node in _nodes(tree):
        if path.split(".")[0] == "baselines":
            continue
        groups = [k for k, v in node.items() if isinstance(v, Mapping) and _is_leaf(v.get("accuracy"))]
        if len(groups) < 2:
            continue
        groups = groups[:MAX_BARS]
        main = BarSeries("accuracy", [], [], [])
        for g in groups:
            leaf = node[g]["accuracy"]
            main.values.append(_value(leaf))
            main.lows.append(leaf.get("ci_low"))
            main.highs.append(leaf.get("ci_high"))
        chart = BarChart(path or "all", groups, [main])
        baselines = node.get("baselines")
        if isinstance(baselines, Mapping):
            for rule, per_group in baselines.items():
                if not isinstance(per_group, Mapping):
                    continue
                values = [_value((per_group.get(g) or {}).get("accuracy")) for g in groups]
                if any(v is not None for v in values):
                    chart.series.append(BarSeries(str(rule), values))
        for i, g in enumerate(groups):
            gate = gates.get(f"{path}.{g}.accuracy" if path else f"{g}.accuracy")
            if gate is not None:
                chart.gates.append((i, float(gate["threshold"])))
        charts.append(chart)
    return charts[:MAX_PANELS]


def score_values(results: Iterable[Any]) -> dict[str, list[float]]:
    """Per score name, the defined scores of the scored cases (light results)."""
    values: dict[str, list[float]] = {}
    for r in results:
        if r.status not in ("passed", "failed"):
            continue
        for name, score in r.scores.items():
            if isinstance(score, (int, float)) and not isinstance(score, bool) and score == score:
                values.setdefault(name, []).append(float(score))
    # A 0/1 score (classification correctness) is already shown by accuracy and counts.
    return {k: v for k, v in values.items() if v and not set(v) <= {0.0, 1.0}}


def score_thresholds(summary: Mapping[str, Any], results: Iterable[Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    config = summary.get("config") or {}
    for spec in config.get("metrics") or []:
        if isinstance(spec, Mapping) and isinstance(spec.get("threshold"), (int, float)):
            out[str(spec.get("name"))] = float(spec["threshold"])
    for r in results:
        per = (r.data or {}).get("metrics")
        if isinstance(per, Mapping):
            for name, m in per.items():
                if isinstance(m, Mapping) and isinstance(m.get("threshold"), (int, float)):
                    out.setdefault(str(name), float(m["threshold"]))
        if len(out) >= len(r.scores):
            break
    return out


# -- drawing --------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _render(fig: Any, name: str, title: str) -> Plot:
    import io

    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": f"pytest-evals-{name}", "svg.fonttype": "path"}):
        svg = io.BytesIO()
        fig.savefig(svg, format="svg", metadata={"Date": None}, bbox_inches="tight")
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=100, metadata={"Software": None}, bbox_inches="tight")
    plt.close(fig)
    return Plot(name, title, svg.getvalue(), png.getvalue())


def _short(label: str, width: int = 18) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"


def draw_confusion(panels: Sequence[Panel], suite: str) -> Plot:
    plt = _pyplot()
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    big = max(len(p.labels) for p in panels)
    size = max(3.2, min(9.0, 0.55 * big + 2.2))
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(panels) :]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels, strict=False):
        n = len(panel.labels)
        ax.imshow(panel.matrix, cmap="Blues", vmin=0)
        peak = max((c for row in panel.matrix for c in row), default=0)
        for i in range(n):
            for j in range(n):
                value = panel.matrix[i][j]
                colour = "white" if peak and value > peak / 2 else "black"
                ax.text(j, i, str(value), ha="center", va="center", color=colour, fontsize=9)
        ticks = [_short(x) for x in panel.labels]
        ax.set_xticks(range(n), ticks, rotation=45 if n > 2 else 0, ha="right" if n > 2 else "center")
        ax.set_yticks(range(n), ticks)
        ax.set_xlabel(panel.axis_names[1])
        ax.set_ylabel(panel.axis_names[0])
        ax.set_title(_short(panel.title, 40))
    fig.suptitle(f"{suite}: confusion matrix", fontsize=11)
    return _render(fig, "confusion_matrix", "Confusion matrix")


def draw_accuracy(chart: BarChart, suite: str, name: str) -> Plot:
    plt = _pyplot()
    n = len(chart.groups)
    k = len(chart.series)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.5 + n * (0.35 + 0.25 * k)), 3.6), layout="constrained")
    width = 0.8 / k
    for s_index, series in enumerate(chart.series):
        xs = [i + (s_index - (k - 1) / 2) * width for i in range(n)]
        heights = [v if v is not None else 0.0 for v in series.values]
        errors = None
        if series.lows and any(lo is not None for lo in series.lows):
            lower = [max(0.0, (v or 0.0) - lo) if lo is not None else 0.0 for v, lo in zip(series.values, series.lows, strict=True)]
            upper = [max(0.0, hi - (v or 0.0)) if hi is not None else 0.0 for v, hi in zip(series.values, series.highs, strict=True)]
            errors = [lower, upper]
        alpha = 1.0 if s_index == 0 else 0.55
        ax.bar(xs, heights, width=width * 0.95, yerr=errors, capsize=3, label=series.name, alpha=alpha)
        if s_index == 0:
            for x, v in zip(xs, series.values, strict=True):
                ax.text(x, 0.02, "n/a" if v is None else f"{v:.2f}", ha="center", va="bottom", fontsize=8, rotation=90)
    for i, threshold in chart.gates:
        ax.hlines(threshold, i - 0.45, i + 0.45, colors="red", linestyles="dashed", label="gate")
    ax.set_xticks(range(n), [_short(g) for g in chart.groups], rotation=30 if n > 4 else 0, ha="right" if n > 4 else "center")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_title(f"{suite}: accuracy by {chart.path if chart.path != 'all' else 'group'}", fontsize=10)
    if k > 1 or chart.gates:
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=True))
        ax.legend(unique.values(), unique.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _render(fig, name, "Accuracy by group" if chart.path == "all" else f"Accuracy by {chart.path}")


def draw_histograms(values: Mapping[str, Sequence[float]], thresholds: Mapping[str, float], suite: str) -> Plot:
    plt = _pyplot()
    names = list(values)[: MAX_PANELS * 2]
    cols = min(3, len(names))
    rows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 2.9 * rows), squeeze=False, layout="constrained")
    for ax in axes.flat[len(names) :]:
        ax.axis("off")
    for ax, name in zip(axes.flat, names, strict=False):
        data = values[name]
        ax.hist(data, bins=min(20, max(5, len(set(data)))), color="#4878a8", edgecolor="white")
        if name in thresholds:
            ax.axvline(thresholds[name], color="red", linestyle="dashed", label=f"threshold {thresholds[name]:g}")
            ax.legend(fontsize=7)
        ax.set_title(f"{_short(name, 30)} (n={len(data)})", fontsize=9)
        ax.set_xlabel("score")
        ax.set_ylabel("cases")
    fig.suptitle(f"{suite}: score distributions", fontsize=11)
    return _render(fig, "score_histograms", "Score distributions")


def suite_plots(summary: Mapping[str, Any], results: Sequence[Any]) -> list[Plot]:
    """Every plot of one suite (an empty list when it has nothing to draw)."""
    name = str(summary.get("name") or summary.get("suite"))
    plots: list[Plot] = []
    panels = confusion_panels(summary)
    if panels:
        plots.append(draw_confusion(panels, name))
    for i, chart in enumerate(accuracy_charts(summary)):
        slug = "".join(c if c.isalnum() else "_" for c in chart.path)
        plots.append(draw_accuracy(chart, name, f"accuracy_{slug}" if i or chart.path != "all" else "accuracy"))
    values = score_values(results)
    if values:
        plots.append(draw_histograms(values, score_thresholds(summary, results), name))
    return plots
