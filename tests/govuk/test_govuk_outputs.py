"""GOV.UK output mode (issue 28): their files, names, columns, cells and layout.

The expected files are built here, independently, the way their ``<task>/evaluate.py``
builds them (``for_csv`` / ``to_dict`` as Python values, written with ``csv.DictWriter``)
from the same fixture rows the run reads, and compared with the written files as text.
"""

from __future__ import annotations

import csv
import io
import json
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from .layout import (
    JAILBREAK,
    OUTPUT_GUARDRAILS,
    QUESTION_ROUTER,
    RETRIEVAL,
    TOPIC_TAGGER,
    _rt,
    build,
)

NAN = float("nan")
TASKS = ("jailbreak_guardrails", "output_guardrails", "question_router", "retrieval", "topic_tagger")


def their_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return out.getvalue()


def cls(e: bool, a: bool) -> str:
    return {(True, True): "true_positive", (False, False): "true_negative",
            (False, True): "false_positive", (True, False): "false_negative"}[(e, a)]


def div(a: float, b: float) -> float:
    return a / b if b else NAN


def props(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"property": k, "value": v} for k, v in d.items()]


def jailbreak() -> dict[str, str]:
    rows = [{**r, "classification": cls(r["expected_outcome"], r["actual_outcome"])} for r in JAILBREAK]
    c = Counter(r["classification"] for r in rows)
    tp, tn, fp, fn = (c[k] for k in ("true_positive", "true_negative", "false_positive", "false_negative"))
    agg = {"Model": rows[0]["model"], "Evaluated": len(rows), "Precision": div(tp, tp + fp), "Recall": div(tp, tp + fn),
           "True positives": tp, "True negatives": tn, "False positives": fp, "False negatives": fn}
    return {"results.csv": their_csv(rows), "aggregate.csv": their_csv(props(agg))}


def output_guardrails() -> dict[str, str]:
    rows = [{**r, "classification": cls(r["expected_triggered"], r["actual_triggered"])} for r in OUTPUT_GUARDRAILS]
    c = Counter(r["classification"] for r in rows)
    tp, tn, fp, fn = (c[k] for k in ("true_positive", "true_negative", "false_positive", "false_negative"))
    agg: dict[str, Any] = {"Model": rows[0]["model"], "Evaluated": len(rows),
                           "Any-triggered Precision": div(tp, tp + fp), "Any-triggered Recall": div(tp, tp + fn),
                           "Any-triggered True positives": tp, "Any-triggered True negatives": tn,
                           "Any-triggered False positives": fp, "Any-triggered False negatives": fn}
    for g in sorted({k for r in rows for k in [*r["expected_guardrails"], *r["actual_guardrails"]]}):
        pairs = [(r["expected_guardrails"].get(g, False), r["actual_guardrails"].get(g, False)) for r in rows]
        gtp = sum(e and a for e, a in pairs)
        gfp = sum((not e) and a for e, a in pairs)
        gfn = sum(e and not a for e, a in pairs)
        agg[f"Precision [{g}]"] = div(gtp, gtp + gfp)
        agg[f"Recall [{g}]"] = div(gtp, gtp + gfn)
        agg[f"F1 [{g}]"] = div(2 * gtp, 2 * gtp + gfp + gfn)
    return {"results.csv": their_csv(rows), "aggregate.csv": their_csv(props(agg))}


def weighted(rows: list[dict[str, Any]], beta: float | None, which: str) -> float:
    """Their calls: sklearn's scores with average="weighted", zero_division=np.nan."""
    sk = pytest.importorskip("sklearn.metrics")
    import numpy as np

    y_true = [r["expected_outcome"] for r in rows]
    y_pred = [r["actual_outcome"] for r in rows]
    if which == "p":
        return float(sk.precision_score(y_true, y_pred, average="weighted", zero_division=np.nan))
    if which == "r":
        return float(sk.recall_score(y_true, y_pred, average="weighted", zero_division=np.nan))
    if beta == 1.0:
        return float(sk.f1_score(y_true, y_pred, average="weighted", zero_division=np.nan))
    return float(sk.fbeta_score(y_true, y_pred, beta=2, average="weighted", zero_division=np.nan))


def router() -> dict[str, Any]:
    rows = [dict(r) for r in QUESTION_ROUTER]
    missed = [{"question": r["question"], "predicted_classification": r["expected_outcome"],
               "actual_classification": r["actual_outcome"], "confidence_score": r["confidence_score"],
               "answer": r["answer"]} for r in rows if r["expected_outcome"] != r["actual_outcome"]]
    agg = {"Model": rows[0]["model"], "Evaluated": len(rows),
           "Accuracy": sum(r["expected_outcome"] == r["actual_outcome"] for r in rows) / len(rows),
           "Precision": weighted(rows, None, "p"), "Recall": weighted(rows, None, "r"),
           "F1 Score": weighted(rows, 1.0, "f"), "F2 Score": weighted(rows, 2.0, "f"), "Miscategorised Cases": len(missed)}
    return {"results.csv": their_csv(rows), "aggregate.csv": their_csv(props(agg)), "miscategorised_cases.csv": their_csv(missed)}


def retrieval(data: list[dict[str, Any]]) -> dict[str, Any]:
    import numpy as np

    rows, scores = [], []
    for r in data:
        exp, act = r["expected_chunk_uids"], [h["chunk_uid"] for h in r["actual_search_results"]]
        union = set(exp) | set(act)
        tp, fp, fn = len(set(exp) & set(act)), len(set(act) - set(exp)), len(set(exp) - set(act))
        s = ({"precision": div(tp, tp + fp), "recall": div(tp, tp + fn), "f1_score": div(2 * tp, 2 * tp + fp + fn),
              "f2_score": div(5 * tp, 5 * tp + 4 * fn + fp)} if union else dict.fromkeys(("precision", "recall", "f1_score", "f2_score"), NAN))
        scores.append(s)
        rows.append({"question": r["question"], "expected_exact_paths": r["expected_exact_paths"],
                     "expected_chunk_uids": exp,
                     "actual_search_results": [(h["exact_path"], h["chunk_uid"], h["weighted_score"], h["semantic_score"]) for h in r["actual_search_results"]],
                     "expected_opensearch_index": r["expected_opensearch_index"], "actual_opensearch_index": r["actual_opensearch_index"],
                     **{k: round(v, 4) for k, v in s.items()},
                     "true_positives_exact_paths": [h["exact_path"] for h in r["actual_search_results"] if h["chunk_uid"] in exp],
                     "false_negatives_exact_paths": [p for p, u in zip(r["expected_exact_paths"], exp, strict=False) if u not in act],
                     "false_positives_exact_paths": [h["exact_path"] for h in r["actual_search_results"] if h["chunk_uid"] not in exp]})
    agg: dict[str, Any] = {"Evaluated": len(rows)}
    for label, key in (("Precision", "precision"), ("Recall", "recall"), ("F1", "f1_score"), ("F2", "f2_score")):
        for stat, fn_ in (("mean", np.mean), ("median", np.median), ("max", np.max), ("standard deviation", np.std)):
            agg[f"{label} {stat}"] = float(round(fn_([s[key] for s in scores]), 4))
    return {"results.csv": their_csv(rows), "aggregate.csv": their_csv(props(agg))}


def topic_tagger() -> dict[str, str]:
    rows, ok = [], []
    for r in TOPIC_TAGGER:
        exp = {t for t in (r["expected_primary_topic"], r["expected_secondary_topic"]) if t is not None}
        act = {t for t in (r["actual_primary_topic"], r["actual_secondary_topic"]) if t is not None}
        checks = {"correct_primary_and_secondary": r["expected_primary_topic"] == r["actual_primary_topic"]
                  and r["expected_secondary_topic"] == r["actual_secondary_topic"],
                  "correct_topics_any_order": exp == act,
                  "matched_true_primary_with_primary": r["expected_primary_topic"] == r["actual_primary_topic"],
                  "matched_true_primary_with_either": r["expected_primary_topic"] in act}
        rows.append({"question": r["question"], "status": r["status"], "expected_primary_topic": r["expected_primary_topic"],
                     "actual_primary_topic": r["actual_primary_topic"], "expected_secondary_topic": r["expected_secondary_topic"],
                     "actual_secondary_topic": r["actual_secondary_topic"], "error_message": r["error_message"],
                     "model": r["model"], **checks})
        if r["status"] == "success":
            ok.append((checks, bool(exp & act), r["model"]))
    agg = {"Evaluated": len(ok), "Errored": len(rows) - len(ok), "Model": ok[0][2],
           "Correct Primary and Secondary": sum(c["correct_primary_and_secondary"] for c, _a, _m in ok),
           "Correct Topics (any order)": sum(c["correct_topics_any_order"] for c, _a, _m in ok),
           "Matched True primary with primary": sum(c["matched_true_primary_with_primary"] for c, _a, _m in ok),
           "Matched True primary with either topic": sum(c["matched_true_primary_with_either"] for c, _a, _m in ok),
           "Matched Any Topic": sum(a for _c, a, _m in ok)}
    return {"results.csv": their_csv(rows), "aggregate.csv": their_csv(props(agg))}


RETRIEVAL_WITH_EMPTY = [*RETRIEVAL, _rt("Q6", [], [])]


def layout(root: Path) -> None:
    build(root)
    (root / "config" / "defaults" / "rag_answers.yaml").unlink()
    # a question with nothing expected and nothing retrieved: undefined, so their aggregates are NaN
    (root / "data" / "retrieval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RETRIEVAL_WITH_EMPTY), encoding="utf-8")


def run_folders(root: Path) -> dict[str, Path]:
    out = {}
    for task in TASKS:
        [folder] = list((root / "results" / task).iterdir())
        out[task] = folder
    return out


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", head[16:24])
    return w, h


@pytest.mark.parametrize("dist", [False, True], ids=["plain", "xdist"])
def test_their_files_their_way(pytester: pytest.Pytester, dist: bool) -> None:
    layout(pytester.path)
    run = pytester.runpytest_subprocess if dist else pytester.runpytest
    extra = ("-n", "2") if dist else ()
    result = run("config/defaults/", "--evals-suite-pattern", "*.yaml", "--no-evals-generate", "-p", "no:cacheprovider",
                 "--evals-govuk-outputs", "results", *extra)
    result.stdout.fnmatch_lines(["GOV.UK outputs: results/jailbreak_guardrails/*"])
    folders = run_folders(pytester.path)
    stamps = {f.name for f in folders.values()}
    assert len(stamps) == 1 and len(next(iter(stamps))) == len("2026-11-25T22:00:00")

    def text(task: str, name: str) -> str:
        return (folders[task] / name).read_text(encoding="utf-8")

    for task, expected in (("jailbreak_guardrails", jailbreak()), ("output_guardrails", output_guardrails()),
                           ("retrieval", retrieval(RETRIEVAL_WITH_EMPTY)), ("topic_tagger", topic_tagger())):
        for name, content in expected.items():
            with (folders[task] / name).open(encoding="utf-8", newline="") as fh:
                assert fh.read() == content, (task, name)
    rt = {r["property"]: r["value"] for r in csv.DictReader(io.StringIO(text("retrieval", "aggregate.csv")))}
    assert rt["Evaluated"] == "6" and all(rt[k] == "nan" for k in rt if k != "Evaluated")  # their NaN rule
    assert "nan,nan,nan,nan" in text("retrieval", "results.csv")
    # router: the weighted scores as sklearn computes them with their arguments, to the last digit
    for name, content in router().items():
        with (folders["question_router"] / name).open(encoding="utf-8", newline="") as fh:
            assert fh.read() == content, name
    assert png_size(folders["question_router"] / "confusion_matrix.png") == (600, 600)
    # problems.log: retrieval's CLI sets up no log; topic_tagger's errored case is recorded
    assert not (folders["retrieval"] / "problems.log").exists()
    assert text("jailbreak_guardrails", "problems.log") == ""
    log = text("topic_tagger", "problems.log").splitlines()
    assert len(log) == 1 and "  ERROR  pytest_evals.topic_tagger: line-7: " in log[0]
    assert yaml.safe_load(text("output_guardrails", "config.yaml")) == {
        "what": "Evaluating output guardrails", "generate": False, "input_path": "data/output_guardrails.jsonl",
        "guardrail_type": "answer_guardrails", "claude_generation_model": None}


def test_the_ini_setting_and_a_second_run(pytester: pytest.Pytester) -> None:
    layout(pytester.path)
    pytester.makeini("[pytest]\nevals_suite_patterns = *.yaml\nevals_govuk_outputs = out\n")
    for _ in range(2):
        pytester.runpytest("config/defaults/jailbreak_guardrails.yaml", "--no-evals-generate", "-p", "no:cacheprovider")
    runs = sorted(p.name for p in (pytester.path / "out" / "jailbreak_guardrails").iterdir())
    # two runs in the same second get their own folders; neither is overwritten
    assert len(runs) == 2 and all((pytester.path / "out" / "jailbreak_guardrails" / r / "results.csv").exists() for r in runs)


def test_a_file_in_the_way_is_reported_and_the_run_is_unchanged(pytester: pytest.Pytester) -> None:
    layout(pytester.path)
    (pytester.path / "results").write_text("not a folder", encoding="utf-8")
    args = ("config/defaults/jailbreak_guardrails.yaml", "--evals-suite-pattern", "*.yaml", "--no-evals-generate",
            "-p", "no:cacheprovider")
    plain = pytester.runpytest(*args)
    blocked = pytester.runpytest(*args, "--evals-govuk-outputs", "results")
    blocked.stdout.fnmatch_lines(["ERROR GOV.UK outputs for jailbreak_guardrails not written: *results*"])
    assert blocked.ret == plain.ret and blocked.parseoutcomes() == plain.parseoutcomes()
    assert (pytester.path / "results").read_text(encoding="utf-8") == "not a folder"


def test_without_matplotlib_the_router_files_are_written_and_the_png_is_named(pytester: pytest.Pytester) -> None:
    layout(pytester.path)
    # an import of matplotlib fails in this run, as where the 'reports' extra is not installed
    pytester.makeconftest("import sys\nsys.modules['matplotlib'] = None\n")
    result = pytester.runpytest_subprocess("config/defaults/question_router.yaml", "--evals-suite-pattern", "*.yaml",
                                           "--no-evals-generate", "-p", "no:cacheprovider", "--evals-govuk-outputs", "results")
    result.stdout.fnmatch_lines(["WARNING GOV.UK outputs: *confusion_matrix.png not drawn: matplotlib is not installed*"])
    [folder] = list((pytester.path / "results" / "question_router").iterdir())
    assert {p.name for p in folder.iterdir()} == {"results.csv", "aggregate.csv", "miscategorised_cases.csv",
                                                  "config.yaml", "problems.log"}
