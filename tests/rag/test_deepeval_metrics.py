"""DeepEval metric classes inside rag_answers suites, with our client as their model (issue 28).

DeepEval's metrics run through the real client against the loopback server, whose
responder answers DeepEval's own prompts by fixed rules (:mod:`.deepeval_script`). The
same metric object measured directly with a stub model answering by the same rules
must give the same scores; a rerun must be served by our cache.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import JudgeServer, inline_results, write_suite
from .deepeval_script import deepeval_reply, step_of, stub_model

try:
    import deepeval  # noqa: F401
except ImportError:
    # The dev extra installs DeepEval: where CI runs, a missing DeepEval is a broken
    # install, never a reason to skip these tests.
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        raise
    pytest.skip("DeepEval is not installed (the 'deepeval' extra)", allow_module_level=True)

FAITHFULNESS = "deepeval.metrics:FaithfulnessMetric"


def _case(case_id: str, answer: str) -> dict[str, Any]:
    return {
        "id": case_id,
        "question": "How long does an Acme refund take?",
        "ideal_answer": "Refunds reach your card within 10 working days.",
        "llm_answer": answer,
        "structured_contexts": [{
            "exact_path": "/help/refunds", "title": "Refunds", "heading_hierarchy": ["Billing"],
            "description": None, "html_content": "<p>Refunds reach your card within 10 working days.</p>",
        }],
    }


CASES = [
    _case("right", "Refunds reach your card within 10 working days."),
    _case("wrong-number", "Refunds reach your card within 3 working days. You get an email."),
    _case("upsell", "Refunds take 10 working days. Acme Premium refunds are faster. I think Premium is "
                    "obviously worth it."),
]


def _direct(metric_cls: Any, case: dict[str, Any], threshold: float, **options: Any) -> tuple[float, str, bool]:
    """The metric measured directly, as a DeepEval user would, on the test case our run builds."""
    from deepeval.test_case import LLMTestCase

    from pytest_evals.families.rag.cases import RagCase
    from pytest_evals.families.rag.flatten import flatten_contexts

    rag = RagCase.model_validate(case)
    metric = metric_cls(threshold=threshold, model=stub_model(), **options)
    test_case = LLMTestCase(input=rag.question, actual_output=rag.llm_answer, expected_output=rag.ideal_answer,
                            retrieval_context=flatten_contexts(rag.structured_contexts or []))
    score = asyncio.run(metric.a_measure(test_case, _show_indicator=False))
    return score, metric.reason, metric.success


def test_faithfulness_metric_through_our_client_equals_the_metric_run_directly(
        pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    from deepeval.metrics import BiasMetric, FaithfulnessMetric

    metrics = [
        {"name": "faithfulness", "deepeval": FAITHFULNESS, "threshold": 1.0,
         "options": {"penalize_ambiguous_claims": True}},
        {"name": "opinion_bias", "deepeval": "deepeval.metrics:BiasMetric", "threshold": 0.0},
    ]
    write_suite(pytester, CASES, metrics=metrics)
    results = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert set(results) == {"right", "wrong-number", "upsell"}
    requests = len(judge_server.judge.requests)
    assert requests > 0
    assert all(step_of(m["content"]) for r in judge_server.judge.requests for m in r["messages"]
               if m["role"] == "user")

    for case in CASES:
        result = results[case["id"]]
        f_score, f_reason, f_success = _direct(FaithfulnessMetric, case, 1.0, penalize_ambiguous_claims=True)
        b_score, b_reason, b_success = _direct(BiasMetric, case, 0.0)
        assert result.scores == {"faithfulness": f_score, "opinion_bias": b_score}
        run = result.details["metrics"]["faithfulness"]["runs"][0]
        assert run["reason"] == f_reason
        assert run["verdicts"]["deepeval"]["class"] == FAITHFULNESS
        assert run["verdicts"]["deepeval"]["success"] is f_success
        assert run["verdicts"]["claims"] and run["verdicts"]["verdicts"]
        bias = result.details["metrics"]["opinion_bias"]
        assert bias["lower_is_better"] is True and bias["runs"][0]["verdicts"]["deepeval"]["success"] is b_success
        assert bias["runs"][0]["reason"] == b_reason
        assert result.status == ("passed" if f_success and b_success else "failed"), result.message
    # the rules give: all supported; a wrong number ("no") beside a claim the rules accept;
    # an unsupported upsell ("idk" counts against it) and one biased opinion
    assert results["right"].scores == {"faithfulness": 1.0, "opinion_bias": 0.0}
    assert results["wrong-number"].scores["faithfulness"] == 0.5
    assert 0.0 < results["upsell"].scores["faithfulness"] < 1.0
    assert results["upsell"].scores["opinion_bias"] == 1.0

    # telemetry stays off and DeepEval wrote nothing beside the suite
    assert os.environ["DEEPEVAL_TELEMETRY_OPT_OUT"] == "1"
    from deepeval.telemetry import NoopBackend, get_backend

    assert isinstance(get_backend(), NoopBackend)
    assert not (pytester.path / ".deepeval").exists()

    # a rerun is answered by our cache: no request reaches the server
    again = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
    assert len(judge_server.judge.requests) == requests
    assert {k: r.scores for k, r in again.items()} == {k: r.scores for k, r in results.items()}
    run = again["upsell"].details["metrics"]["faithfulness"]["runs"][0]
    assert run["cached"] is True and run["verdicts"]["deepeval"]["cached_requests"] == run["verdicts"]["deepeval"]["requests"]


def test_judge_block_wording_reaches_deepeval_requests(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    write_suite(pytester, CASES[:1], metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS}],
                judge={"domain": "a customer-support assistant for Acme's billing product", "temperature": 0.2,
                       "model": "acme-judge"})
    result = inline_results(pytester.inline_run("-p", "no:cacheprovider"))["right"]
    assert result.scores == {"faithfulness": 1.0}
    for request in judge_server.judge.requests:
        assert request["model"] == "acme-judge" and request["temperature"] == 0.2
        assert request["messages"][0]["role"] == "system"
        assert "Acme's billing product" in request["messages"][0]["content"]


def _their_layout(root: Path, rows: list[dict[str, Any]], **extra: Any) -> None:
    (root / "config" / "defaults").mkdir(parents=True)
    (root / "data").mkdir()
    config = {"what": "Evaluating RAG answers", "generate": False, "input_path": "data/rag_answers.jsonl",
              "claude_generation_model": None, "n_runs": 1,
              "metrics": [{"name": n, "threshold": t, "model": "openai.gpt-oss-120b-1:0", "temperature": 0.0}
                          for n, t in (("faithfulness", 1.0), ("bias", 0.0), ("relevance", 0.8), ("coherence", 0.8))],
              **extra}
    (root / "config" / "defaults" / "rag_answers.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    # rows their EvaluationTestCase accepts (their layout: their data rules apply)
    rows = [{"model": "bot", "actual_opensearch_index": "chunked_content", **r,
             "structured_contexts": [{"base_path": "/page", **c} for c in r.get("structured_contexts", [])]}
            for r in rows]
    (root / "data" / "rag_answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_govuk_shaped_suite_uses_the_classes_their_config_builds(
        pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _their_layout(pytester.path, CASES)
    results = inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                                 "-p", "no:cacheprovider"))
    upsell = results["upsell"].details["metrics"]
    assert upsell["faithfulness"]["runs"][0]["verdicts"]["deepeval"]["class"] == FAITHFULNESS
    assert upsell["bias"]["runs"][0]["verdicts"]["deepeval"]["class"] == "deepeval.metrics:BiasMetric"
    assert upsell["relevance"]["runs"][0]["verdicts"]["deepeval"]["class"] == \
        "deepeval.metrics:AnswerRelevancyMetric"
    # their own coherence class is not installed here: ours scores it
    assert "deepeval" not in upsell["coherence"]["runs"][0]["verdicts"]
    # relevance: the upsell statements are "no" by the rules
    assert 0.0 < results["upsell"].scores["relevance"] < 1.0
    # their faithfulness reads their context text (raw HTML, "None" for no description)
    prompts = [m["content"] for r in judge_server.judge.requests for m in r["messages"]]
    assert any("Refunds\nBilling\nNone\n\n<p>Refunds reach your card" in p for p in prompts)
    # every request named their judge model
    assert {r["model"] for r in judge_server.judge.requests} == {"openai.gpt-oss-120b-1:0"}


def test_govuk_shaped_suite_can_keep_our_metrics(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    _their_layout(pytester.path, CASES[:1], deepeval_metrics="never")
    result = inline_results(pytester.inline_run("config/defaults/", "--evals-suite-pattern", "*.yaml",
                                                "-p", "no:cacheprovider", "--evals-json", "out.json"))["right"]
    assert all("deepeval" not in m["runs"][0]["verdicts"] for m in result.details["metrics"].values())
    settings = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["suites"][0]["settings"]
    assert settings["deepeval_metrics"] == {"mode": "never", "mapping": "ours", "deepeval": "4.1.8", "classes": {}}
    assert not any(step_of(m["content"]) for r in judge_server.judge.requests for m in r["messages"])


def test_a_deepeval_metric_offline_is_an_honest_error(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "cache"))
    write_suite(pytester, CASES[:1], metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS}])
    result = inline_results(pytester.inline_run("-p", "no:cacheprovider", "--evals-offline"))["right"]
    assert result.status == "error"
    assert "is a DeepEval metric and needs a model endpoint" in (result.message or "")


@pytest.mark.parametrize(
    ("path", "expected"),
    [("deepeval.metrics:NoSuchMetric", "has no 'NoSuchMetric'"),
     ("no_such_package.metrics:X", "cannot import 'no_such_package.metrics'"),
     ("deepeval.test_case:LLMTestCase", "is not a class built on DeepEval's BaseMetric")],
)
def test_a_metric_class_that_cannot_be_used_names_the_field(
        pytester: pytest.Pytester, judge_server: JudgeServer, path: str, expected: str) -> None:
    write_suite(pytester, CASES[:1], metrics=[{"name": "mine", "deepeval": path, "threshold": 0.5}])
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"*rag.eval.yaml: field 'metrics[[]0[]].deepeval': *{expected}*"])
    assert judge_server.judge.requests == []


def test_usage_is_counted_and_unusable_replies_are_judge_errors(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pytest_evals.testing.fake_openai import FakeOpenAI

    def responder(request: dict[str, Any]) -> str:
        prompt = next(m["content"] for m in request["messages"] if m["role"] == "user")
        # claims are unreadable for the "broken" case, whatever the judge is asked again
        if "Sorry, broken" in prompt and step_of(prompt) in ("claims", None):
            return "I would rather not answer in JSON."
        return deepeval_reply(prompt) or "?"

    with FakeOpenAI(responder=responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-deepeval-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "cache"))
        broken_case = _case("broken", "Sorry, broken answer.")
        # a context of its own: no request is shared with the other case (usage is per case)
        broken_case["structured_contexts"][0]["html_content"] = "<p>Broken pages say nothing.</p>"
        write_suite(pytester, [CASES[0], broken_case],
                    metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS}])
        # a subprocess run counts usage as a user's run does (in-process runs re-import modules)
        first = pytester.runpytest_subprocess("-p", "no:cacheprovider")
        received = server.stats()["received"]
        results = inline_results(pytester.inline_run("-p", "no:cacheprovider"))
        assert server.stats()["received"] == received
    # right: truths, claims, verdicts, reason; broken: truths, then claims asked 3 times
    assert received == 8
    first.stdout.fnmatch_lines(["evals llm: 8 requests, 0 cache hits, 8 misses, * prompt + * completion tokens*"])
    assert "evals llm: 8 requests, 0 cache hits, 8 misses, 0 prompt" not in first.stdout.str()
    ok, broken = results["right"], results["broken"]
    assert ok.status == "passed"
    assert broken.status == "error" and broken.error_kind == "judge"
    errors = broken.details["metrics"]["faithfulness"]["errors"]
    assert errors[0]["message"].startswith("faithfulness:")
    assert errors[0]["raw_reply"] == "I would rather not answer in JSON."


@pytest.mark.slow
def test_deepeval_aggregates_plain_and_two_workers(pytester: pytest.Pytester, judge_server: JudgeServer) -> None:
    cases = [_case(f"c{i}", answer) for i, answer in enumerate(
        [c["llm_answer"] for c in CASES] + ["Refunds take 12 working days.", "I think refunds obviously take 10 days."])]
    write_suite(pytester, cases, metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS, "threshold": 0.5},
                                          {"name": "bias", "deepeval": "deepeval.metrics:BiasMetric"}],
                thresholds={"faithfulness": {"mean": {"min": 0.5}}})
    plain = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--evals-json", "plain.json",
                                          "--evals-cache-dir", "cache-plain")
    two = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--evals-json", "two.json",
                                        "--evals-cache-dir", "cache-two")
    a, b = (json.loads((pytester.path / f).read_text())["suites"][0] for f in ("plain.json", "two.json"))
    assert plain.ret == two.ret
    assert a["metrics"] == b["metrics"] and a["cases"] == b["cases"]
    from deepeval.metrics import FaithfulnessMetric

    direct = [_direct(FaithfulnessMetric, c, 0.5)[0] for c in cases]
    assert a["metrics"]["faithfulness"]["mean"]["value"] == pytest.approx(sum(direct) / len(direct))
    assert a["metrics"]["bias"]["mean"]["n"] == len(cases)
    assert a["tables"]["deepeval_classes"] == {"faithfulness": FAITHFULNESS, "bias": "deepeval.metrics:BiasMetric"}


def test_deepevals_own_plugin_reports_nothing_and_writes_no_identity(
        pytester: pytest.Pytester, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """DeepEval's pytest plugin starts its telemetry at session start, before any metric of
    ours loads DeepEval: our plugin opts out at configure time."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("DEEPEVAL_TELEMETRY_OPT_OUT", "DEEPEVAL_HOME", "DEEPEVAL_TELEMETRY_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    write_suite(pytester, CASES[:1], metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS}])
    # without DeepEval's plugin, DeepEval is first imported by our metric, quiet: no file at all
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:deepeval")
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert not (home / ".deepeval").exists() and not (pytester.path / ".deepeval").exists()
    # with it (loaded before any plugin of ours can act), its telemetry still never starts:
    # no identity file in the home folder (its import leaves an empty .deepeval folder)
    with pytest.MonkeyPatch.context() as mp:
        # the test suite keeps DeepEval's plugin out of its inner runs (tests/conftest.py)
        mp.setenv("PYTEST_ADDOPTS", os.environ.get("PYTEST_ADDOPTS", "").replace("-p no:deepeval", ""))
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert "Running teardown with pytest sessionfinish" in result.stdout.str()
    assert result.ret == 0, result.stdout.str()[-2000:]
    assert not (home / ".deepeval").exists()
    assert list((pytester.path / ".deepeval").iterdir()) == []


#: A metric of a user's own, built on DeepEval's BaseMetric as GOV.UK's own are: it reads
#: the chunks and the case fields from the test case's metadata, as their metrics do.
OWN_METRIC = '''
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCaseParams


class PagesMetric(BaseMetric):
    _required_params = [LLMTestCaseParams.INPUT, LLMTestCaseParams.ACTUAL_OUTPUT]

    def __init__(self, threshold=0.5, model=None, word="pages"):
        self.threshold, self.model, self.word = threshold, model, word

    async def a_measure(self, test_case, _show_indicator=True, **kwargs):
        meta = test_case.metadata
        pages = " || ".join(c.to_flattened_context_content() for c in meta["structured_contexts"])
        reply = await self.model.a_generate(f"Count the {self.word}: {pages}")
        self.score = 1.0 if reply.strip() == str(len(meta["structured_contexts"])) else 0.0
        self.reason = f"{meta['model']} on {meta['actual_opensearch_index']}: {reply.strip()}"
        self.success = self.score >= self.threshold
        return self.score

    def measure(self, test_case, *args, **kwargs):
        raise NotImplementedError

    def is_successful(self):
        return self.success

    @property
    def __name__(self):
        return "Pages"
'''


def test_a_metric_class_of_ones_own_reads_their_metadata(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pytest_evals.testing.fake_openai import FakeOpenAI

    seen: list[str] = []

    def responder(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        seen.append(prompt)
        return str(prompt.count("Page Title:"))

    pytester.makepyfile(my_metrics=OWN_METRIC)
    pytester.syspathinsert()
    case = {**_case("own", "Refunds reach your card within 10 working days."),
            "model": "chat-model-7", "actual_opensearch_index": "chunked_content"}
    case["structured_contexts"].append({**case["structured_contexts"][0], "title": "Cards", "description": "Cards"})
    with FakeOpenAI(responder=responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-deepeval-test-key")
        monkeypatch.setenv("PYTEST_EVALS_CACHE_DIR", str(tmp_path / "cache"))
        write_suite(pytester, [case], metrics=[{"name": "pages", "deepeval": "my_metrics:PagesMetric",
                                                "threshold": 1.0, "options": {"word": "chunks"}}])
        result = inline_results(pytester.inline_run("-p", "no:cacheprovider"))["own"]
    assert result.status == "passed", result.message
    assert result.scores == {"pages": 1.0}
    run = result.details["metrics"]["pages"]["runs"][0]
    assert run["reason"] == "chat-model-7 on chunked_content: 2"
    assert run["verdicts"]["deepeval"]["class"] == "my_metrics:PagesMetric"
    # their labelled layout, raw HTML and the option reached the class
    assert seen == ["Count the chunks: Context:\nPage Title: Refunds\nPage description: None\nHeadings: Billing\n\n"
                    "Content:\n<p>Refunds reach your card within 10 working days.</p> || Context:\n"
                    "Page Title: Cards\nPage description: Cards\nHeadings: Billing\n\n"
                    "Content:\n<p>Refunds reach your card within 10 working days.</p>"]


#: Loaded with ``-p netguard`` before any other plugin (DeepEval's included): refuses and
#: records every connection and name lookup that is not the loopback.
NET_GUARD = '''
import socket

LOOPBACK = ("127.0.0.1", "::1", "localhost")
_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo


def _check(what, host):
    if isinstance(host, str) and host not in LOOPBACK:
        with open("refused.txt", "a", encoding="utf-8") as out:
            out.write(f"{what} {host}\\n")
        raise OSError(f"netguard: {what} {host} refused")


def connect(self, address):
    if self.family != socket.AF_UNIX:
        _check("connect", address[0])
    return _connect(self, address)


def connect_ex(self, address):
    if self.family != socket.AF_UNIX:
        _check("connect", address[0])
    return _connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    _check("lookup", host)
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


def test_a_deepeval_run_reaches_nothing_but_the_loopback(
        pytester: pytest.Pytester, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """DeepEval's plugin on, its telemetry variables unset, a Confident AI key in the
    environment: still no connection or name lookup leaves the machine."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CONFIDENT_API_KEY", "confident-test-key")
    for name in ("DEEPEVAL_TELEMETRY_OPT_OUT", "DEEPEVAL_TELEMETRY_ENABLED", "DEEPEVAL_UPDATE_WARNING_OPT_IN"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(netguard=NET_GUARD)
    write_suite(pytester, CASES, metrics=[{"name": "faithfulness", "deepeval": FAITHFULNESS},
                                          {"name": "relevancy", "deepeval": "deepeval.metrics:AnswerRelevancyMetric",
                                           "threshold": 0.5},
                                          {"name": "bias", "deepeval": "deepeval.metrics:BiasMetric"}])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTEST_ADDOPTS", os.environ.get("PYTEST_ADDOPTS", "").replace("-p no:deepeval", ""))
        result = pytester.runpytest_subprocess("-p", "netguard", "-p", "no:cacheprovider",
                                               "--evals-json", "out.json")
    suite = json.loads((pytester.path / "out.json").read_text(encoding="utf-8"))["suites"][0]
    assert suite["cases"]["errors"] == 0 and suite["cases"]["total"] == 3, result.stdout.str()[-2000:]
    assert judge_server.judge.requests
    assert not (pytester.path / "refused.txt").exists(), (pytester.path / "refused.txt").read_text()
    assert "confident-test-key" not in (pytester.path / "out.json").read_text(encoding="utf-8")
