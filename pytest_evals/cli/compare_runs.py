"""``pytest-evals compare A B``: are two runs on the same items really different?

Each run (``results.jsonl`` of a ``--evals-report-dir`` folder, the folder itself, or a
``--evals-json`` summary: read by ``output/run_reader.py``, as ``--evals-baseline`` is)
may be of any task whose cases pass or fail. Items present and judged in both runs are paired. The report gives both
accuracies, their difference B - A with a 95% interval for paired proportions
(Tango's score interval with a continuity correction, the one the regression gates
print: :mod:`pytest_evals.stats.paired_proportions`), and the exact McNemar test on the
discordant pairs (scipy's binomial test): ``b`` items only A got right, ``c`` items only
B got right. With ``--group-by FIELD`` the same figures are given per value of that
field of each result's ``data``; without it, per value of the field the results' task
family declares (``GROUP_FIELDS``), if it declares one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pytest_evals.output import strict_json as strictjson
from pytest_evals.output.run_reader import Pair, RunFileError, load_outcomes, pair, read_run
from pytest_evals.stats import intervals as stats
from pytest_evals.stats.paired_proportions import paired_proportion_ci


@dataclass(frozen=True)
class PairedComparison:
    n: int
    both_right: int
    only_a: int  # b: A right, B wrong
    only_b: int  # c: A wrong, B right
    both_wrong: int
    accuracy_a: float | None
    accuracy_b: float | None
    difference: float | None  # accuracy B - accuracy A
    ci_low: float | None
    ci_high: float | None
    p_value: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def compare_pairs(pairs: Sequence[tuple[bool, bool]]) -> PairedComparison:
    a = sum(1 for x, y in pairs if x and y)
    b = sum(1 for x, y in pairs if x and not y)
    c = sum(1 for x, y in pairs if not x and y)
    d = sum(1 for x, y in pairs if not x and not y)
    return compare_counts(a, b, c, d)


def compare_counts(a: int, b: int, c: int, d: int) -> PairedComparison:
    """Both right ``a``, only A right ``b``, only B right ``c``, both wrong ``d``."""
    n = a + b + c + d
    ci = paired_proportion_ci(a, b, c, d)
    return PairedComparison(
        n=n,
        both_right=a,
        only_a=b,
        only_b=c,
        both_wrong=d,
        accuracy_a=(a + b) / n if n else None,
        accuracy_b=(a + c) / n if n else None,
        difference=(c - b) / n if n else None,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
        p_value=stats.mcnemar_exact(b, c),
    )


def _fmt(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "undefined"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def render(rows: list[tuple[str, PairedComparison]], a_name: str, b_name: str, unpaired: dict[str, int]) -> str:
    lines = [f"A: {a_name}", f"B: {b_name}", ""]
    header = f"{'items':14} {'n':>6} {'acc A':>7} {'acc B':>7} {'B - A':>8} {'95% CI':>18} {'only A':>7} {'only B':>7} {'McNemar p':>10}"
    lines.append(header)
    for label, r in rows:
        ci = f"[{_fmt(r.ci_low, True)}, {_fmt(r.ci_high, True)}]" if r.ci_low is not None else ""
        lines.append(
            f"{label:14} {r.n:>6} {_fmt(r.accuracy_a):>7} {_fmt(r.accuracy_b):>7} "
            f"{_fmt(r.difference, True):>8} {ci:>18} {r.only_a:>7} {r.only_b:>7} {r.p_value:>10.4g}"
        )
    skipped = {k: v for k, v in unpaired.items() if v}
    if skipped:
        lines.append("")
        lines.append("not paired: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in skipped.items()))
    return "\n".join(lines)


def compare_groups(pairs: Sequence[Pair]) -> list[tuple[str, PairedComparison]]:
    """"all" and one row per group (sorted), counted in one pass over the pairs."""
    cells: dict[str, list[int]] = {}
    for p in pairs:
        for label in ("all", p.group) if p.group else ("all",):
            row = cells.setdefault(label, [0, 0, 0, 0])
            row[(0 if p.b else 1) if p.a else (2 if p.b else 3)] += 1
    ordered = ["all", *sorted(k for k in cells if k != "all")]
    return [(label, compare_counts(*cells[label])) for label in ordered if label in cells]


def by_variant(pairs: list[Pair]) -> list[Pair]:
    """A run of a suite with variants (every id ``case[variant]``, docs/variants.md):
    one row per variant (and per group within it), never the variants pooled alone."""
    if not pairs or not all(p.case_id.endswith("]") and "[" in p.case_id for p in pairs):
        return pairs
    out = []
    for p in pairs:
        variant = p.case_id[:-1].rpartition("[")[2]
        out.append(p._replace(group=f"[{variant}]" + (f" {p.group}" if p.group else "")))
    return out


def declared_group_by(path: Path) -> str | None:
    """The ``data`` field the family of the run's task groups cases by (from its first
    result), or None: no family declares one, or the run is unreadable (reported later)."""
    try:
        # The generator (and the file it holds open) is closed when dropped here.
        first = next(read_run(path), None)
    except RunFileError:
        return None
    task = first.task if first else None
    if not isinstance(task, str):
        return None
    from pytest_evals.registry.family_registry import group_field

    return group_field(task)


def run(args: argparse.Namespace) -> int:
    if args.group_by is None:
        group_by = declared_group_by(Path(args.a))
    else:
        group_by = None if args.group_by in ("", "none") else args.group_by
    try:
        a = load_outcomes(Path(args.a), args.suite_a or args.suite, group_by)
        b = load_outcomes(Path(args.b), args.suite_b or args.suite, group_by)
    except RunFileError as exc:
        print(f"pytest-evals compare: {exc}", file=sys.stderr)
        return 2
    pairs, unpaired = pair(a, b)
    if not pairs:
        print("pytest-evals compare: the two runs have no judged item in common", file=sys.stderr)
        return 2
    rows = compare_groups(by_variant(pairs))
    a_name = f"{args.a}" + (f" ({', '.join(sorted(a.suites))})" if a.suites else "")
    b_name = f"{args.b}" + (f" ({', '.join(sorted(b.suites))})" if b.suites else "")
    print(render(rows, a_name, b_name, unpaired))
    if args.json:
        out = {
            "a": {"path": args.a, "suites": sorted(a.suites)},
            "b": {"path": args.b, "suites": sorted(b.suites)},
            "group_by": group_by,
            "unpaired": unpaired,
            "comparisons": {label: r.to_json() for label, r in rows},
        }
        Path(args.json).write_text(strictjson.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of two runs on the same items (exact McNemar, accuracy difference)",
        description=(
            "Compare two runs of any task item by item (a case is right when it passed, wrong "
            "when it failed). A and B are results.jsonl files of --evals-report-dir runs, their "
            "run folders, or --evals-json summaries (the forms --evals-baseline accepts)."
        ),
    )
    parser.add_argument("a", metavar="A", help="baseline run")
    parser.add_argument("b", metavar="B", help="run compared with A")
    parser.add_argument("--suite", help="the suite to compare when a run holds several (name or path)")
    parser.add_argument("--suite-a", help="suite of run A (overrides --suite)")
    parser.add_argument("--suite-b", help="suite of run B (overrides --suite)")
    parser.add_argument(
        "--group-by", metavar="FIELD",
        help="field of each result's data to break the comparison down by ('none' for no groups; "
        "default: the field the results' task family declares, else none)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    parser.set_defaults(func=run)
