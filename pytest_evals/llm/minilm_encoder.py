"""The embedded model's forward pass in torch alone: BERT encoder, mean pooling, L2 norm.

The offline judge used to load all-MiniLM-L6-v2 through sentence-transformers, which
imports transformers, scikit-learn, datasets and more: about 6 s of CPU in every process
that judges offline (each xdist worker, every CI run), against about 1.5 s for torch. The
model is small and fixed (a 6-layer BERT: embeddings, self-attention, GELU feed-forward,
post-layer norms; then the mean of the token vectors under the attention mask, L2
normalised), so it is computed here with torch's own functions, from the package's
``model.safetensors`` and ``tokenizer.json``, read by safetensors and tokenizers.

Batches are made as sentence-transformers makes them (texts sorted by character length,
longest first; each batch padded to its longest text; 256 tokens at most), so the padding,
and with it the arithmetic, is the same: vectors equal sentence-transformers' to a few
float32 ulps (``tests/llm/test_offline.py`` compares them).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np


class MiniLMEncoder:
    """Sentence vectors from a BERT-style sentence-transformers directory (mean pooling)."""

    def __init__(self, path: Path, *, device: str = "cpu") -> None:
        import torch
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        self._torch = torch
        self.device = torch.device(device)
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{path}: not a mean-pooled BERT sentence model")
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.max_tokens = int(st_config.get("max_seq_length", 256))
        self.weights: dict[str, Any] = {
            name: tensor.to(self.device) for name, tensor in load_file(str(path / "model.safetensors")).items()
        }
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_tokens)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        torch = self._torch
        # sentence-transformers strips each text and sorts by character length (numpy's
        # default argsort): the same batches, the same padding.
        stripped = [str(t).strip() for t in texts]
        order = np.argsort([-len(t) for t in stripped])
        out = np.zeros((len(stripped), self.hidden), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(stripped), batch_size):
                rows = order[start : start + batch_size]
                encodings = self.tokenizer.encode_batch([stripped[i] for i in rows])
                width = max(len(e.ids) for e in encodings)
                ids = torch.zeros((len(rows), width), dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, encoding in enumerate(encodings):
                    n = len(encoding.ids)
                    ids[r, :n] = torch.tensor(encoding.ids, dtype=torch.long)
                    mask[r, :n] = 1
                vectors = self._forward(ids.to(self.device), mask.to(self.device))
                out[rows] = vectors.cpu().numpy()
        return out

    def _forward(self, ids: Any, mask: Any) -> Any:
        torch = self._torch
        fn = torch.nn.functional
        w = self.weights
        batch, width = ids.shape
        head = self.hidden // self.heads
        positions = torch.arange(width, device=ids.device).unsqueeze(0)
        # BERT's embeddings: word + token type (all 0: one segment), then + position.
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][torch.zeros_like(ids)]
        x = x + w["embeddings.position_embeddings.weight"][positions]
        x = self._norm(x, "embeddings.LayerNorm")
        # Padding positions get the lowest float added to their attention scores.
        blocked = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def split(t: Any) -> Any:
                return t.view(batch, width, self.heads, head).transpose(1, 2)

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            context = fn.scaled_dot_product_attention(q, k, v, attn_mask=blocked, dropout_p=0.0, scale=1.0 / math.sqrt(head))
            context = context.transpose(1, 2).reshape(batch, width, self.hidden)
            attended = self._norm(self._linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inner = fn.gelu(self._linear(attended, p + "intermediate.dense"))
            x = self._norm(self._linear(inner, p + "output.dense") + attended, p + "output.LayerNorm")
        weights = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(1) / torch.clamp(weights.sum(1), min=1e-9)
        return fn.normalize(pooled, p=2, dim=1)

    def _linear(self, x: Any, name: str) -> Any:
        return self._torch.nn.functional.linear(x, self.weights[name + ".weight"], self.weights[name + ".bias"])

    def _norm(self, x: Any, name: str) -> Any:
        return self._torch.nn.functional.layer_norm(
            x, (self.hidden,), self.weights[name + ".weight"], self.weights[name + ".bias"], self.eps
        )
