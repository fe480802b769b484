"""Sentence meaning for the offline generator: how close a sentence is to the question in meaning.

Documentation answers everyday questions in its own words ("where do the pages end up" for "the
output directory"): a phrase, not one word that WordNet links to another. The local sentence
encoder (`rag.ingest.encoder`, all-MiniLM-L6-v2) scores that closeness. It is slow next to the
lexical rules (about 150 sentences a second), so the generator asks it only about the sentences of
the blocks issued for a question the lexical rules could not answer, and vectors are kept by text
in a bounded LRU (the same chunks are read question after question). Without the encoder
(`RAG_ENCODER=off`, or the weights not installed) `similarities` returns None and the generator
behaves as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from rag.ingest.encoder import encoder

# vectors kept (384 float32 each: about 1.5 kB, so some 30 MB at most)
CACHE_SIZE = 20_000

_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_lock = threading.Lock()


def available() -> bool:
    """Whether the sentence encoder is installed and switched on."""
    return encoder() is not None


def similarities(question: str, texts: Sequence[str]) -> np.ndarray | None:
    """The cosine similarity of each text to the question (float32, one per text), or None without
    the encoder. Only texts not seen before are encoded."""
    model = encoder()
    if model is None:
        return None
    wanted = [question, *texts]
    with _lock:
        missing = list(dict.fromkeys(t for t in wanted if t not in _cache))
    fresh = model.encode(missing) if missing else np.zeros((0, model.dim), dtype=np.float32)
    with _lock:
        for text, vector in zip(missing, fresh, strict=True):
            _cache[text] = vector
        vectors = []
        for text in wanted:
            vector = _cache.get(text)
            if vector is None:  # evicted by a concurrent caller between the two steps: use the fresh one
                vector = fresh[missing.index(text)]
            else:
                _cache.move_to_end(text)
            vectors.append(vector)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    matrix = np.stack(vectors)
    return np.asarray(matrix[1:] @ matrix[0], dtype=np.float32)


def clear() -> None:
    """Forget every cached vector (tests switch the encoder on and off)."""
    with _lock:
        _cache.clear()
