"""Whether a sentence says what the thing a "What does X do / mean?" question names does.

Such a question asks for X's own description: a sentence answers it when X is its subject. X is
the subject when the sentence opens by naming it (within OPENING_WORDS words: "``--fresh`` rebuilds
the cache from scratch."), when it sits under a label or field entry naming X (the description under
an option's or a message's own heading), or when it opens with a pronoun that refers back. A
sentence naming X elsewhere ("To rebuild everything, use ``--fresh`` instead."), as the object of
an instruction ("Add ``--fresh`` long option.", even under X's label) or not at all ("Wildly
experimental: support for measuring processes") says something else, about something else: shown
on the refusal, never the answer. X's name is its code names, hyphenated or dashed words and
capitalised names when it writes any ("the ``--fresh`` option", "the module-not-found warning"; a
possessive owner, "the tool's ``--fresh`` option", is not X), else the head noun of its phrase
("the retry policy" -> policy).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.language.lexicon import ANAPHOR_RE, WORD_TOKEN_RE
from rag.language.text import normalise, terms
from rag.reader.procedure import opens_with_instruction
from rag.reader.prose import Prose
from rag.reader.words import code_literals, identifiers

# How many words from its start a sentence must name its subject within.
OPENING_WORDS = 5
# "What does X do / mean / stand for / indicate ...?" (after any situation the asker states first).
DEFINITION_QUESTION_RE = re.compile(
    r"(?:^|[.?!]\s+)\W*what\s+(?:does|do|did)\s+(?P<x>.+?)\s+(?:do|mean|stand\s+for|indicate|signify"
    r"|represent)\b[^.?!]*\?",
    re.IGNORECASE,
)
# The opening "this/these" of a sentence continuing its subject ("This option rebuilds ...").
_DEMONSTRATIVE_RE = re.compile(r"^\W*(?:this|these|that|those)\b", re.IGNORECASE)
# Where the head noun phrase of X ends: a preposition or clause word ("the policy of the queue").
_PHRASE_END_RE = re.compile(
    r"\s(?:of|to|in|on|for|with|when|if|from|by|at|after|before|during)\s", re.IGNORECASE
)
# A possessive modifier ("sphinx-build's -E option"): the owner, not the thing asked about.
_POSSESSIVE_RE = re.compile(r"\S+['’]s\b")
# A name of X: a dashed or hyphenated word, or a capitalised one inside the phrase.
_NAME_WORD_RE = re.compile(r"(?<![\w-])-{1,2}[A-Za-z][\w-]*|\b[A-Za-z]\w*(?:-\w+)+\b")
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


@lru_cache(maxsize=4096)
def defined_subject(question: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """For a "What does X do / mean?" question: (X's names, normalised; the head noun's stem when it
    has no name); else None."""
    match = DEFINITION_QUESTION_RE.search(question)
    if match is None:
        return None
    x = match.group("x")
    owned = _POSSESSIVE_RE.sub(" ", x)
    x = owned if _has_name(owned) else x
    names = {_key(n) for n in identifiers(x) | code_literals(x)}
    names |= {_key(m.group(0)) for m in _NAME_WORD_RE.finditer(x)}
    names |= {_key(w) for w in WORD_TOKEN_RE.findall(x)[1:] if w[:1].isupper()}
    names.discard("")
    if names:
        return frozenset(names), frozenset()
    head = _PHRASE_END_RE.split(f" {x} ", maxsplit=1)[0]
    found = terms(head)
    return frozenset(), frozenset(found[-1:])


def _has_name(x: str) -> bool:
    return bool(identifiers(x) or code_literals(x) or _NAME_WORD_RE.search(x))


def describes(question: str, p: Prose) -> bool:
    """True unless the question is a "What does X do / mean?" and the sentence does not have X for
    its subject (see the module's doc)."""
    subject = defined_subject(question)
    if subject is None:
        return True
    names, head = subject
    text = _LIST_MARKER_RE.sub("", p.text)
    if opens_with_instruction(text) and _names(text, names, head):
        return False  # "Add ``--fresh`` long option.": X is the object, even under its own label
    if _names(f"{p.label} {p.entry if p.field else ''}", names, head):
        return True  # the description under X's own label or entry
    if ANAPHOR_RE.match(text) or _DEMONSTRATIVE_RE.match(text):
        return True  # "It rebuilds ...", "This option ...": continuing the sentence that names X
    if opens_with_instruction(text):
        return False  # an instruction about something else
    opening = " ".join(WORD_TOKEN_RE.findall(text)[:OPENING_WORDS])
    return _names(opening, names, head)


def _names(text: str, names: frozenset[str], head: frozenset[str]) -> bool:
    if not text.strip():
        return False
    if names:
        said = {_key(n) for n in identifiers(text) | code_literals(text)}
        said |= {_key(m.group(0)) for m in _NAME_WORD_RE.finditer(text)}
        said |= {_key(w) for w in WORD_TOKEN_RE.findall(text)}
        return bool(names & said)
    return bool(head & set(terms(text)))


def _key(name: str) -> str:
    """A name as both sides compare it: lowercase words, a possessive "'s" dropped."""
    return normalise(name.removesuffix("'s").removesuffix("’s"))
