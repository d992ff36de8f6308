"""GOV.UK output mode for rag_answers (issue 28): their three CSVs, as their writer makes them.

The expected files are made here the way their ``rag_answers/evaluate.py`` makes them: their
``EvaluationResult`` / ``RunMetricOutput`` pydantic dataclasses (rebuilt below from their
fields), ``pd.DataFrame(results).to_csv``, the ``groupby(...).agg(["mean", "std", "count"])
.unstack()`` table and the summary frame, with pandas itself. The per-run scores, reasons
and errors are the ones our run recorded (its ``results.jsonl``); everything else (ids,
inputs, the judge's context text, the metric names their metric objects report, the
statistics, the cell encoding) comes from the fixture rows and their rules.
"""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_evals.families.rag import govuk_results

from .layout import JUDGE_MODEL, configs

pd = pytest.importorskip("pandas")
from pydantic.dataclasses import dataclass  # noqa: E402


@dataclass
class RunMetricOutput:
    run: int
    metric: str
    score: float | None = None
    cost: float | None = None
    reason: str | None = None
    success: bool | None = None
    error: str | None = None


@dataclass
class EvaluationResult:
    id: str
    input: str
    actual_output: str
    retrieval_context: list[str]
    run_metric_outputs: list[RunMetricOutput]
    actual_opensearch_index: str
    model: str
    expected_opensearch_index: str | None = None
    expected_output: str | None = None


#: The ``__name__`` of the metric object their config builds for each name.
THEIR_NAMES = {"faithfulness": "Faithfulness", "relevance": "Answer Relevancy", "bias": "Bias",
               "factual_precision": "Factual Precision", "factual_recall": "Factual Recall",
               "absence_of_factual_contradictions": "Absence of Factual Contradictions",
               "context_relevancy": "Context Relevancy", "coherence": "Coherence"}


def their_files(results: list[EvaluationResult]) -> dict[str, str]:
    """Their AggregatedResults.export_to_csvs, with pandas."""
    out: dict[str, str] = {}
    buf = io.StringIO()
    pd.DataFrame(results).to_csv(buf)
    out["tidy_results.csv"] = buf.getvalue()
    data = [{"id": r.id, "input": r.input, "metric": o.metric, "score": o.score, "error": o.error,
             "expected_opensearch_index": r.expected_opensearch_index,
             "actual_opensearch_index": r.actual_opensearch_index}
            for r in results for o in r.run_metric_outputs]
    per_input = (pd.DataFrame(data)
                 .groupby(["id", "input", "expected_opensearch_index", "actual_opensearch_index", "metric"],
                          dropna=False)["score"]
                 .agg(["mean", "std", "count"]).unstack().reset_index().rename(columns={"count": "n_datapoints"}))
    buf = io.StringIO()
    per_input.to_csv(buf)
    out["results_per_input.csv"] = buf.getvalue()
    means = per_input["mean"]
    summary = pd.DataFrame({"median": means.median(), "mean": means.mean(), "std": means.std(),
                            "n_datapoints": per_input["n_datapoints"].sum()})
    buf = io.StringIO()
    summary.to_csv(buf)
    out["results_summary.csv"] = buf.getvalue()
    return out


def flattened(ctx: dict[str, Any]) -> str:
    """Their StructuredContext.to_flattened_string."""
    return f"{ctx['title']}\n{' > '.join(ctx['heading_hierarchy'])}\n{ctx['description']}\n\n{ctx['html_content']}"


def _ctx(n: int, description: str | None = "A page") -> dict[str, Any]:
    return {"title": f"Page {n}", "heading_hierarchy": ["Top", f"Section {n}"], "description": description,
            "html_content": f"<p>Fact {n}, with \"quotes\" and a comma.</p>", "exact_path": f"/page-{n}#s",
            "base_path": f"/page-{n}"}


ROWS: list[dict[str, Any]] = [
    {"id": "case-b", "question": "How do I claim Child Benefit?", "ideal_answer": "Online.",
     "llm_answer": "You can claim online.", "structured_contexts": [_ctx(1), _ctx(2, None)],
     "expected_opensearch_index": "chunks-a", "actual_opensearch_index": "chunks-a", "model": "claude_sonnet_4_0"},
    {"id": "case-a", "question": "Can I backdate a claim?", "ideal_answer": "Yes, by 3 months.",
     "llm_answer": "Yes, by 6 months.", "structured_contexts": [_ctx(3)],
     "actual_opensearch_index": "chunks-b", "model": "claude_sonnet_4_0"},
    # no id: ours names it by its line (their tool draws a uuid)
    {"question": 'Is "Tax-Free Childcare", the same thing?', "ideal_answer": "No.", "llm_answer": "No, it's not.",
     "structured_contexts": [], "expected_opensearch_index": None, "actual_opensearch_index": "chunks-a",
     "model": "claude_sonnet_4_0"},
    {"id": "case-c", "question": "What is the rate?", "ideal_answer": "£25.60 a week.",
     "llm_answer": "It is £25.60 a week.", "structured_contexts": [_ctx(4)],
     "expected_opensearch_index": "chunks-a", "actual_opensearch_index": "chunks-a", "model": "claude_sonnet_4_0"},
]

THRESHOLDS = {m["name"]: m["threshold"] for m in configs()["rag_answers"]["metrics"]}


def layout(root: Path) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    cfg = configs()["rag_answers"]
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    (root / "data" / "rag_answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")


def script() -> dict[tuple[str, str], list[str] | str]:
    from rag.judge_script import coherence, faithfulness, relevance

    return {
        ("relevance", ROWS[0]["question"]): [relevance("yes", "no"), relevance("yes", "yes", "no")],
        ("faithfulness", ROWS[1]["question"]): [faithfulness("yes", "no", "no"), faithfulness("no")],
        ("coherence", ROWS[2]["question"]): [coherence(3), coherence(4)],
        # never a reply that can be read: both runs of this metric fail on this case
        ("coherence", ROWS[3]["question"]): "this is not JSON",
    }


def expected_results(recorded: dict[str, dict[str, Any]]) -> list[EvaluationResult]:
    """Their EvaluationResult per case, with the runs our run recorded for it."""
    out = []
    for line, row in enumerate(ROWS, start=1):
        # a row's id names its case (pytest_evals' ids), as it names their EvaluationResult
        metrics = recorded[row.get("id", f"line-{line}")]["details"]["metrics"]
        per_run: dict[int, list[RunMetricOutput]] = {}
        for name in THRESHOLDS:
            entry = metrics[name]
            failed = {e["repeat"]: e for e in entry["errors"]}
            ok = iter(entry["runs"])
            for i in range(len(entry["runs"]) + len(failed)):
                if i in failed:
                    o = RunMetricOutput(run=i, metric=THEIR_NAMES[name], score=None, cost=None, reason=None,
                                        success=False, error=failed[i]["message"])
                else:
                    run = next(ok)
                    score = run["score"]
                    success = score <= THRESHOLDS[name] if name == "bias" else score >= THRESHOLDS[name]
                    o = RunMetricOutput(run=i, metric=THEIR_NAMES[name], score=score, cost=None,
                                        reason=run["reason"], success=success, error=None)
                per_run.setdefault(i, []).append(o)
        out.append(EvaluationResult(
            id=row.get("id", f"line-{line}"), input=row["question"], actual_output=row["llm_answer"],
            retrieval_context=[flattened(c) for c in row["structured_contexts"]],
            run_metric_outputs=[o for i in sorted(per_run) for o in per_run[i]],
            actual_opensearch_index=row["actual_opensearch_index"], model=row["model"],
            expected_opensearch_index=row.get("expected_opensearch_index"), expected_output=row["ideal_answer"]))
    return out


@pytest.mark.parametrize("dist", [False, True], ids=["plain", "xdist"])
def test_rag_answers_files_as_their_writer_makes_them(pytester: pytest.Pytester, judge: Any, dist: bool) -> None:
    _server, scripted = judge
    scripted.script = {k: ([v] if isinstance(v, str) else list(v)) for k, v in script().items()}
    layout(pytester.path)
    run = pytester.runpytest_subprocess if dist else pytester.runpytest
    extra = ("-n", "2") if dist else ()
    result = run("config/defaults/", "--evals-suite-pattern", "*.yaml", "--no-evals-generate", "-p", "no:cacheprovider",
                 "--evals-govuk-outputs", "results", "--evals-report-dir", "runs", *extra)
    result.stdout.fnmatch_lines(["GOV.UK outputs: results/rag_answers/*"])
    assert result.parseoutcomes().get("errors") == 1  # case-c: coherence could not be scored
    [folder] = list((pytester.path / "results" / "rag_answers").iterdir())
    [jsonl] = list((pytester.path / "runs").glob("*/results.jsonl"))
    recorded = {r["case_id"]: r for r in map(json.loads, jsonl.read_text(encoding="utf-8").splitlines())}
    theirs = their_files(expected_results(recorded))
    for name, text in theirs.items():
        with (folder / name).open(encoding="utf-8", newline="") as fh:
            assert fh.read() == text, name
    # what the comparison covers: scores that differ between runs, undefined means, their names
    per_input = theirs["results_per_input.csv"]
    assert per_input.splitlines()[1].startswith("metric,,,,,Absence of Factual Contradictions,Answer Relevancy,Bias")
    rows = pd.read_csv(folder / "results_per_input.csv", header=[0, 1])
    assert list(rows[("id", "Unnamed: 1_level_1")]) == ["case-a", "case-b", "case-c", "line-3"]  # sorted by id
    assert rows[("n_datapoints", "Coherence")].tolist() == [2, 2, 0, 2]
    assert (rows[("std", "Answer Relevancy")] > 0).any() and (rows[("std", "Faithfulness")] > 0).any()
    log = (folder / "problems.log").read_text(encoding="utf-8").splitlines()
    assert len(log) == 2 and all(
        re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  WARNING  pytest_evals\.rag_answers: "
                     r"Metric error \(id=case-c, metric=Coherence, run=[01]\): coherence: .+", line) for line in log), log
    config = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    assert config["metrics"][0] == {"name": "faithfulness", "threshold": 1.0,
                                    "llm_judge": {"model": JUDGE_MODEL, "temperature": 0.0}}
    assert set(config) == {"what", "generate", "input_path", "claude_generation_model", "metrics", "n_runs"}
    assert not (folder / "generated.jsonl").exists()  # nothing was generated


def random_results(rnd: random.Random, n: int, runs: int, p_error: float) -> list[dict[str, Any]]:
    names = rnd.sample(sorted(THEIR_NAMES.values()), rnd.randint(1, 8))
    out = []
    for i in range(n):
        outputs = []
        for r in range(runs):
            for m in names:
                if rnd.random() < p_error:
                    outputs.append({"run": r, "metric": m, "score": None, "cost": None, "reason": None,
                                    "success": False, "error": 'failed, "x"\n'})
                else:
                    score = rnd.choice([rnd.random(), rnd.randint(0, 7) / 7, 1.0, 0.0])
                    outputs.append({"run": r, "metric": m, "score": score, "cost": None, "reason": "it's\n\"so\"",
                                    "success": score > 0.5, "error": None})
        out.append({"id": f"id-{rnd.randint(0, 999)}-{i}", "input": f"Q{i}, \"q\"", "actual_output": "A",
                    "retrieval_context": ["c\n1"], "run_metric_outputs": outputs, "actual_opensearch_index": "x",
                    "model": "m", "expected_opensearch_index": rnd.choice([None, "e"]),
                    "expected_output": rnd.choice([None, "I"])})
    return out


@pytest.mark.parametrize("p_error", [0.0, 0.05, 0.4])
def test_the_statistics_are_pandas_to_the_last_digit(p_error: float) -> None:
    """100-case sets (and others): grouped means and stds, the column mean's summation order."""
    rnd = random.Random(28)
    for n, runs in ((100, 2), (100, 3), (17, 1), (130, 5), (1, 2), (9, 2)):
        results = random_results(rnd, n, runs, p_error)
        theirs = their_files([EvaluationResult(**{**r, "run_metric_outputs": [RunMetricOutput(**o) for o in r["run_metric_outputs"]]})
                              for r in results])
        ours = govuk_results.files(results)
        assert ours == theirs, (n, runs, p_error)


def test_generated_jsonl_is_their_evaluation_test_case_dump() -> None:
    """rag_answers' generated.jsonl: their EvaluationTestCase.model_dump_json(), per case."""
    from pydantic import BaseModel

    from pytest_evals.families.rag.cases import RagCase

    class StructuredContext(BaseModel):
        title: str
        heading_hierarchy: list[str]
        description: str | None = None
        html_content: str
        exact_path: str
        base_path: str

    class GenerateInput(BaseModel):
        id: str
        question: str
        ideal_answer: str | None = None
        expected_opensearch_index: str | None = None

    class EvaluationTestCase(GenerateInput):
        llm_answer: str
        structured_contexts: list[StructuredContext]
        actual_opensearch_index: str
        model: str

    full = []
    for line, row in enumerate(ROWS, start=1):
        case = RagCase.model_validate(row)
        full.append({"case_id": row.get("id", f"line-{line}"),
                     "details": {govuk_results.DETAILS_KEY: govuk_results.case_fields(case)}})
    theirs = "".join(EvaluationTestCase(**{"id": row.get("id", f"line-{line}"), **row}).model_dump_json() + "\n"
                     for line, row in enumerate(ROWS, start=1))
    assert govuk_results.generated_lines(full) == theirs
    assert "£25.60" in theirs  # not escaped, as pydantic writes it
