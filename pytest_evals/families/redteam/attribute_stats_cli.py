"""``pytest-evals attribute-stats PATH``: rm-bias's ``final_stats/seed_<i>.json`` in the terminal.

PATH is one seed file, a ``final_stats`` folder, a run directory or a data directory (as
for ``pytest-evals viz``). Each file is listed in its own order (theirs: by student win
rate) with the stored win rates, the ones recomputed from the rollouts by their rule
(a ``*`` marks a stored value that differs: a stale or edited file), and the user prompt
and rollout counts. A bad file is an error naming the file and the field; the others are
still listed, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_evals.families.redteam.attribute_stats import AttributeRecord, AttributeSeed
    from pytest_evals.families.redteam.loader import LoadIssue

PROG = "pytest-evals attribute-stats"
#: Stored and recomputed win rates closer than this are the same number written twice.
SAME = 1e-9


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "attribute-stats",
        help="list rm-bias's final_stats/seed_<i>.json attribute statistics",
        description=(
            "List the attributes of rm-bias's final_stats/seed_<i>.json files with their student and "
            "teacher win rates (stored, and recomputed from the rollouts by rm-bias's rule), "
            "user prompt and rollout counts."
        ),
    )
    parser.add_argument("path", metavar="PATH",
                        help="a seed_<i>.json file, a final_stats folder, a run directory or a data directory")
    parser.add_argument("--seed", action="append", type=seed_number, default=None, metavar="ID",
                        help="only this seed, the <i> of seed_<i>.json (repeatable)")
    parser.add_argument("--top", type=int, default=None, metavar="N", help="only the first N attributes of each file")
    parser.add_argument("--full", action="store_true", help="print attributes in full (default: the first 80 characters)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.set_defaults(func=run_attribute_stats)


def seed_number(text: str) -> int:
    """A ``--seed`` value: their files are ``seed_<i>.json`` with ``i`` a non-negative integer."""
    value = text.strip()
    if not value.isascii() or not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a seed number (the <i> of seed_<i>.json), got {text!r}")
    return int(value)


def seed_of(name: str) -> str | None:
    """The seed id of a file name ``seed_<i>.json`` (None for any other name)."""
    from pytest_evals.families.redteam.attribute_stats import SEED_FILE

    match = SEED_FILE.match(name)
    return match.group(1) if match else None


def selected(seed_id: str | None, seeds: list[int]) -> bool:
    # By value, so ``--seed 3`` also finds a file written as seed_03.json.
    return seed_id is not None and seed_id.isascii() and seed_id.isdigit() and int(seed_id) in seeds


def _seed_order(seed_id: str) -> tuple[int, int, str]:
    return (0, int(seed_id), seed_id) if seed_id.isascii() and seed_id.isdigit() else (1, 0, seed_id)


def collect(path: Path) -> tuple[list[tuple[str, AttributeSeed]], list[LoadIssue]]:
    """(run label, seed file) for every final_stats file under ``path``, and the bad files."""
    from pytest_evals.families.redteam.attribute_stats import FINAL_STATS_DIR, stats_files
    from pytest_evals.families.redteam.loader import (
        LoadError,
        find_runs,
        load_final_stats,
        load_final_stats_file,
    )

    issues: list[LoadIssue] = []
    if path.is_file():
        try:
            return [(str(path.parent), load_final_stats_file(path))], issues
        except LoadError as exc:
            return [], [exc.issue]
    if path.name == FINAL_STATS_DIR and stats_files(path.parent):
        return [(str(path.parent), s) for s in load_final_stats(path.parent, issues)], issues
    found: list[tuple[str, AttributeSeed]] = []
    for runner, run in find_runs(path):
        found += [(f"{runner}/{run.name}", s) for s in load_final_stats(run, issues)]
    return found, issues


def printable(text: str) -> str:
    """``text`` with control characters (an ANSI escape in an attribute, say) written as
    ``\\x1b`` escapes, so a file cannot drive the terminal it is listed in."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _num(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _fmt(value: float | None) -> str:
    number = _num(value)
    if number is None:
        return "N/A"
    # A hand-edited 1e308 in fixed notation is 300 digits wide and breaks the columns.
    return f"{number:.3f}" if abs(number) < 1e5 else f"{number:.3g}"


def _differs(stored: float | None, computed: float | None) -> bool:
    a, b = _num(stored), _num(computed)
    if a is None or b is None:
        return (a is None) != (b is None)
    return abs(a - b) > SAME


def _counts(rec: AttributeRecord) -> tuple[int, int, int]:
    rollouts = [r for items in rec.rollouts.values() for r in items]
    return len(rec.rollouts), sum(r is not None for r in rollouts), sum(r is None for r in rollouts)


def record_json(rec: AttributeRecord) -> dict[str, Any]:
    from pytest_evals.families.redteam.viewdata import finite_json

    prompts, rollouts, failed = _counts(rec)
    return {
        "attribute": rec.attribute,
        "student_winrate": _num(rec.student_winrate),
        "teacher_winrate": _num(rec.teacher_winrate),
        "student_recomputed": _num(rec.student_computed),
        "teacher_recomputed": _num(rec.teacher_computed),
        "user_prompts": prompts,
        "rollouts": rollouts,
        "failed_rollouts": failed,
        # their json.dump writes NaN as a bare token, which is no JSON for other readers
        "meta": finite_json(rec.meta),
    }


def table(label: str, seed: AttributeSeed, top: int | None, full: bool) -> list[str]:
    items = seed.attributes if top is None else seed.attributes[:top]
    lines = [printable(f"{seed.path} (run {label}, seed {seed.seed_id}): {len(seed.attributes)} attribute(s), in the file's order")]
    if not items:
        return lines
    head = f"{'#':>4}  {'student':>8} {'recomp.':>8}  {'teacher':>8} {'recomp.':>8}  {'prompts':>7} {'rollouts':>8}  attribute"
    lines.append(head)
    stale = False
    for i, rec in enumerate(items, 1):
        prompts, rollouts, _ = _counts(rec)
        marks = []
        for stored, computed in ((rec.student_winrate, rec.student_computed), (rec.teacher_winrate, rec.teacher_computed)):
            mark = "*" if _differs(stored, computed) else " "
            stale = stale or mark == "*"
            marks.append(f"{_fmt(stored):>8} {_fmt(computed):>7}{mark}")
        text = printable(rec.attribute if full else " ".join(rec.attribute.split()))
        if not full and len(text) > 80:
            text = text[:79] + "…"
        lines.append(f"{i:>4}  {marks[0]}  {marks[1]}  {prompts:>7} {rollouts:>8}  {text}")
    if top is not None and len(seed.attributes) > top:
        lines.append(f"      ... {len(seed.attributes) - top} more (--top)")
    if stale:
        lines.append("      * the stored win rate differs from the one recomputed from the rollouts")
    return lines


def run_attribute_stats(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if not path.exists():
        print(f"{PROG}: {path}: no such file or directory", file=sys.stderr)
        return 2
    if args.top is not None and args.top < 1:
        print(f"{PROG}: --top must be at least 1", file=sys.stderr)
        return 2
    found, issues = collect(path)
    if args.seed:
        present = {s.seed_id for _, s in found} | {i for issue in issues if (i := seed_of(issue.path.name)) is not None}
        found = [(label, s) for label, s in found if selected(s.seed_id, args.seed)]
        # An issue of a file that is no seed file (none today) is not the filter's to hide.
        issues = [i for i in issues if seed_of(i.path.name) is None or selected(seed_of(i.path.name), args.seed)]
        if present and not found and not issues:
            wanted = ", ".join(str(n) for n in dict.fromkeys(args.seed))
            have = ", ".join(sorted(present, key=_seed_order))
            print(printable(f"{PROG}: --seed {wanted} matches none of the final_stats/seed_<i>.json files under "
                            f"{path} (seeds present: {have})"), file=sys.stderr)
            return 1
    for issue in issues:
        where = f" field {issue.field!r}:" if issue.field else ""
        print(printable(f"{PROG}: {issue.path}:{where} {issue.message}"), file=sys.stderr)
    if not found and not issues:
        print(printable(f"{PROG}: no final_stats/seed_<i>.json under {path}"), file=sys.stderr)
        return 1
    if args.json:
        out = [
            {"run": label, "seed": s.seed_id, "file": str(s.path),
             "attributes": [record_json(r) for r in (s.attributes if args.top is None else s.attributes[: args.top])]}
            for label, s in found
        ]
        print(json.dumps({"files": out, "errors": [i.to_json() for i in issues]}, indent=2, ensure_ascii=False))
    else:
        for n, (label, seed) in enumerate(found):
            if n:
                print()
            print("\n".join(table(label, seed, args.top, args.full)))
    return 1 if issues else 0
