"""The words of a question that retrieval should search for: its grammar of asking set apart.

A question may ask for what holds when the asker does nothing ("Where does the cache live unless I
tell it otherwise?", "Which port is used if I don't pass --port?", "if I leave the setting alone",
"if FOO_HOME isn't set"). Such a *default clause* is a condition (if, unless, when, without) whose
verb is one of choosing or telling (`lexicon.CHOOSING_VERBS`: set, pick, change, tell, ...), done by
the asker ("I", "you", "we") or passive ("isn't set", "unless configured"), and which says that it is
not done: "unless", a negation, "without", or a word of leaving a thing as it is (`lexicon.LEFT_AS_IS`:
alone, unchanged, ...). Its subject pronoun, negation, verb and pro-forms (`lexicon.UNCHANGED_WORDS`:
otherwise, elsewhere, anything) name nothing the answer says, so BM25 and the lexical reranker skip
them; what the clause names ("--port", "FOO_HOME", "the pattern") stays, and the question asks for a
"default", a word the answering passage often holds ("defaults to", "by default"). A clause of
another's doing ("when the database can't alter it") is a circumstance and stays whole. Elsewhere, a
hedge on the asked amount ("Roughly how many ...", "approximately what size") names nothing either.
`query_words` gives the content words of what is left, in order.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.language.inflection import forms
from rag.language.lexicon import (
    ASKERS,
    BE_FORMS,
    CHOOSING_VERBS,
    HEDGE_RE,
    LEFT_AS_IS,
    NEGATORS,
    STOP_WORDS,
    UNCHANGED_WORDS,
)
from rag.language.text import content_words, stem

__all__ = ["DEFAULT_WORD", "default_clauses", "query_words"]

DEFAULT_WORD = "default"
# A condition up to the end of its clause (a comma, semicolon, question or exclamation mark, a full
# stop ending a sentence, the next condition, or the end of the text).
_OPENER = r"\b(?:if|unless|when|whenever|without)\b"
_CONDITION_RE = re.compile(rf"({_OPENER})([^,;?!]*?)(?=[,;?!]|\.(?:\s|$)|$|{_OPENER})", re.IGNORECASE)
_WORD_RE = re.compile(r"[0-9A-Za-z][\w'’-]*")


@lru_cache(maxsize=1)
def _choosing_stems() -> frozenset[str]:
    """The stems of every form of the choosing verbs ("told" and "tell", "chosen" and "choose")."""
    return frozenset(f for verb in CHOOSING_VERBS for f in forms(stem(verb)))


def _is_choosing(word: str) -> bool:
    return stem(word.lower().replace("’", "'")) in _choosing_stems()


def _negated(word: str) -> bool:
    lower = word.lower().replace("’", "'")
    return lower in NEGATORS or lower.endswith("n't")


def _asker_or_passive(before: list[str]) -> bool:
    """Whether the verb after `before` (the clause's words before it) is the asker's doing ("I", "you",
    "we", "one" its subject) or passive ("is not set", "unless configured", "unless told")."""
    return not before or any(w in ASKERS or w.removesuffix("n't") in BE_FORMS for w in before)


def default_clauses(question: str) -> list[tuple[int, int, list[tuple[int, int]]]]:
    """The default clauses of `question`: (start, end, the character spans of the words retrieval skips
    in it), in order."""
    found = []
    for match in _CONDITION_RE.finditer(question):
        opener = match.group(1).lower()
        words = list(_WORD_RE.finditer(question, match.start(2), match.end(2)))
        verb = next((w for w in words if _is_choosing(w.group())), None)
        if verb is None:
            continue
        before = [w.group().lower().replace("’", "'") for w in words if w.start() < verb.start()]
        if not _asker_or_passive(before):
            continue  # another's doing ("when the database can't alter it"): a circumstance, not a default
        said_not = opener in ("unless", "without") or any(_negated(w) for w in before)
        unchanged = any(w.group().lower() in LEFT_AS_IS for w in words)
        if not (said_not or unchanged):
            continue
        skipped = [(match.start(1), match.end(1))]
        for w in words:
            lower = w.group().lower().replace("’", "'")
            if w is verb or _negated(lower) or lower in UNCHANGED_WORDS or lower in STOP_WORDS:
                skipped.append((w.start(), w.end()))
        found.append((match.start(), match.end(), skipped))
    return found


def _blanked(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in sorted(spans):
        out.append(text[at:start])
        out.append(" ")
        at = max(at, end)
    out.append(text[at:])
    return "".join(out)


@lru_cache(maxsize=4096)
def query_words(question: str) -> tuple[str, ...]:
    """The question's content words (`rag.language.text.content_words`) without the words of its
    default clauses and hedges, followed by "default" when a default clause asks for one and the
    question does not say the word already."""
    clauses = default_clauses(question)
    spans = [span for _, _, skipped in clauses for span in skipped]
    spans += [(m.start(), m.end()) for m in HEDGE_RE.finditer(question)]
    words = content_words(_blanked(question, spans) if spans else question)
    if clauses and DEFAULT_WORD not in {stem(w) for w in words}:
        words.append(DEFAULT_WORD)
    return tuple(words)
