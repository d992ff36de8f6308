"""A small, deterministic retrieval-and-answer system: the example ``generate: true`` target.

``answer(case)`` ranks the chunks of ``../data/rag_corpus.jsonl`` against the question
(BM25 over title, headings, description and text), keeps the best two, and answers
extractively with the sentences of those chunks that share the most words with the
question. It returns the data set's fields, ``llm_answer`` and ``structured_contexts``,
so ``rag_answers_generate.eval.yaml`` can score it with every metric. No model, no
network: it stands in for a real RAG system so the generate path runs anywhere.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "data" / "rag_corpus.jsonl"
TOP_CHUNKS = 2
MAX_SENTENCES = 3
NOT_FOUND = "Sorry, I could not find anything on GOV.UK that answers that question."

_WORD = re.compile(r"[a-z0-9£]+(?:[.,][0-9]+)?")
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9£])")
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "get",
    "how", "i", "if", "in", "is", "it", "my", "of", "on", "or", "the", "to", "what", "when",
    "where", "which", "who", "will", "with", "you", "your", "me", "much", "many",
})


def _terms(text: str) -> list[str]:
    # Crude plural folding is enough for a demo corpus ("payments" ~ "payment").
    return [w.rstrip("s") if len(w) > 3 else w for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def _plain(html: str) -> str:
    from inscriptis import get_text

    return get_text(html)


@lru_cache(maxsize=1)
def _index() -> tuple[list[dict[str, Any]], list[Counter[str]], dict[str, float], float]:
    chunks = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = []
    for c in chunks:
        text = " ".join([c["title"], *(c.get("heading_hierarchy") or []), c.get("description") or "",
                         _plain(c["html_content"])])
        docs.append(Counter(_terms(text)))
    n = len(docs)
    df = Counter(t for d in docs for t in d)
    idf = {t: math.log(1 + (n - k + 0.5) / (k + 0.5)) for t, k in df.items()}
    avg_len = sum(sum(d.values()) for d in docs) / n
    return chunks, docs, idf, avg_len


def _bm25(query: list[str], doc: Counter[str], idf: dict[str, float], avg_len: float) -> float:
    k1, b = 1.2, 0.75
    length = sum(doc.values())
    # Summed in sorted term order: a set's order follows the per-process string hash
    # seed, so two xdist workers added the same terms in different orders and got
    # scores differing in the last bits, enough to rank two close chunks differently.
    return math.fsum(
        idf[t] * doc[t] * (k1 + 1) / (doc[t] + k1 * (1 - b + b * length / avg_len))
        for t in sorted(set(query))
        if doc.get(t, 0)
    )


def retrieve(question: str, k: int = TOP_CHUNKS) -> list[dict[str, Any]]:
    chunks, docs, idf, avg_len = _index()
    query = _terms(question)
    scored = [(_bm25(query, d, idf, avg_len), -i) for i, d in enumerate(docs)]
    best = sorted(((s, i) for s, i in scored if s > 0), reverse=True)[:k]
    return [dict(chunks[-i]) for _s, i in best]


def compose(question: str, contexts: list[dict[str, Any]]) -> str:
    query = set(_terms(question))
    candidates: list[tuple[int, int, str]] = []
    for ci, c in enumerate(contexts):
        for line in _plain(c["html_content"]).splitlines():
            line = line.strip().lstrip("*").strip()
            for sentence in _SENTENCE_BREAK.split(line):
                words = set(_terms(sentence))
                if sentence.endswith((".", "!", "?")) and words & query:
                    candidates.append((len(words & query), ci * 1000 + len(candidates), sentence))
    best = sorted(candidates, key=lambda c: (-c[0], c[1]))[:MAX_SENTENCES]
    return " ".join(s for _n, _pos, s in sorted(best, key=lambda c: c[1])) or NOT_FOUND


def answer(case: dict[str, Any]) -> dict[str, Any]:
    """The target: ``{"question": ...}`` in, ``{"llm_answer", "structured_contexts"}`` out."""
    question = str(case["question"])
    contexts = retrieve(question)
    return {"llm_answer": compose(question, contexts), "structured_contexts": contexts}
