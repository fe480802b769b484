"""Word alignment (with WordNet, `Tools.wordnet`): each content word of the sentence aligned to the span
by stem, by a shared WordNet sense (one word or a phrase: "turn down"), or as an acronym of a run of
words ("IdP" / "identity provider"); optionally, words left over by their contextual vectors (the
encoder). From the alignment: the share aligned (`aligned_share`), a sentence word that takes the place
of a span word without sharing a sense with it (`substituted`: an antonym, another name, another noun),
and the lowest best similarity of a word left unaligned (`word_meaning`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag.language.lexicon import COMPOUND_PREPOSITION_HEADS, COMPOUND_PREPOSITION_TAILS, FUNCTION_WORDS
from rag.language.meaning import Matrix, Meaning
from rag.language.numbers import find_numbers
from rag.language.quantities import find_quantities
from rag.language.text import STOP_WORDS, stem
from rag.language.wordnet import WordNet

__all__ = ["MAX_ACRONYM", "aligned_share", "sense_stems", "substituted", "word_meaning"]

MAX_ACRONYM = 6
_ALIGN_WORD_RE = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")
_COMPOUND_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)+")


@dataclass(frozen=True, slots=True)
class _Word:
    lower: str
    stem: str
    capital: bool  # capitalised inside its sentence: a name
    start: int = 0  # character offsets in its text (for the encoder's token vectors)
    end: int = 0


@dataclass(frozen=True, slots=True)
class _Alignment:
    said: list[_Word]
    source: list[_Word]
    said_aligned: list[bool]
    source_aligned: list[bool]


def aligned_share(
    wn: WordNet | None,
    sentence: str,
    evidence: str,
    context: frozenset[str],
    *,
    meaning: Meaning | None,
    min_similarity: float | None,
) -> tuple[float, int]:
    """Share of the sentence's content words aligned to the span (or the title: `context`) and how many
    are not; (0.0, 0) without WordNet. `meaning` and `min_similarity` align by meaning (None: not)."""
    if wn is None:
        return 0.0, 0
    a = _alignment(wn, sentence, evidence, context, meaning, min_similarity)
    if not a.said:
        return 0.0, 0
    return sum(a.said_aligned) / len(a.said), len(a.said) - sum(a.said_aligned)


def substituted(
    wn: WordNet | None,
    sentence: str,
    evidence: str,
    context: frozenset[str],
    *,
    meaning: Meaning | None,
    min_similarity: float | None,
) -> tuple[str, str, str] | None:
    """(the sentence's word, the span's word, "antonym" / "name" / "noun") for a word of the sentence that
    takes the place of a word of the span without sharing a sense with it ("the workspace owner is
    notified" / "its creator is notified"); None when every new word is a paraphrase, or without WordNet."""
    if wn is None:
        return None
    compound = _compound_antonym(wn, sentence, evidence)
    if compound is not None:
        return compound
    a = _alignment(wn, sentence, evidence, frozenset(), meaning, min_similarity)
    dropped = [j for j, ok in enumerate(a.source_aligned) if not ok]
    names = [j for j in dropped if a.source[j].capital]
    for i, ok in enumerate(a.said_aligned):
        if ok:
            continue
        found = _substitution(wn, a, i, dropped, names, context)
        if found is not None:
            return found
    return None


def _compound_antonym(wn: WordNet, sentence: str, evidence: str) -> tuple[str, str, str] | None:
    """(the sentence's compound, the span's, "antonym") for a hyphenated word of the sentence the span
    lacks whose WordNet antonym the span writes ("part-time" / "full-time"): the alignment reads words
    without their hyphens, so it would see only "part" against "full" and miss the opposition."""
    said = {m.lower() for m in _COMPOUND_RE.findall(sentence)}
    source = {m.lower() for m in _COMPOUND_RE.findall(evidence)}
    for word in sorted(said - source):
        for other in sorted(wn.antonyms(word) & source):
            return word, other, "antonym"
    return None


def word_meaning(
    meaning: Meaning,
    wn: WordNet | None,
    sentence: str,
    evidence: str,
    context: frozenset[str],
    *,
    min_similarity: float | None,
) -> float:
    """The lowest best contextual similarity of a sentence word left unaligned to any span word; 1.0
    when every word aligned, or without WordNet."""
    if wn is None:
        return 1.0
    a = _alignment(wn, sentence, evidence, context, meaning, min_similarity)
    loose = [w for w, ok in zip(a.said, a.said_aligned, strict=True) if not ok]
    if not loose or not a.source:
        return 1.0
    sims = meaning.word_similarities(
        sentence, [(w.start, w.end) for w in loose], evidence, [(w.start, w.end) for w in a.source]
    )
    return float(sims.max(axis=1).min()) if sims is not None else 1.0


@lru_cache(maxsize=65536)
def sense_stems(wn: WordNet | None, word: str) -> frozenset[str]:
    """Stems of the one-word synonyms of `word` (none without WordNet)."""
    if wn is None:
        return frozenset()
    return frozenset(stem(w) for w in wn.synonyms(word) if " " not in w and "-" not in w)


@lru_cache(maxsize=65536)
def _antonym_stems(wn: WordNet, word: str) -> frozenset[str]:
    return frozenset(stem(w) for w in wn.antonyms(word) if " " not in w)


@lru_cache(maxsize=65536)
def _phrases(wn: WordNet, word: str) -> tuple[frozenset[str], ...]:
    """The stem sets of the multiword synonyms of `word` ("turn down")."""
    return tuple(
        frozenset(stem(p) for p in w.replace("-", " ").split() if p not in STOP_WORDS)
        for w in wn.synonyms(word)
        if " " in w or "-" in w
    )


# --- the alignment ---


def _align_words(text: str) -> list[_Word]:
    """Content words in order, without stop words, without the words of a number ("twenty", "dozen"),
    which the figures check judges, and without the noun of a compound preposition ("in addition to",
    "on top of"), which relates, not names."""
    numbers = [(n.start, n.end) for n in find_numbers(text)] + [
        (q.start, q.end) for q in find_quantities(text)
    ]
    words = list(_ALIGN_WORD_RE.finditer(text))
    out = []
    for i, match in enumerate(words):
        if _left_out(words, i, numbers):
            continue
        word = match.group()
        lower = word.lower()
        out.append(_Word(lower, stem(lower), word[:1].isupper() and i > 0, match.start(), match.end()))
    return out


def _left_out(words: list[re.Match[str]], i: int, numbers: list[tuple[int, int]]) -> bool:
    """Whether word `i` is a stop or function word, part of a number, or a compound preposition's noun."""
    lower = words[i].group().lower()
    if lower in STOP_WORDS or lower in FUNCTION_WORDS or len(lower) < 2:
        return True
    if any(s <= words[i].start() < e for s, e in numbers):
        return True
    before = words[i - 1].group().lower() if i > 0 else ""
    after = words[i + 1].group().lower() if i + 1 < len(words) else ""
    return before in COMPOUND_PREPOSITION_HEADS and after in COMPOUND_PREPOSITION_TAILS


def _aligns(
    wn: WordNet, word: _Word, stems: frozenset[str], senses: frozenset[str], initials: frozenset[str]
) -> bool:
    """Whether `word` has a counterpart among `stems` (the other text's stems; `senses`: their synonyms;
    `initials`: the initials of its runs of words, for an acronym: "IdP" / "identity provider")."""
    if word.stem in stems or word.stem in senses or word.lower in initials:
        return True
    if sense_stems(wn, word.lower) & stems:
        return True
    return any(p and p <= stems for p in _phrases(wn, word.lower))


def _alignment(
    wn: WordNet,
    sentence: str,
    evidence: str,
    context: frozenset[str],
    meaning: Meaning | None,
    min_similarity: float | None,
) -> _Alignment:
    said, source = _align_words(sentence), _align_words(evidence)
    source_stems = frozenset(w.stem for w in source)
    said_stems = frozenset(w.stem for w in said)
    source_senses = frozenset().union(*(sense_stems(wn, w.lower) for w in source)) if source else frozenset()
    said_senses = frozenset().union(*(sense_stems(wn, w.lower) for w in said)) if said else frozenset()
    said_aligned = [_aligns(wn, w, source_stems | context, source_senses, _initials(evidence)) for w in said]
    source_aligned = [_aligns(wn, w, said_stems, said_senses, _initials(sentence)) for w in source]
    a = _Alignment(said, source, said_aligned, source_aligned)
    _align_by_meaning(meaning, min_similarity, sentence, evidence, a)
    return a


def _align_by_meaning(
    meaning: Meaning | None, threshold: float | None, sentence: str, evidence: str, a: _Alignment
) -> None:
    """Align, in place, the sentence words still unaligned to unaligned span words whose contextual
    vectors are at least `threshold` alike, greedily, most similar pair first, one to one. Names are
    left out (a name for another name is another entity, however alike their vectors)."""
    if threshold is None or meaning is None or not meaning.available():
        return
    mine = _loose_words(a.said, a.said_aligned)
    theirs = _loose_words(a.source, a.source_aligned)
    if not mine or not theirs:
        return
    sims = meaning.word_similarities(
        sentence,
        [(a.said[i].start, a.said[i].end) for i in mine],
        evidence,
        [(a.source[j].start, a.source[j].end) for j in theirs],
    )
    if sims is None:
        return
    for x, y in _greedy_pairs(sims, threshold):
        a.said_aligned[mine[x]] = True
        a.source_aligned[theirs[y]] = True


def _loose_words(words: list[_Word], aligned: list[bool]) -> list[int]:
    """The positions of the words left unaligned, names left out."""
    return [i for i, w in enumerate(words) if not aligned[i] and not w.capital]


def _greedy_pairs(sims: Matrix, threshold: float) -> list[tuple[int, int]]:
    """(row, column) pairs of `sims` at least `threshold` alike, most similar first, each row and column
    in one pair at most."""
    rows, columns = sims.shape
    pairs = sorted(((float(sims[a, b]), a, b) for a in range(rows) for b in range(columns)), reverse=True)
    used_a: set[int] = set()
    used_b: set[int] = set()
    out: list[tuple[int, int]] = []
    for sim, a, b in pairs:
        if sim < threshold:
            break
        if a in used_a or b in used_b:
            continue
        used_a.add(a)
        used_b.add(b)
        out.append((a, b))
    return out


def _initials(text: str) -> frozenset[str]:
    """The initials of every run of 2 to `MAX_ACRONYM` consecutive words ("bring your own key": "byok")."""
    letters = [w[0].lower() for w in _ALIGN_WORD_RE.findall(text)]
    return frozenset(
        "".join(letters[i : i + k]) for k in range(2, MAX_ACRONYM + 1) for i in range(len(letters) - k + 1)
    )


# --- substitutions: an unaligned sentence word in an unaligned span word's place ---


def _substitution(
    wn: WordNet, a: _Alignment, i: int, dropped: list[int], names: list[int], context: frozenset[str]
) -> tuple[str, str, str] | None:
    """What unaligned sentence word `i` replaces among the unaligned span words (`dropped`; `names`:
    those that are names): an antonym first, then another name, then a noun in the same slot."""
    word = a.said[i]
    antonym = _antonym_of(wn, word, [a.source[j] for j in dropped])
    if antonym is not None:
        return word.lower, antonym, "antonym"
    if word.capital and word.stem not in context and names:
        return word.lower, a.source[names[0]].lower, "name"  # a name in place of another
    if not _nominal(wn, word) or word.stem in context:
        return None
    noun = _noun_in_place(wn, a, i, dropped)
    return None if noun is None else (word.lower, noun, "noun")


def _antonym_of(wn: WordNet, word: _Word, others: list[_Word]) -> str | None:
    """The first of `others` that is an antonym of `word` (either way round); None when none is."""
    for other in others:
        if other.stem in _antonym_stems(wn, word.lower) or word.stem in _antonym_stems(wn, other.lower):
            return other.lower
    return None


def _noun_in_place(wn: WordNet, a: _Alignment, i: int, dropped: list[int]) -> str | None:
    """The first span word of `dropped` that is a noun or name of the kind of sentence word `i`, by the
    same aligned word; None when none is."""
    for j in dropped:
        if _nominal(wn, a.source[j]) and _same_kind(wn, a.said[i], a.source[j]) and _same_slot(wn, a, i, j):
            return a.source[j].lower
    return None


def _neighbour_stems(
    wn: WordNet, words: list[_Word], aligned: list[bool], at: int, step: int
) -> frozenset[str]:
    """The stem (and synonyms) of the nearest aligned word before (`step` -1) or after (+1) `at`."""
    i = at + step
    while 0 <= i < len(words):
        if aligned[i]:
            return frozenset({words[i].stem}) | sense_stems(wn, words[i].lower)
        i += step
    return frozenset()


def _same_slot(wn: WordNet, a: _Alignment, i: int, j: int) -> bool:
    """Whether sentence word `i` and span word `j` stand by the same aligned word (the nearest aligned
    word on either side of each): "with approval from finance" / "with your manager's approval"."""
    mine = _neighbour_stems(wn, a.said, a.said_aligned, i, -1)
    mine |= _neighbour_stems(wn, a.said, a.said_aligned, i, 1)
    theirs = _neighbour_stems(wn, a.source, a.source_aligned, j, -1)
    theirs |= _neighbour_stems(wn, a.source, a.source_aligned, j, 1)
    return bool(mine & theirs)


def _same_kind(wn: WordNet, a: _Word, b: _Word) -> bool:
    """Names stand for names, nouns for nouns: the usual parts of speech of the two words meet."""
    if a.capital or b.capital:
        return True
    mine, theirs = wn.usual_parts_of_speech(a.lower), wn.usual_parts_of_speech(b.lower)
    return not mine or not theirs or bool(mine & theirs)


def _nominal(wn: WordNet, word: _Word) -> bool:
    """A name or a word that can be a noun or an adjective (what names a subject or a role)."""
    if word.capital:
        return True
    kinds = wn.usual_parts_of_speech(word.lower)
    return not kinds or bool(kinds & {"noun", "adj"})
