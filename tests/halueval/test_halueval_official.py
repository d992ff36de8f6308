"""``prompts: official`` and ``parse: official`` against the official script's protocol.

The official ``evaluation/evaluate.py`` is replayed here, written out independently of
the package from the script's logic: for a chat model it sends a per-task system
message and, as the user message, the instruction file's text (``open(...).read()``)
followed by ``"\\n\\n#Question#: " + question + "\\n#Answer#: " + answer + "\\n#Your
Judgement#: "`` (qa; dialogue and summarization alike with their fields); it removes
every "." from the reply, tests the case-sensitive substrings "Yes" and "No" (both or
neither = failed, counted incorrect), and prints correct / len(data).

Nothing below imports the package's prompt constants or parser: the expected values
come from this file's replay and the real data.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_evals.families.halueval.index import file_refs, read_record
from pytest_evals.families.halueval.layout import data_file
from pytest_evals.families.halueval.prompts import PromptSet
from pytest_evals.families.halueval.records import to_item
from pytest_evals.testing.fake_openai import FakeOpenAI

#: The script's system messages, typed from evaluate.py (its "huallucination" included).
SYSTEM = {
    "qa": 'You are a huallucination detector. You MUST determine if the provided answer contains hallucination or not for the question based on the world knowledge. The answer you provided MUST be "Yes" or "No"',
    "dialogue": 'You are a response judge. You MUST determine if the provided response contains non-factual or hallucinated information. The answer you give MUST be "Yes" or "No"',
    "summarization": 'You are a summary judge. You MUST determine if the provided summary contains non-factual or hallucinated information. The answer you give MUST be "Yes" or "No"',
}
#: Per task: the context field, the labels of the two item lines, the pair's fields.
LAYOUT = {
    "qa": ("question", "#Question#", "#Answer#", "right_answer", "hallucinated_answer"),
    "dialogue": ("dialogue_history", "#Dialogue History#", "#Response#", "right_response", "hallucinated_response"),
    "summarization": ("document", "#Document#", "#Summary#", "right_summary", "hallucinated_summary"),
}
OFFICIAL_SCRIPT = Path("/work/ref/RUCAIBox+HaluEval/evaluation/evaluate.py")


def instruction(data_dir: Path, task: str) -> str:
    # as the script reads it: text mode, UTF-8, the whole file
    with open(data_dir / "prompts" / f"{task}_evaluation_instruction.txt", encoding="utf-8") as f:
        return f.read()


def official_messages(task: str, record: dict[str, Any], shown: str, instr: str) -> list[dict[str, str]]:
    context_field, first, second, _, _ = LAYOUT[task]
    user = instr + "\n\n" + first + ": " + record[context_field] + "\n" + second + ": " + shown + "\n#Your Judgement#: "
    return [{"role": "system", "content": SYSTEM[task]}, {"role": "user", "content": user}]


def official_judgement(reply: str) -> str:
    ans = reply.replace(".", "")
    if ("Yes" in ans and "No" in ans) or ("Yes" not in ans and "No" not in ans):
        return "failed!"
    return "Yes" if "Yes" in ans else "No"


def records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


# -- prompts: every record of the three tasks the script covers ------------------------------
@pytest.mark.parametrize("task", ["qa", "dialogue", "summarization"])
def test_official_prompts_are_byte_identical_on_every_record(data_dir: Path, task: str) -> None:
    instr = instruction(data_dir, task)
    prompts = PromptSet.load("official", False, data_dir, [task])
    refs = list(file_refs(data_file(data_dir, task), task))
    raw = list(records(data_file(data_dir, task)))
    assert len(refs) == len(raw) == 10_000
    _, _, _, right, wrong = LAYOUT[task]
    compared = differing = 0
    for ref, record in zip(refs, raw, strict=True):
        item = to_item(read_record(ref), task, ref.case_id, ref.source)
        for shown in (record[right], record[wrong]):
            sent = prompts.messages(item, shown)
            compared += 1
            differing += sent != official_messages(task, record, shown, instr)
    assert (compared, differing) == (20_000, 0)


def test_dialogue_history_is_sent_as_the_raw_string(data_dir: Path) -> None:
    """Trailing spaces and runs of spaces stay (the old re-rendering lost both)."""
    prompts = PromptSet.load("official", False, data_dir, ["dialogue"])
    refs = list(file_refs(data_file(data_dir, "dialogue"), "dialogue"))
    trailing = collapsed = 0
    for ref in refs:
        record = read_record(ref)
        history = record["dialogue_history"]
        user = prompts.messages(to_item(record, "dialogue", ref.case_id, ref.source), "x")[1]["content"]
        assert "#Dialogue History#: " + history + "\n#Response#: x\n" in user
        trailing += history != history.rstrip()
        collapsed += "  " in history
    # the data really has the spacing a re-rendering would change
    assert trailing > 0 and collapsed > 0


def test_general_keeps_the_seed_template_and_our_system_message(data_dir: Path) -> None:
    """The official script has no general task ("The task must be qa, dialogue, or summarization!")."""
    ps = PromptSet.load("official", False, data_dir, ["general"])
    ref = next(file_refs(data_file(data_dir, "general"), "general"))
    record = read_record(ref)
    item = to_item(record, "general", ref.case_id, ref.source)
    system, user = ps.messages(item, record["chatgpt_response"])
    assert system["content"] not in SYSTEM.values()
    assert user["content"].startswith("I want you to act as an answer judge.")
    assert user["content"].endswith(
        "#Question#: " + record["user_query"] + "\n#Answer#: " + record["chatgpt_response"] + "\n#Your Judgement#: "
    )


def test_system_messages_typed_here_are_the_scripts() -> None:
    if not OFFICIAL_SCRIPT.is_file():
        pytest.skip(f"official script not available at {OFFICIAL_SCRIPT}")
    source = OFFICIAL_SCRIPT.read_text(encoding="utf-8")
    for text in SYSTEM.values():
        assert '"content":"' + text.replace('"', '\\"') + '"' in source.replace('"content": "', '"content":"')


# -- end to end: the suite against the loopback server -------------------------------------
REPLIES = (
    "Yes", "No", "Yes.", "No.", "yes", "no", "YES", "Not hallucinated", "Nope", "Yes, no doubt",
    "I cannot tell.", "", "Y.e.s", "The answer is: yes.", "#Your Judgement#: No", "Nothing",
)
GENERAL_ITEM = re.compile(r"#Question#: (.*)\n#Answer#: (.*)\n#Your Judgement#: $", re.S)


def digest(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, ensure_ascii=False).encode("utf-8")).hexdigest()


class OfficialTable:
    """Every official request the data allows -> (task, record line, expected verdict)."""

    def __init__(self, data_dir: Path) -> None:
        self.by_digest: dict[str, tuple[str, int, str]] = {}
        for task, (_, _, _, right, wrong) in LAYOUT.items():
            instr = instruction(data_dir, task)
            for line, record in enumerate(records(data_file(data_dir, task)), 1):
                for shown, truth in ((record[right], "No"), (record[wrong], "Yes")):
                    self.by_digest[digest(official_messages(task, record, shown, instr))] = (task, line, truth)
        self.general: dict[tuple[str, str], str] = {}
        for record in records(data_file(data_dir, "general")):
            self.general[(record["user_query"], record["chatgpt_response"])] = record["hallucination"]


class Recorder:
    """The server's judge: a reply picked from REPLIES by the prompt's hash; logs each request."""

    def __init__(self) -> None:
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str:
        messages = [{"role": m["role"], "content": m["content"]} for m in request["messages"]]
        reply = REPLIES[int(digest(messages)[:8], 16) % len(REPLIES)]
        with self.lock:
            self.log.append({"messages": messages, "reply": reply, "body": request})
        return reply


@pytest.fixture(scope="module")
def table(data_dir: Path) -> OfficialTable:
    return OfficialTable(data_dir)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeOpenAI, Recorder]]:
    recorder = Recorder()
    with FakeOpenAI(responder=recorder) as srv:
        yield srv, recorder


SUITE = """\
task: halueval
data_dir: {data_dir}
prompts: official
parse: official
sample: {sample}
seed: 5
thresholds:
  overall:
    accuracy: {{min: 0.0}}
"""


def run_suite(
    pytester: pytest.Pytester, srv: FakeOpenAI, name: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / f"{name}.json"
    # In process unless the run has xdist workers: a process start costs more than the run.
    runner = pytester.runpytest_subprocess if "-n" in args else pytester.runpytest
    result = runner(
        "halueval.eval.yaml", "-p", "no:cacheprovider", "--evals-base-url", srv.base_url,
        "--evals-model", "judge", "--evals-cache-dir", str(pytester.path / f"cache-{name}"),
        "--evals-json", str(out), *args,
    )
    assert out.is_file(), result.stdout.str()[-3000:]
    return result, json.loads(out.read_text(encoding="utf-8"))["suites"][0]


def replay(log: list[dict[str, Any]], table: OfficialTable) -> dict[str, list[int]]:
    """The official script's counting on the replies the server gave: [correct, judged] per task."""
    counts: dict[str, list[int]] = {}
    for entry in log:
        messages = entry["messages"]
        found = table.by_digest.get(digest(messages))
        if found is not None:
            task, truth = found[0], found[2]
        else:
            m = GENERAL_ITEM.search(messages[1]["content"])
            assert m is not None, f"not an official request of the data: {messages[1]['content'][-300:]!r}"
            task, truth = "general", table.general[(m.group(1), m.group(2))].capitalize()
        judgement = official_judgement(entry["reply"])
        for group in (task, "overall"):
            c = counts.setdefault(group, [0, 0])
            c[0] += judgement == truth
            c[1] += 1
    return counts


def accuracy(suite: dict[str, Any], group: str) -> float:
    return float(suite["metrics"][group]["accuracy"]["value"])


def test_official_protocol_reproduces_the_scripts_verdicts_plain_and_xdist(
    pytester: pytest.Pytester, data_dir: Path, table: OfficialTable, server: tuple[FakeOpenAI, Recorder]
) -> None:
    srv, recorder = server
    pytester.makefile(".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=48))
    results = {}
    for name, extra in (("plain", ()), ("xdist", ("-n", "2"))):
        recorder.log.clear()
        srv.reset()
        _, suite = run_suite(pytester, srv, name, *extra)
        assert len(recorder.log) == 48 and suite["cases"]["total"] == 48
        # every request of the three official tasks is one of the script's own requests
        official = [e for e in recorder.log if digest(e["messages"]) in table.by_digest]
        assert len(official) == 48 - suite["metrics"]["general"]["n"]["value"] > 30
        assert {e["body"]["temperature"] for e in recorder.log} == {0.0}
        # the script's body: model, messages, temperature; no max_tokens or response_format
        assert {tuple(sorted(e["body"])) for e in recorder.log} == {("messages", "model", "temperature")}
        expected = replay(recorder.log, table)
        for group, (correct, n) in expected.items():
            assert suite["metrics"][group]["n"]["value"] == n
            assert accuracy(suite, group) == pytest.approx(correct / n), group
        failed = sum(official_judgement(e["reply"]) == "failed!" for e in recorder.log)
        assert suite["metrics"]["unparseable"]["value"] == failed > 0
        results[name] = suite["metrics"]
    assert results["plain"] == results["xdist"]


def test_accuracy_denominator_all_counts_errored_items_as_wrong_plain_and_xdist(
    pytester: pytest.Pytester, data_dir: Path, table: OfficialTable, server: tuple[FakeOpenAI, Recorder]
) -> None:
    """One attempt per request and a 500 on about a quarter: the official accuracy divides by all."""
    srv, recorder = server
    suites = {}
    for name, denominator, extra in (
        ("all-plain", "all", ()), ("all-xdist", "all", ("-n", "2")), ("judged", "judged", ()),
    ):
        pytester.makefile(
            ".eval.yaml",
            halueval=SUITE.format(data_dir=data_dir, sample=40) + f"accuracy_denominator: {denominator}\n",
        )
        recorder.log.clear()
        srv.reset()
        srv.configure(rate_500=0.25, seed=3)
        try:
            _, suite = run_suite(pytester, srv, name, "--evals-max-retries", "0", *extra)
        finally:
            srv.configure(rate_500=0.0)
        answered = replay(recorder.log, table)["overall"]
        errored = 40 - answered[1]
        assert 0 < errored < 20 and suite["cases"]["errors"] == errored
        assert suite["cases"]["errors_by_kind"] == {"infrastructure": errored}
        assert suite["metrics"]["overall"]["errored"]["value"] == errored
        if denominator == "all":
            # the script retries forever, so it has a verdict for all 40; ours has none for
            # the errored ones, and counting them as wrong is the official denominator
            assert accuracy(suite, "overall") == pytest.approx(answered[0] / 40)
            assert suite["metrics"]["overall"]["n"]["value"] == 40
        else:
            assert accuracy(suite, "overall") == pytest.approx(answered[0] / answered[1])
            assert any("left out of accuracy" in w for w in suite["tables"]["warnings"])
        suites[name] = suite
    assert suites["all-plain"]["metrics"] == suites["all-xdist"]["metrics"]


def test_command_line_temperature_wins_over_the_suites_and_says_so(
    pytester: pytest.Pytester, data_dir: Path, server: tuple[FakeOpenAI, Recorder]
) -> None:
    srv, recorder = server
    pytester.makefile(
        ".eval.yaml", halueval=SUITE.format(data_dir=data_dir, sample=6) + "tasks: [qa]\ntemperature: 0.0\n"
    )
    recorder.log.clear()
    _, suite = run_suite(pytester, srv, "suite-t")
    assert {e["body"]["temperature"] for e in recorder.log} == {0.0}
    assert not any("temperature" in w for w in suite["tables"]["warnings"])
    for name, extra in (("cli-plain", ()), ("cli-xdist", ("-n", "2"))):
        recorder.log.clear()
        _, suite = run_suite(pytester, srv, name, "--evals-temperature", "0.7", *extra)
        assert len(recorder.log) == 6
        assert {e["body"]["temperature"] for e in recorder.log} == {0.7}
        notes = [w for w in suite["tables"]["warnings"] if "temperature" in w]
        assert notes == [
            "the suite sets temperature: 0 but the judge was asked at temperature 0.7: "
            "--evals-temperature on the command line wins over the suite's value"
        ]
    recorder.log.clear()
    _, suite = run_suite(pytester, srv, "cli-none", "--evals-temperature", "none")
    assert all("temperature" not in e["body"] for e in recorder.log)
    assert any("none (not sent)" in w for w in suite["tables"]["warnings"])
