"""Whether a sentence tells how to do what a "how do I ...?" question asks.

"How can I get a live preview of my docs?" is answered by a means: an instruction ("Run ``make
watch``."), the reader's own action ("You can restart it by using ``resume``."), a purpose clause
leading to one ("To rebuild everything, pass ``--fresh``."), a means phrase ("by setting ...",
"Using ..."), or a name in code the question does not write (the command, option or setting to use).
A sentence that describes what happens ("It will reload the page any time you edit it.") or what
goes wrong ("So blame will be cluttered with the commit.") shares the question's words and gives no
means: it may hold the answer's neighbour, and is shown on the refusal, never given as the answer.
All checks are grammatical: no verb or subject of any one document is named.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.language.lexicon import FUNCTION_WORDS, HOW_TO_RE, IDENTIFIER_RE, INLINE_CODE_RE
from rag.language.text import term_set
from rag.reader.words import CODE_LITERAL_RE

# The reader's own action: "you can / should / need to / have to / will need to ...".
_READER_ACTION_RE = re.compile(
    r"\byou(?:'ll|’ll)?\s+(?:can|could|may|might|should|must|need|have\s+to|will|would|want|just|only|then"
    r"|first|also)\b",
    re.IGNORECASE,
)
# A means phrase: "by setting ...", or a sentence opening "Using ..." / "Via ...". ("... a full
# analysis using the model" inside a description names no means for the reader.)
_MEANS_RE = re.compile(r"\bby\s+\w+ing\b|^(?:using|via)\b", re.IGNORECASE)
# A purpose clause leading a sentence or clause ("To rebuild everything, ..."): its rest is the means.
_PURPOSE_RE = re.compile(r"(?:^|[.;:!?—–]\s+)(?:\W\s*)?to\s+[a-z]+\b[^.;:]*,", re.IGNORECASE)
# Where an instruction may open: the sentence start, a list marker, or a clause after a stop or dash.
_OPENING_RE = re.compile(r"(?:^|[.;:!?—–]\s+|\bthen\s+)(?:[-*•]\s+|\d+[.)]\s+)?([A-Za-z][a-z'-]*)\s+(\S+)")
# A command-line flag written plainly ("pass --fresh-env").
_FLAG_RE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
# A reST role linking elsewhere (":ref:`label`", ":doc:`page`"): a pointer, not a name to use.
_LINK_ROLE_RE = re.compile(r":(?:ref|doc|numref|any):`")
# What follows an imperative verb directly: a determiner or pronoun object ("Open the project",
# "Add it", "Set your ...").
_OBJECT_WORDS = frozenset(
    "the a an your this that these those it them its their each every all any some one both".split()
)


def asks_procedure(question: str) -> bool:
    """True when the question asks how to do something ("How can I ...?")."""
    return HOW_TO_RE.search(question) is not None


@lru_cache(maxsize=50_000)
def gives_procedure(sentence: str, question: str) -> bool:
    """True when `sentence` tells a means (see the module's doc)."""
    if _READER_ACTION_RE.search(sentence) or _MEANS_RE.search(sentence) or _PURPOSE_RE.search(sentence):
        return True
    if _names_new_code(sentence, question):
        return True
    return any(_imperative(m.group(1), m.group(2)) for m in _OPENING_RE.finditer(sentence))


def opens_with_instruction(sentence: str) -> bool:
    """True when the sentence itself opens with an instruction ("Add ``--fresh`` long option.")."""
    match = _OPENING_RE.match(sentence)
    return match is not None and _imperative(match.group(1), match.group(2))


def _imperative(first: str, following: str) -> bool:
    """An opening word followed by a determiner, pronoun or a name in code reads as an instruction:
    a content word, not an adverb ("Generally the ..."), a gerund ("Exporting the ...") nor a
    closed-class word."""
    word = first.lower()
    if not term_set(word) or word in FUNCTION_WORDS or word.endswith(("ly", "ing")):
        return False
    after = following.lower().strip("\"'“”‘’(")
    return after in _OBJECT_WORDS or following.startswith("`") or bool(IDENTIFIER_RE.fullmatch(following))


def _names_new_code(sentence: str, question: str) -> bool:
    """The sentence names in code (an inline literal, links left out, or a --flag) something the
    question does not write."""
    said = question.lower().replace("-", "_")
    named = [
        CODE_LITERAL_RE.sub("", m.group(0)).strip()
        for m in INLINE_CODE_RE.finditer(sentence)
        if not _LINK_ROLE_RE.match(m.group(0))
    ] + _FLAG_RE.findall(sentence)
    for name in named:
        bare = name.lower().lstrip("-").replace("-", "_")
        if bare and bare not in said:
            return True
    return False
