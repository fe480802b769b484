"""Meaning-level measurements from the local sentence encoder, shared by the stages that use it.

Documentation answers everyday questions in its own words ("where do the pages end up" for "the
output directory"), and a model's sentence may restate its cited span in other words: a phrase,
not one word WordNet links to another. The local sentence encoder (`rag.language.encoder`,
all-MiniLM-L6-v2) scores that closeness:
- `similarities(question, texts)`: each text's cosine to the question (the offline generator's
  meaning pass; the answer gate's features);
- `similarity(a, b)`: the cosine of two texts (the support check's meaning signal);
- `word_similarities(text, words, other, other_words)`: for each word of `text` (character offsets),
  the cosine of its contextual vector (the mean of its word pieces' last-layer vectors) with each
  word of `other`: a BERTScore-like alignment of words by what they mean in their sentence.

The encoder is slow next to the lexical rules (about 150 sentences a second), so sentence vectors
are kept by text in one bounded LRU (`CACHE_SIZE`; the same chunks and spans are read again and
again) and callers encode only what a decision needs. Without the encoder (`RAG_ENCODER=off`, or
the weights not installed) every measurement is None and no caller changes its decision.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from rag.language.encoder import encoder

__all__ = ["available", "clear", "similarities", "similarity", "vectors", "word_similarities"]

Matrix = npt.NDArray[np.float32]

# sentence vectors kept (384 float32 each: about 1.5 kB, so some 30 MB at most)
CACHE_SIZE = 20_000

_cache: OrderedDict[str, Matrix] = OrderedDict()
_lock = threading.Lock()


def available() -> bool:
    """Whether the sentence encoder is installed and switched on."""
    return encoder() is not None


def vectors(texts: Sequence[str]) -> list[Matrix] | None:
    """The unit vector of each text (in order), or None without the encoder. Only texts not seen
    before are encoded, in one batch."""
    model = encoder() if available() else None
    if model is None:
        return None
    with _lock:
        missing = list(dict.fromkeys(t for t in texts if t not in _cache))
    fresh = model.encode(missing) if missing else np.zeros((0, model.dim), dtype=np.float32)
    out: list[Matrix] = []
    with _lock:
        for text, vector in zip(missing, fresh, strict=True):
            _cache[text] = vector
        for text in texts:
            vector = _cache.get(text)
            if vector is None:  # evicted by a concurrent caller between the two steps: use the fresh one
                vector = fresh[missing.index(text)]
            else:
                _cache.move_to_end(text)
            out.append(vector)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return out


def similarities(question: str, texts: Sequence[str]) -> Matrix | None:
    """The cosine similarity of each text to the question (float32, one per text), or None without
    the encoder."""
    found = vectors([question, *texts])
    if found is None:
        return None
    matrix = np.stack(found)
    return np.asarray(matrix[1:] @ matrix[0], dtype=np.float32)


def similarity(a: str, b: str) -> float | None:
    """Cosine of the sentence vectors of `a` and `b`; None without the encoder."""
    found = vectors([a, b])
    if found is None:
        return None
    return float(found[0] @ found[1])


@lru_cache(maxsize=2048)
def _token_vectors(text: str) -> tuple[Matrix, tuple[tuple[int, int], ...]]:
    model = encoder()
    assert model is not None
    vecs, offsets = model.tokens(text)
    return vecs, tuple(offsets)


def word_vectors(text: str, words: Sequence[tuple[int, int]]) -> Matrix:
    """Unit vectors of the words of `text` at the given (start, end) offsets: the mean of the contextual
    vectors of the word pieces inside each word (a zero row for a word no piece falls in, such as a
    word past the model's 256 tokens)."""
    vecs, offsets = _token_vectors(text)
    out = np.zeros((len(words), vecs.shape[1] if vecs.size else 384), dtype=np.float32)
    for i, (start, end) in enumerate(words):
        inside = [k for k, (s, e) in enumerate(offsets) if s >= start and e <= end]
        if not inside:
            continue
        mean = vecs[inside].mean(axis=0)
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


def clear() -> None:
    """Forget every cached vector (tests switch the encoder on and off)."""
    with _lock:
        _cache.clear()
    _token_vectors.cache_clear()
