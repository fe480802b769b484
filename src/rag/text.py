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

# Local estimate: one token per 4 characters. Claude's current (5.x) tokenizer averages
# about 2.5 characters per token, so Claude counts roughly 1.6x what this returns; budgets
# set in these units are therefore about 1.6x larger in Claude tokens.
CHARS_PER_TOKEN = 4.0

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves
    out over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're
    you've your yours yourself yourselves also just may might must shall will can could would should
    get gets got us its via per etc e g i e vs please tell know want need does do one two""".split()
)

_TOKEN_RE = re.compile(r"[0-9a-z]+(?:['’][a-z]+)?", re.IGNORECASE)
_WORD_SPAN_RE = re.compile(r"\S+")
_NON_ALNUM_RE = re.compile(r"[^0-9a-z]+")

# Abbreviations after which a period does not end a sentence (lowercase, without the final dot).
ABBREVIATIONS = frozenset(
    """e.g i.e etc vs cf approx mr mrs ms dr prof sr jr st no nos fig figs vol eq ref sec al inc ltd corp co
    dept est min max jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun u.s u.k
    e.u a.m p.m ph.d""".split()
)
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets and citation markers),
# then whitespace. Markers like "[1]" or "[1, 3]" after the stop belong to the sentence before.
_END_RE = re.compile(r"""[.!?]+["'”’)\]]*(?:\s*\[\d+(?:\s*[,–-]\s*\d+)*\])*(?=\s+|$)""")
_BLOCK_BREAK_RE = re.compile(r"\n[ \t]*\n|\n(?=[ \t]*(?:[-*+•]|\d+[.)]|#{1,6})\s)|\n(?=[ \t]*\|)")

# Snowball stemmer objects keep per-call state and are not thread-safe: one per thread
# (the API answers questions in a threadpool).
_stemmers = threading.local()


# Sentences that state a proposal, a possibility or a plan rather than what holds now.
_PROPOSAL_RE = re.compile(
    r"\b(?:propos(?:al|als|ed|es|ing)|suggest(?:s|ed|ion)?|draft|consider(?:s|ed|ing)?"
    r"|plans?\s+to|planning\s+to|intends?\s+to|if\s+approved)\b",
    re.IGNORECASE,
)
_MODAL_RE = re.compile(r"\b(?:would|could|might)\b", re.IGNORECASE)


def is_proposal(sentence: str) -> bool:
    """True when the sentence proposes or plans ("a proposal to raise the fee to $450")."""
    return bool(_PROPOSAL_RE.search(sentence))


def is_hypothetical(sentence: str) -> bool:
    """True when the sentence proposes, plans or supposes ("would", "could", "might"): it does not
    state what currently holds."""
    return is_proposal(sentence) or bool(_MODAL_RE.search(sentence))


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


# Stems the Snowball stemmer leaves apart although they name the same period ("annual fee" is a
# fee per year, as "monthly" is per month, which Snowball already maps to "month").
_SAME_STEM = {"annual": "year", "annum": "year"}


@lru_cache(maxsize=200_000)
def stem(token: str) -> str:
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    stemmed = str(stemmer.stemWord(token))
    return _SAME_STEM.get(stemmed, stemmed)


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
