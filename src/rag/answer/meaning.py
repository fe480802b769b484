"""Meaning-level measurements of a sentence against its cited spans, from the local sentence encoder.

Two measurements, both None-safe (`available()` is False without the encoder's weights or with
`RAG_ENCODER=off`, and then no caller changes its decision):
- `similarity(a, b)`: the cosine of the two texts' sentence vectors (all-MiniLM-L6-v2);
- `word_similarities(text, words, other, other_words)`: for each word of `text` (given by character
  offsets), the cosine of its contextual vector (the mean of its word pieces' last-layer vectors) with
  each word of `other`: a BERTScore-like alignment of words by what they mean in their sentence.
Only the sentence and its cited spans are encoded; vectors are cached per text, since one sentence is
judged against the same span by several rules and the same span is cited by several sentences.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from rag.ingest.encoder import encoder

Matrix = npt.NDArray[np.float32]


def available() -> bool:
    return encoder() is not None


@lru_cache(maxsize=2048)
def _sentence_vector(text: str) -> Matrix:
    model = encoder()
    assert model is not None
    return np.asarray(model.encode([text])[0], dtype=np.float32)


@lru_cache(maxsize=2048)
def _token_vectors(text: str) -> tuple[Matrix, tuple[tuple[int, int], ...]]:
    model = encoder()
    assert model is not None
    vectors, offsets = model.tokens(text)
    return vectors, tuple(offsets)


def similarity(a: str, b: str) -> float | None:
    """Cosine of the sentence vectors of `a` and `b`; None without the encoder."""
    if not available():
        return None
    return float(_sentence_vector(a) @ _sentence_vector(b))


def word_vectors(text: str, words: Sequence[tuple[int, int]]) -> Matrix:
    """Unit vectors of the words of `text` at the given (start, end) offsets: the mean of the contextual
    vectors of the word pieces inside each word (a zero row for a word no piece falls in, such as a
    word past the model's 256 tokens)."""
    vectors, offsets = _token_vectors(text)
    out = np.zeros((len(words), vectors.shape[1] if vectors.size else 384), dtype=np.float32)
    for i, (start, end) in enumerate(words):
        inside = [k for k, (s, e) in enumerate(offsets) if s >= start and e <= end]
        if not inside:
            continue
        mean = vectors[inside].mean(axis=0)
        out[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return out


def word_similarities(
    text: str, words: Sequence[tuple[int, int]], other: str, other_words: Sequence[tuple[int, int]]
) -> Matrix | None:
    """Cosine of each word of `text` (rows) with each word of `other` (columns) by their contextual
    vectors; None without the encoder."""
    if not available():
        return None
    if not words or not other_words:
        return np.zeros((len(words), len(other_words)), dtype=np.float32)
    return np.asarray(word_vectors(text, words) @ word_vectors(other, other_words).T, dtype=np.float32)
