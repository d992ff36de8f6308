"""HaluEval suites end to end: pytest against the loopback OpenAI-compatible server.

The server's judge answers correctly with a known probability. It knows the truth by
looking the shown text up in the official data (never through the task's own choice
function), and it logs what it answered. The per-task confusion counts the suite
reports must equal those computed from that log, plainly and under ``-n 2``.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.testing.fake_openai import FakeOpenAI, last_user_message

#: Reply texts the fake judge uses, and what each one means (hand-written, not parsed).
YES_REPLIES = ("Yes", "yes.", "Yes, the answer contains fabricated facts.")
NO_REPLIES = ("No", "no.", "No, it is supported. Not hallucinated.")
UNPARSEABLE = "I cannot tell without more context."  # neither word: counts as "No"
P_CORRECT = 0.7
#: Models with another accuracy (for the comparison of two runs).
P_CORRECT_BY_MODEL = {"weak": 0.55, "strong": 0.9}
P_UNPARSEABLE = 0.05


def norm(text: str) -> str:
    return " ".join(text.split())


def truth_table(data_dir: Path) -> dict[tuple[str, str, str], str]:
    """(task, context key, shown text) -> "yes" if that text is a hallucination."""
    table: dict[tuple[str, str, str], str] = {}
    fields = {
        "qa": ("question", "right_answer", "hallucinated_answer"),
        "dialogue": ("dialogue_history", "right_response", "hallucinated_response"),
        "summarization": ("document", "right_summary", "hallucinated_summary"),
    }
    for task, (ctx_field, right, wrong) in fields.items():
        with (data_dir / f"{task}_data.json").open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                key = norm(rec[ctx_field])[:300]
                table[(task, key, norm(rec[right]))] = "no"
                table[(task, key, norm(rec[wrong]))] = "yes"
    with (data_dir / "general_data.json").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            table[("general", norm(rec["user_query"])[:300], norm(rec["chatgpt_response"]))] = rec["hallucination"]
    return table


PROMPT_PATTERNS = {
    "dialogue": re.compile(r"#Dialogue History#: (.*)\n#Response#: (.*)\n#Your Judgement#: $", re.S),
    "summarization": re.compile(r"#Document#: (.*)\n#Summary#: (.*)\n#Your Judgement#: $", re.S),
    "qa_or_general": re.compile(r"#Question#: (.*)\n#Answer#: (.*)\n#Your Judgement#: $", re.S),
}


class Judge:
    """A responder that is right with probability P_CORRECT, and logs its answers."""

    def __init__(self, table: dict[tuple[str, str, str], str]) -> None:
        self.table = table
        self.log: list[dict[str, Any]] = []

    def lookup(self, prompt: str) -> tuple[str, str]:
        for name, pattern in PROMPT_PATTERNS.items():
            m = pattern.search(prompt)
            if not m:
                continue
            ctx, shown = norm(m.group(1))[:300], norm(m.group(2))
            tasks = ["qa", "general"] if name == "qa_or_general" else [name]
            if name == "qa_or_general" and "based on world knowledge." in prompt:
                tasks = ["general"]
            for task in tasks:
                truth = self.table.get((task, ctx, shown))
                if truth is not None:
                    return task, truth
        raise LookupError(f"prompt not in the data: {prompt[-300:]!r}")

    def __call__(self, request: dict[str, Any]) -> str:
        prompt = last_user_message(request)
        model = str(request.get("model"))
        task, truth = self.lookup(prompt)
        p_correct = P_CORRECT_BY_MODEL.get(model, P_CORRECT)
        salt = model if model in P_CORRECT_BY_MODEL else ""
        digest = hashlib.sha256((salt + prompt).encode()).digest()
        u, pick = digest[0] / 256, digest[1]
        if u < P_UNPARSEABLE:
            reply, meaning = UNPARSEABLE, "no"
        else:
            said = truth if u < P_UNPARSEABLE + p_correct * (1 - P_UNPARSEABLE) else ("no" if truth == "yes" else "yes")
            replies = YES_REPLIES if said == "yes" else NO_REPLIES
            reply, meaning = replies[pick % len(replies)], said
        self.log.append({
            "task": task, "truth": truth, "meaning": meaning, "unparseable": reply == UNPARSEABLE,
            "model": model, "prompt": hashlib.sha256(prompt.encode()).hexdigest(),
        })
        return reply


def expected_confusion(log: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for e in log:
        for group in (e["task"], "overall"):
            c = out.setdefault(group, {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "unparseable": 0})
            key = {("yes", "yes"): "tp", ("no", "yes"): "fp", ("yes", "no"): "fn", ("no", "no"): "tn"}[
                (e["truth"], e["meaning"])
            ]
            c[key] += 1
            c["unparseable"] += e["unparseable"]
    return out


def reported_confusion(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    metrics = summary["suites"][0]["metrics"]
    out = {}
    for group in ("overall", "qa", "dialogue", "summarization", "general"):
        if group in metrics:
            node = metrics[group]
            out[group] = {k: int(node["confusion"][k]["value"]) for k in ("tp", "fp", "fn", "tn")}
            out[group]["unparseable"] = int(node["unparseable"]["value"])
    return out


@pytest.fixture(scope="module")
def judge_server(data_dir: Path) -> Iterator[tuple[FakeOpenAI, Judge]]:
    judge = Judge(truth_table(data_dir))
    with FakeOpenAI(responder=judge) as server:  # type: ignore[arg-type]
        yield server, judge


SUITE = """\
task: halueval
data_dir: {data_dir}
sample: {sample}
seed: 11
thresholds:
  overall:
    accuracy: {{min: 0.5}}
"""


def write_suite(pytester: pytest.Pytester, data_dir: Path, sample: int = 60, extra: str = "") -> None:
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=sample) + extra)


def run(pytester: pytest.Pytester, server: FakeOpenAI, name: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    # In process unless the run has xdist workers: a process start costs more than the run.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "judge-model", "--evals-cache-dir", str(pytester.path / f"cache-{name}"),
        "--evals-json", str(out), *args,
    )
    return result, json.loads(out.read_text(encoding="utf-8"))


def test_confusion_counts_equal_the_servers_log_plain_and_xdist(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Judge]
) -> None:
    server, judge = judge_server
    write_suite(pytester, data_dir)
    judge.log.clear()
    server.reset()
    result, plain = run(pytester, server, "plain")
    assert server.stats()["received"] == 60
    expected = expected_confusion(judge.log)
    assert reported_confusion(plain) == expected
    suite = plain["suites"][0]
    assert suite["cases"]["total"] == 60 and suite["cases"]["errors"] == 0
    passed = sum(e["truth"] == e["meaning"] for e in judge.log)
    result.assert_outcomes(passed=passed, failed=60 - passed)
    # 60 x 10,000 / 34,507 = 17.39 (x3), 60 x 4,507 / 34,507 = 7.84: floors 58, two more
    assert {t: sum(e["task"] == t for e in judge.log) for t in ("qa", "dialogue", "summarization", "general")} == {
        "qa": 18, "dialogue": 17, "summarization": 17, "general": 8,
    }
    baselines = suite["metrics"]["baselines"]
    yes_share = (expected["overall"]["tp"] + expected["overall"]["fn"]) / 60
    assert baselines["always_yes"]["overall"]["accuracy"]["value"] == pytest.approx(yes_share)

    # the same run on two workers, fresh cache: same requests, same numbers
    judge.log.clear()
    server.reset()
    _, two = run(pytester, server, "two", "-n", "2")
    assert server.stats()["received"] == 60
    assert expected_confusion(judge.log) == expected
    assert two["suites"][0]["metrics"] == suite["metrics"]

    # a rerun on the first run's cache asks nothing and reports the same
    judge.log.clear()
    server.reset()
    out = pytester.path / "again.json"
    pytester.runpytest(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
        "--evals-model", "judge-model", "--evals-cache-dir", str(pytester.path / "cache-plain"),
        "--evals-json", str(out),
    )
    assert server.stats()["received"] == 0
    assert json.loads(out.read_text(encoding="utf-8"))["suites"][0]["metrics"] == suite["metrics"]


def test_sample_and_seed_options_and_strict_parsing(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Judge]
) -> None:
    server, judge = judge_server
    write_suite(pytester, data_dir, sample=500, extra="tasks: [qa, general]\nparse: strict\n")
    judge.log.clear()
    server.reset()
    _, summary = run(pytester, server, "strict", "--evals-sample", "40", "--evals-seed", "3")
    assert server.stats()["received"] == 40
    suite = summary["suites"][0]
    assert suite["config"]["sample"] == 40 and suite["config"]["seed"] == 3
    got = reported_confusion(summary)
    # strict: an unparseable reply is wrong whatever the truth
    strict_log = [
        {**e, "meaning": ("no" if e["truth"] == "yes" else "yes") if e["unparseable"] else e["meaning"]}
        for e in judge.log
    ]
    assert got == expected_confusion(strict_log)
    assert set(got) == {"overall", "qa", "general"}


def test_suite_errors_name_the_data_and_how_to_get_it(pytester: pytest.Pytester) -> None:
    pytester.makefile(".eval.yaml", halueval="task: halueval\ndata_dir: nowhere\n")
    result = pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*HaluEval data directory *nowhere does not exist*pytest-evals halueval download*"])
    pytester.makefile(".eval.yaml", halueval="task: halueval\ntasks: [qa, poetry]\nsample: {qa: -1}\n")
    result = pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*field 'tasks.1'*", "*field 'sample*"])
    mine = pytester.mkdir("mine")
    (mine / "qa_data.json").write_text(
        json.dumps({"knowledge": "k", "question": "q", "right_answer": "a", "hallucinated_answer": "b"}) + "\n",
        encoding="utf-8",
    )
    pytester.makefile(".eval.yaml", halueval="task: halueval\ndata_dir: mine\ntasks: [qa]\nprompts: official\n")
    result = pytester.runpytest("halueval.eval.yaml", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*prompts: official needs *mine/prompts/qa_evaluation_instruction.txt*"])
    result.assert_outcomes(errors=1)


def test_collect_only_ids_and_general_version(pytester: pytest.Pytester, data_dir: Path) -> None:
    write_suite(pytester, data_dir, sample=8, extra="general_version: v2023-05-26\ntasks: [general]\n")
    result = pytester.runpytest("halueval.eval.yaml", "--collect-only", "-q", "-p", "no:cacheprovider")
    ids = [ln for ln in result.stdout.lines if ln.startswith("halueval.eval.yaml::")]
    assert len(ids) == 8
    assert all(re.fullmatch(r"halueval\.eval\.yaml::general-v2023-05-26-\S+", i) for i in ids), ids


def test_default_data_dir_is_found_above_the_suite(pytester: pytest.Pytester, data_dir: Path) -> None:
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "halueval").symlink_to(data_dir, target_is_directory=True)
    suites = pytester.mkdir("suites")
    (suites / "halueval.eval.yaml").write_text("task: halueval\ntasks: [qa]\nsample: 3\n", encoding="utf-8")
    result = pytester.runpytest("suites", "--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["suites/halueval.eval.yaml::qa-*", "3 tests collected*"])


def test_hf_dataset_suite_offline(pytester: pytest.Pytester, data_dir: Path) -> None:
    """A suite on a save_to_disk dataset, judged offline (lexical baseline): runs end to end."""
    datasets = pytest.importorskip("datasets")
    rows = {}
    for task in ("qa", "general"):
        with (data_dir / f"{task}_data.json").open(encoding="utf-8") as fh:
            rows[task] = [json.loads(next(fh)) for _ in range(6)]
    datasets.DatasetDict({t: datasets.Dataset.from_list(r) for t, r in rows.items()}).save_to_disk(
        str(pytester.path / "hf_copy")
    )
    pytester.makefile(".eval.yaml", halueval="task: halueval\nhf_dataset: hf_copy\ntasks: [qa, general]\n")
    out = pytester.path / "s.json"
    result = pytester.runpytest_subprocess(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-offline", "--evals-json", str(out), "-v"
    )
    result.stdout.fnmatch_lines(["*halueval.eval.yaml::qa-1 *", "*halueval.eval.yaml::general-6 *"])
    summary = json.loads(out.read_text(encoding="utf-8"))["suites"][0]
    assert summary["cases"]["total"] == 12 and summary["cases"]["errors"] == 0
    assert summary["metrics"]["qa"]["n"]["value"] == 6


def test_compare_two_models_from_their_run_files(
    pytester: pytest.Pytester, data_dir: Path, judge_server: tuple[FakeOpenAI, Judge]
) -> None:
    """Two runs (weak and strong judge model), then `pytest-evals compare` on their summaries."""
    server, judge = judge_server
    write_suite(pytester, data_dir, sample=80)
    judge.log.clear()
    paths = {}
    for model in ("weak", "strong"):
        out = pytester.path / f"{model}.json"
        pytester.runpytest(
            "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", server.base_url,
            "--evals-model", model, "--evals-cache-dir", str(pytester.path / "cache"),
            "--evals-json", str(out), "--evals-report-dir", str(pytester.path / f"runs-{model}"),
        )
        paths[model] = out
    right = {(e["model"], e["prompt"]): e["truth"] == e["meaning"] for e in judge.log}
    prompts = {e["prompt"] for e in judge.log}
    assert len(prompts) == 80
    only_weak = sum(right[("weak", p)] and not right[("strong", p)] for p in prompts)
    only_strong = sum(right[("strong", p)] and not right[("weak", p)] for p in prompts)
    result = pytester.run(
        sys.executable, "-m", "pytest_evals.cli.main", "compare", str(paths["weak"]), str(paths["strong"]),
        "--json", str(pytester.path / "cmp.json"),
    )
    assert result.ret == 0, result.stderr.str()
    cmp = json.loads((pytester.path / "cmp.json").read_text(encoding="utf-8"))["comparisons"]
    assert (cmp["all"]["n"], cmp["all"]["only_a"], cmp["all"]["only_b"]) == (80, only_weak, only_strong)
    from pytest_evals.stats import intervals as stats

    assert cmp["all"]["p_value"] == stats.mcnemar_exact(only_weak, only_strong)
    assert sum(cmp[t]["n"] for t in ("qa", "dialogue", "summarization", "general")) == 80
    result.stdout.fnmatch_lines(["*McNemar p*", "all *80 *"])
