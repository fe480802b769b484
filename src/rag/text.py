"""Pure text utilities shared by ingest, retrieval, generation and verification.

Tokens are lowercase alphanumeric runs; "terms" are Snowball-stemmed tokens with
stop words removed. Sentence spans are end-exclusive offsets into the given text.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from functools import lru_cache

import snowballstemmer

# re-exported: parse and quantities read these through rag.text
from rag.lexicon import ABBREVIATIONS as ABBREVIATIONS
from rag.lexicon import MODAL_RE, PROPOSAL_RE, SAME_STEM
from rag.lexicon import STOP_WORDS as STOP_WORDS

# Local estimate: one token per 4 characters. Claude's current (5.x) tokenizer averages
# about 2.5 characters per token, so Claude counts roughly 1.6x what this returns; budgets
# set in these units are therefore about 1.6x larger in Claude tokens.
CHARS_PER_TOKEN = 4.0


_TOKEN_RE = re.compile(r"[0-9a-z]+(?:['’][a-z]+)?", re.IGNORECASE)
_WORD_SPAN_RE = re.compile(r"\S+")
_NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets and citation markers),
# then whitespace. Markers like "[1]" or "[1, 3]" after the stop belong to the sentence before.
_END_RE = re.compile(r"""[.!?]+["'”’)\]]*(?:\s*\[\d+(?:\s*[,–-]\s*\d+)*\])*(?=\s+|$)""")
_BLOCK_BREAK_RE = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:[-*+•]|\d+[.)]|#{1,6})\s)|\n(?=[ \t]*\|)")

# Snowball stemmer objects keep per-call state and are not thread-safe: one per thread
# (the API answers questions in a threadpool).
_stemmers = threading.local()


def is_proposal(sentence: str) -> bool:
    """True when the sentence proposes or plans ("a proposal to raise the fee to $450")."""
    return bool(PROPOSAL_RE.search(sentence))


def is_hypothetical(sentence: str) -> bool:
    """True when the sentence proposes, plans or supposes ("would", "could", "might"): it does not
    state what currently holds."""
    return is_proposal(sentence) or bool(MODAL_RE.search(sentence))


def normalise(text: str) -> str:
    """Lowercase, alphanumerics only, single spaces: the form fingerprints and matching use."""
    return _NON_ALNUM_RE.sub(" ", text.lower()).strip()


def fingerprint(text: str) -> str:
    """A stable hash of the normalised text: equal for texts differing only in case, spacing, punctuation."""
    return hashlib.sha1(normalise(text).encode("utf-8")).hexdigest()


def estimate_tokens(text: str) -> int:
    """Deterministic token estimate (see CHARS_PER_TOKEN for its ratio to Claude's tokenizer)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def tokens(text: str) -> list[str]:
    """Lowercase word tokens, apostrophes kept inside words ("don't")."""
    return [t.lower().replace("’", "'") for t in _TOKEN_RE.findall(text)]


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    stemmed = str(stemmer.stemWord(token))
    return SAME_STEM.get(stemmed, stemmed)


def content_words(text: str) -> list[str]:
    """The tokens `terms` keeps, unstemmed: no stop words or single letters (digits stay), in order."""
    return [t for t in tokens(text) if (t not in STOP_WORDS and len(t) > 1) or t.isdigit()]


def terms(text: str) -> list[str]:
    """Content terms: stemmed tokens without stop words, in order, duplicates kept."""
    return [stem(t) for t in content_words(text)]


# Cached by text: the same chunks and sentences are scored request after request, and tokenising
# and stemming them is most of the offline pipeline's cost.
@lru_cache(maxsize=50_000)
def term_set(text: str) -> frozenset[str]:
    """The distinct content terms of `text` (see `terms`)."""
    return frozenset(terms(text))


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the period at `dot` closes a known abbreviation or a single-letter initial."""
    start = dot
    while start > 0 and not text[start - 1].isspace() and text[start - 1] not in "([\"'":
        start -= 1
    word = text[start:dot].lower()
    if word in ABBREVIATIONS:
        return True
    # single initials ("J. Smith") and dotted acronyms ("U.S.", "e.g")
    return len(word) == 1 and word.isalpha() or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]?", word))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans (start, end), end-exclusive, stripped of surrounding whitespace.

    Never cuts inside "e.g.", "v2.3", "$0.67", "U.S." or decimals; blank lines, list
    items, headings and table rows always start a new sentence.
    """
    spans: list[tuple[int, int]] = []
    for block_start, block_end in _blocks(text):
        start = block_start
        for match in _END_RE.finditer(text, block_start, block_end):
            dot = match.start()
            if text[dot] == "." and _is_abbreviation(text, dot) and match.end() == dot + 1:
                continue
            end = match.end()
            if end >= block_end:
                break
            _append_span(text, start, end, spans)
            start = end
        _append_span(text, start, block_end, spans)
    return spans


def _blocks(text: str) -> list[tuple[int, int]]:
    bounds = []
    start = 0
    for match in _BLOCK_BREAK_RE.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    blocks = []
    for start, end in bounds:
        # a heading line is a sentence of its own
        newline = text.find("\n", start, end)
        if text[start:end].lstrip().startswith("#") and newline != -1:
            blocks.append((start, newline))
            start = newline + 1
        blocks.append((start, end))
    return blocks


def _append_span(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, as `sentence_spans` cuts them."""
    return [text[s:e] for s, e in sentence_spans(text)]
