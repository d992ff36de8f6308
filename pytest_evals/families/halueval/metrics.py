"""HaluEval metrics: confusion counts, accuracy/precision/recall/F1 and trivial baselines.

Hallucination is the positive class: "Yes" on a hallucinated output is a true
positive. A verdict-less reply (strict or official parsing) is wrong whatever the
truth, so it is counted as the opposite of the truth (a false negative on a
hallucinated output, a false positive on a faithful one); that keeps
accuracy = (TP + TN) / n.

Items whose judge request failed after its retries have no reply. By default
(``accuracy_denominator: judged``) they leave every metric and are counted as
``errored``; with ``accuracy_denominator: all`` they are counted like a verdict-less
reply, so accuracy = correct / all items, the official script's figure.

``unparseable`` and ``unparseable_rate`` (of the judged items) sit at the top of the
tree too, so a gate ``unparseable_rate: {max: 0.05}`` needs no path.

The baselines are computed on the same items so a reader can judge a score:
always-Yes, always-No, and the length rule (a pair's longer output is called
hallucinated; for general items, a response longer than the median response of the
general items in the run). The length rule exploits a known artefact of the data: in
QA the hallucinated answer is the longer one in about 97% of pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_evals.families.halueval.items import TASK_TYPES
from pytest_evals.model.metric_value import Metric, MetricTree, count, proportion
from pytest_evals.stats import intervals as stats

#: What accuracy divides by: the items the judge answered, or all items of the suite.
Denominator = Literal["judged", "all"]


@dataclass(frozen=True)
class Outcome:
    """What aggregation needs of one judged item (from ``CaseResult.data``)."""

    task_type: str
    expected: str  # "yes" = hallucinated output shown / general label yes
    predicted: str | None
    unparseable: bool = False
    ambiguous: bool = False
    shown_len: int = 0
    other_len: int | None = None  # the other output of a pair; None for general
    #: The judge request failed after its retries (no reply, no verdict).
    errored: bool = False

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Outcome:
        return cls(
            task_type=str(data["task_type"]),
            expected=str(data["expected"]),
            predicted=data.get("predicted"),
            unparseable=bool(data.get("unparseable", False)),
            ambiguous=bool(data.get("ambiguous", False)),
            shown_len=int(data.get("shown_len", 0)),
            other_len=data.get("other_len"),
            errored=bool(data.get("errored", False)),
        )


@dataclass
class Confusion:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    def add(self, expected: str, predicted: str | None) -> None:
        if expected == "yes":
            if predicted == "yes":
                self.tp += 1
            else:
                self.fn += 1
        elif predicted == "no":
            self.tn += 1
        else:
            self.fp += 1

    @property
    def n(self) -> int:
        return self.tp + self.fp + self.fn + self.tn

    def counts(self) -> list[int]:
        return [self.tp, self.fp, self.fn, self.tn]


def f1_of(counts: Sequence[int]) -> float | None:
    tp, fp, fn = counts[0], counts[1], counts[2]
    denom = 2 * tp + fp + fn
    return None if denom == 0 else 2 * tp / denom


def f1_metric(c: Confusion, with_ci: bool = True) -> Metric:
    value = f1_of(c.counts())
    if value is None:
        return Metric(None, None, c.n, "0/0: no hallucinated outputs shown and none predicted", "score")
    # F1 is not a proportion: the Clopper-Pearson interval of TP / (TP + FP + FN) mapped
    # to F1 (stays wide at small n, where a bootstrap collapses when every item is right).
    ci = stats.f_beta_posterior(c.tp, c.fp, c.fn) if with_ci else None
    return Metric(value, ci, c.n, None, "score")


def confusion_metrics(c: Confusion, *, with_f1_ci: bool = True) -> MetricTree:
    return {
        "accuracy": proportion(c.tp + c.tn, c.n, "no judged items"),
        "precision": proportion(c.tp, c.tp + c.fp, "no output was called hallucinated"),
        "recall": proportion(c.tp, c.tp + c.fn, "no hallucinated output was shown"),
        "f1": f1_metric(c, with_f1_ci),
        "yes_rate": proportion(c.tp + c.fp, c.n, "no judged items"),
    }


def group_tree(outcomes: Sequence[Outcome], denominator: Denominator = "judged") -> MetricTree:
    """Metrics of one group; ``outcomes`` may include errored items (see the module doc)."""
    counted = outcomes if denominator == "all" else [o for o in outcomes if not o.errored]
    c = Confusion()
    for o in counted:
        c.add(o.expected, o.predicted)
    tree = confusion_metrics(c)
    tree["n"] = count(c.n)
    tree["confusion"] = {"tp": count(c.tp), "fp": count(c.fp), "fn": count(c.fn), "tn": count(c.tn)}
    tree["unparseable"] = count(sum(o.unparseable for o in outcomes))
    tree["ambiguous"] = count(sum(o.ambiguous for o in outcomes))
    tree["errored"] = count(sum(o.errored for o in outcomes))
    return tree


def unparseable_tree(outcomes: Sequence[Outcome]) -> MetricTree:
    """Top-level ``unparseable`` count and its rate among the items the judge answered."""
    answered = [o for o in outcomes if not o.errored]
    bad = sum(o.unparseable for o in answered)
    return {
        "unparseable": count(bad),
        "unparseable_rate": proportion(bad, len(answered), "no judge replies"),
    }


def _median(values: Sequence[int]) -> float | None:
    return stats.median([float(v) for v in values])


def length_rule(outcomes: Sequence[Outcome]) -> Callable[[Outcome], str]:
    general = [o.shown_len for o in outcomes if o.other_len is None]
    cut = _median(general)

    def predict(o: Outcome) -> str:
        if o.other_len is not None:
            return "yes" if o.shown_len > o.other_len else "no"
        return "yes" if cut is not None and o.shown_len > cut else "no"

    return predict


def baseline_rules(outcomes: Sequence[Outcome]) -> dict[str, Callable[[Outcome], str]]:
    return {
        "always_yes": lambda o: "yes",
        "always_no": lambda o: "no",
        "longer_is_hallucinated": length_rule(outcomes),
    }


def baseline_tree(outcomes: Sequence[Outcome], tasks: Iterable[str]) -> MetricTree:
    """Accuracy (Clopper-Pearson CI) and F1 (no CI, to keep aggregation cheap) of each rule."""
    out: MetricTree = {}
    for name, rule in baseline_rules(outcomes).items():
        node: MetricTree = {}
        groups: list[tuple[str, Sequence[Outcome]]] = [("overall", outcomes)]
        groups += [(t, [o for o in outcomes if o.task_type == t]) for t in tasks]
        for group, members in groups:
            c = Confusion()
            for o in members:
                c.add(o.expected, rule(o))
            node[group] = {
                "accuracy": proportion(c.tp + c.tn, c.n, "no judged items"),
                "f1": f1_metric(c, with_ci=False),
            }
        out[name] = node
    return out


def present_tasks(outcomes: Iterable[Outcome]) -> list[str]:
    seen = {o.task_type for o in outcomes}
    return [t for t in TASK_TYPES if t in seen]


def aggregate(
    outcomes: Sequence[Outcome], denominator: Denominator = "judged"
) -> tuple[MetricTree, dict[str, Any]]:
    """``{"overall": ..., "<task>": ..., "baselines": ..., "unparseable": ...}`` and tables."""
    tasks = present_tasks(outcomes)
    tree: MetricTree = {"overall": group_tree(outcomes, denominator)}
    for t in tasks:
        tree[t] = group_tree([o for o in outcomes if o.task_type == t], denominator)
    # The baselines need no judge: they are scored on the items the accuracy counts.
    counted = outcomes if denominator == "all" else [o for o in outcomes if not o.errored]
    tree["baselines"] = baseline_tree(counted, tasks)
    tree.update(unparseable_tree(outcomes))
    return tree, tables(tree, tasks)


def _value(tree: Any, *path: str) -> Any:
    node = tree
    for p in path:
        node = node[p]
    return node.value if isinstance(node, Metric) else None


def tables(tree: MetricTree, tasks: Sequence[str]) -> dict[str, Any]:
    """Rows for the report: one confusion row per task, one baseline row per task."""
    groups = ["overall", *tasks]
    confusion = []
    for g in groups:
        row: dict[str, Any] = {"task": g}
        for key in ("n", "accuracy", "precision", "recall", "f1", "unparseable", "errored"):
            row[key] = _value(tree, g, key)
        for key in ("tp", "fp", "fn", "tn"):
            row[key] = _value(tree, g, "confusion", key)
        confusion.append(row)
    baselines = []
    for g in groups:
        row = {"task": g, "judge": _value(tree, g, "accuracy")}
        for name in ("always_yes", "always_no", "longer_is_hallucinated"):
            row[name] = _value(tree, "baselines", name, g, "accuracy")
        baselines.append(row)
    return {"halueval_confusion": confusion, "halueval_accuracy_vs_baselines": baselines}
