"""The embedded offline judge: all-MiniLM-L6-v2 from site-packages, no network."""

from __future__ import annotations

import asyncio
import sys

import numpy as np
import pytest

from pytest_evals.llm.offline_judge import (
    DISPLAY_NAME,
    Embedder,
    OfflineJudgeUnavailable,
    get_embedder,
)

pytestmark = pytest.mark.slow  # loads torch and the model once (a few seconds)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    pytest.importorskip("sentence_transformers")
    return get_embedder()


def test_named_as_the_offline_baseline(embedder: Embedder) -> None:
    assert embedder.name == DISPLAY_NAME == "all-MiniLM-L6-v2 (embedded offline judge)"
    assert get_embedder() is embedder


def test_encode_is_normalised_and_sensible(embedder: Embedder) -> None:
    vectors = embedder.encode(
        ["The cat sits on the mat.", "A cat is sitting on a mat.", "Quarterly revenue rose 5%."]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert paraphrase > 0.8 and unrelated < 0.3
    assert (
        embedder.similarity("Paris is the capital of France.", "France's capital city is Paris.")
        > 0.8
    )


def test_repeated_texts_are_memoised(embedder: Embedder) -> None:
    before = embedder.encoded_texts
    first = embedder.encode(["memo me once", "memo me once", "and me"])
    assert embedder.encoded_texts - before == 2
    again = embedder.encode(["and me", "memo me once"])
    assert embedder.encoded_texts - before == 2
    assert np.array_equal(again[1], first[0])


def test_aencode_coalesces_concurrent_calls(embedder: Embedder) -> None:
    texts = [[f"coalesced sentence {i}", f"another {i}"] for i in range(40)]

    async def go() -> list[np.ndarray]:
        return await asyncio.gather(*(embedder.aencode(t) for t in texts))

    batches_before = embedder.batches
    results = asyncio.run(go())
    assert embedder.batches - batches_before <= 2  # 40 calls, one or two model batches
    for pair, vectors in zip(texts, results, strict=True):
        assert np.allclose(vectors, embedder.encode(pair), atol=1e-6)


def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now fails
    with pytest.raises(OfflineJudgeUnavailable, match=r'pip install -e "\.\[offline\]"'):
        Embedder().encode(["x"])
