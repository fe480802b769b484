"""Meaning-level measurements from the local sentence encoder, shared by the stages that use it.

Documentation answers everyday questions in its own words ("where do the pages end up" for "the
output directory"), and a model's sentence may restate its cited span in other words: a phrase,
not one word WordNet links to another. The local sentence encoder (`rag.language.encoder`,
all-MiniLM-L6-v2) scores that closeness, through a `Meaning`:
- `similarities(question, texts)`: each text's cosine to the question (the offline generator's
  meaning pass; the answer gate's features);
- `similarity(a, b)`: the cosine of two texts (the support check's meaning signal);
- `word_similarities(text, words, other, other_words)`: for each word of `text` (character offsets),
  the cosine of its contextual vector (the mean of its word pieces' last-layer vectors) with each
  word of `other`: a BERTScore-like alignment of words by what they mean in their sentence.

The encoder is slow next to the lexical rules (about 150 sentences a second), so a `Meaning` keeps
sentence vectors by text in one bounded LRU (`CACHE_SIZE`; the same chunks and spans are read again and
again) and callers encode only what a decision needs. `open_meaning(encoder, encoder_dir)` gives the
one `Meaning` of the weights the settings name (loaded on first use, once per process per folder), or
None when they are switched off (`RAG_ENCODER=off`) or not installed: then no caller changes its decision.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from pathlib import Path

import numpy as np
import numpy.typing as npt

from rag.language.encoder import Encoder, model_dir

__all__ = ["CACHE_SIZE", "Matrix", "Meaning", "open_meaning"]

Matrix = npt.NDArray[np.float32]

# sentence vectors kept (384 float32 each: about 1.5 kB, so some 30 MB at most)
CACHE_SIZE = 20_000
# texts whose word-piece vectors are kept (`Meaning.word_similarities`)
TOKEN_CACHE_SIZE = 2048


class Meaning:
    """Meaning-level measurements by the encoder `load` returns (called once, on first use; None: no
    encoder, and every measurement is None). Thread-safe."""

    def __init__(self, load: Callable[[], Encoder | None]) -> None:
        self._load = load
        self._encoder: Encoder | None = None
        self._loaded = False
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._token_vectors = lru_cache(maxsize=TOKEN_CACHE_SIZE)(self._tokens)

    def encoder(self) -> Encoder | None:
        """The encoder, loaded on the first call; None when it could not be."""
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    self._encoder = self._load()
                    self._loaded = True
        return self._encoder

    def available(self) -> bool:
        """Whether the sentence encoder loaded."""
        return self.encoder() is not None

    def vectors(self, texts: Sequence[str]) -> list[Matrix] | None:
        """The unit vector of each text (in order), or None without the encoder. Only texts not seen
        before are encoded, in one batch."""
        model = self.encoder() if self.available() else None
        if model is None:
            return None
        cache = self._cache
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in cache))
        fresh = model.encode(missing) if missing else np.zeros((0, model.dim), dtype=np.float32)
        out: list[Matrix] = []
        with self._lock:
            for text, vector in zip(missing, fresh, strict=True):
                cache[text] = vector
            for text in texts:
                vector = cache.get(text)
                if vector is None:  # evicted by a concurrent caller between the two steps: use the fresh one
                    vector = fresh[missing.index(text)]
                else:
                    cache.move_to_end(text)
                out.append(vector)
            while len(cache) > CACHE_SIZE:
                cache.popitem(last=False)
        return out

    def similarities(self, question: str, texts: Sequence[str]) -> Matrix | None:
        """The cosine similarity of each text to the question (float32, one per text), or None without
        the encoder."""
        found = self.vectors([question, *texts])
        if found is None:
            return None
        matrix = np.stack(found)
        return np.asarray(matrix[1:] @ matrix[0], dtype=np.float32)

    def similarity(self, a: str, b: str) -> float | None:
        """Cosine of the sentence vectors of `a` and `b`; None without the encoder."""
        found = self.vectors([a, b])
        if found is None:
            return None
        return float(found[0] @ found[1])

    def _tokens(self, text: str) -> tuple[Matrix, tuple[tuple[int, int], ...]]:
        model = self.encoder()
        assert model is not None
        vecs, offsets = model.tokens(text)
        return vecs, tuple(offsets)

    def word_vectors(self, text: str, words: Sequence[tuple[int, int]]) -> Matrix:
        """Unit vectors of the words of `text` at the given (start, end) offsets: the mean of the
        contextual vectors of the word pieces inside each word (a zero row for a word no piece falls in,
        such as a word past the model's 256 tokens). Needs the encoder."""
        vecs, offsets = self._token_vectors(text)
        out = np.zeros((len(words), vecs.shape[1] if vecs.size else 384), dtype=np.float32)
        for i, (start, end) in enumerate(words):
            inside = [k for k, (s, e) in enumerate(offsets) if s >= start and e <= end]
            if not inside:
                continue
            mean = vecs[inside].mean(axis=0)
            out[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        return out

    def word_similarities(
        self, text: str, words: Sequence[tuple[int, int]], other: str, other_words: Sequence[tuple[int, int]]
    ) -> Matrix | None:
        """Cosine of each word of `text` (rows) with each word of `other` (columns) by their contextual
        vectors; None without the encoder."""
        if not self.available():
            return None
        if not words or not other_words:
            return np.zeros((len(words), len(other_words)), dtype=np.float32)
        mine, theirs = self.word_vectors(text, words), self.word_vectors(other, other_words)
        return np.asarray(mine @ theirs.T, dtype=np.float32)

    def clear(self) -> None:
        """Forget every cached vector."""
        with self._lock:
            self._cache.clear()
        self._token_vectors.cache_clear()


_lock = threading.Lock()
_opened: dict[Path, Meaning] = {}


def open_meaning(encoder: str = "", encoder_dir: str = "") -> Meaning | None:
    """The `Meaning` of the encoder the settings name (`encoder.model_dir`), the same object for the
    same folder; None when switched off or its weights are not there. Loads nothing yet."""
    directory = model_dir(encoder, encoder_dir)
    if directory is None or not (directory / "model.safetensors").is_file():
        return None
    with _lock:
        if directory not in _opened:
            _opened[directory] = Meaning(partial(Encoder.load, directory))
        return _opened[directory]
