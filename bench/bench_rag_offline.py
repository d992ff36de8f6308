"""How sensitive are the offline (embedding) rag_answers metrics, and how fast?

Scores the example suite's saved answers (the baseline), then the same answers with
one change each, and prints how often each metric drops relative to the baseline:

- off-topic: a sentence from another case's answer appended (relevance and
  faithfulness should drop);
- contradiction: every amount changed (e.g. £300 -> £390): a real judge marks it
  contradicted; the embedding baseline is expected NOT to notice (documented limit);
- truncated: the answer cut to its first sentence (factual_recall may drop).

Then the time per case (model loaded), against the same cases re-scored with every
sentence already embedded (the non-model part).

    python bench/bench_rag_offline.py
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path

from pytest_evals.families.rag.cases import RagCase
from pytest_evals.families.rag.config import RagMetricSpec
from pytest_evals.families.rag.inputs import MetricInputs
from pytest_evals.families.rag.offline import OfflineCaseJudge
from pytest_evals.families.rag.sentences import split_sentences
from pytest_evals.llm.offline_judge import get_embedder

DATA = Path(__file__).resolve().parents[1] / "eval_suites" / "data" / "rag_answers.jsonl"
METRICS = ["relevance", "faithfulness", "context_relevancy", "coherence", "factual_correctness", "factual_recall"]
_AMOUNT = re.compile(r"£(\d+)")


async def score(case: RagCase) -> dict[str, float]:
    judge = OfflineCaseJudge(get_embedder(), MetricInputs.from_case(case))
    return {m: (await judge.run(m, RagMetricSpec(name=m))).score for m in METRICS}  # type: ignore[arg-type]


def perturbations(cases: list[RagCase]) -> dict[str, list[RagCase | None]]:
    out: dict[str, list[RagCase | None]] = {"off-topic": [], "contradiction": [], "truncated": []}
    for i, case in enumerate(cases):
        answer = case.llm_answer or ""
        other = split_sentences(cases[(i + 5) % len(cases)].llm_answer or "")[0]
        out["off-topic"].append(case.model_copy(update={"llm_answer": f"{answer} {other}"}))
        changed = _AMOUNT.sub(lambda m: f"£{int(m.group(1)) + 90}", answer)
        out["contradiction"].append(case.model_copy(update={"llm_answer": changed}) if changed != answer else None)
        first = split_sentences(answer)[0]
        out["truncated"].append(case.model_copy(update={"llm_answer": first}) if first != answer else None)
    return out


async def main() -> None:
    cases = [RagCase.model_validate(json.loads(line)) for line in DATA.read_text(encoding="utf-8").splitlines()]
    get_embedder().encode(["warm up"])
    started = time.perf_counter()
    base = [await score(c) for c in cases]
    per_case = (time.perf_counter() - started) / len(cases)
    print(f"baseline: {len(cases)} saved answers of the example suite")
    print(f"{'perturbation':14} {'cases':>5}  " + "  ".join(f"{m[:12]:>12}" for m in METRICS))
    for name, variants in perturbations(cases).items():
        drops = dict.fromkeys(METRICS, 0)
        n = 0
        for b, v in zip(base, variants, strict=True):
            if v is None:
                continue
            n += 1
            s = await score(v)
            for m in METRICS:
                drops[m] += s[m] < b[m] - 1e-9
        print(f"{name:14} {n:>5}  " + "  ".join(f"{drops[m] / n:>12.0%}" for m in METRICS))
    # the same cases again: every sentence is in the embedder's memo, so what remains is
    # flattening, sentence splitting and the metric arithmetic
    started = time.perf_counter()
    for c in cases:
        await score(c)
    warm = (time.perf_counter() - started) / len(cases)
    print(f"time per case, all six metrics: {per_case * 1000:.1f} ms with embedding; "
          f"{warm * 1000:.1f} ms without it (1/{per_case / warm:.0f}): the model is the cost")


if __name__ == "__main__":
    asyncio.run(main())
