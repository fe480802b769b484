"""Whether a sentence states a default's value, not just that a default exists.

"The default set of flags is specified by the ``flags`` setting" and "by default the modules are
built for each driver" say "default" and state no value: for "what is the default ...?" they are
at most a passage that may hold the answer. A mention of "default" states a value when one stands
near it (within AFTER_WORDS pieces after it or BEFORE_WORDS before it): a figure, an inline code
literal or quoted string, a --flag or other code identifier, a path, a boolean or none word, a
capitalised name, or the word a copula ties to it ("the default is fast"). The question's own words
and identifiers are no value: "the ``timeout`` by default" for "the default of ``read_timeout``"
names the asked thing back, and a value set against the default ("parameter 1 instead of the
default") is not its value, nor does a default said to vary ("depends on", "is different on") state
one, nor is a release ("since version 3.2") a value unless the question asks for a version. Boolean
words are values even when the question writes them ("Is it on or off by default?" / "It is off by
default"). A sentence whose every default is named "the default
<thing> is ..." for a thing the question does not ask about states another thing's default
(`defaults_another`).
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from functools import lru_cache

from rag.language.lexicon import (
    BY_DEFAULT_RE,
    DEFAULT_STATEMENT_RE,
    FIGURE_RE,
    IDENTIFIER_RE,
    RELEASE_RE,
    WORD_TOKEN_RE,
)
from rag.language.text import term_set
from rag.reader.answer_types import asks_version
from rag.reader.words import CODE_LITERAL_RE, code_literals, identifiers

# How far (in pieces: a word, or a whole literal) a value may stand after, and before, "default".
AFTER_WORDS = 8
BEFORE_WORDS = 5
# Words stating a boolean or empty value ("disabled by default", "defaults to none").
BOOLEAN_WORDS = frozenset(
    "true false yes no none null nil enabled disabled empty unset unlimited always never".split()
)
# "on" / "off" state a value only before the mention ("off by default"); after it they are
# prepositions ("by default on Linux").
BEFORE_ONLY_WORDS = frozenset({"on", "off"})
# Words setting a value against the default ("parameter 1 instead of the default"): a value
# before one of them is not the default's.
CONTRAST_WORDS = frozenset("instead rather than unlike except override overrides overriding".split())
# Words saying the default varies ("the default depends on the platform", "what it does by default
# is different on Windows"): the mention states no one value, whatever names stand near it.
VARYING_WORDS = frozenset("depends depend depending varies vary differs differ different".split())
# Words before a figure that make it a release ("since version 3.2, ... generates a default model"):
# when it was introduced, not the default's value, unless the question asks for a version.
RELEASE_WORDS = frozenset("version versions release releases since".split())
# A copula or preposition tying the mention to its value ("the default is fast", "defaults to
# fast", "default: fast", "a default of fast", "default value is fast").
_TIED_RE = re.compile(r"^(?:\s+value)?(?:\s+(?:is|are|was|to|of|being)\b|\s*[:=])", re.IGNORECASE)
# The pieces a sentence is read in: an inline code literal (reST role included), a quoted string,
# an emphasised phrase, or a word.
_PIECE_RE = re.compile(
    r"(?P<code>(?::[\w:-]+:)?``[^`]+``|(?::[\w:-]+:)?`[^`]+`)"
    r"|(?P<quote>(?<!\w)'[^'\n]{1,60}'(?!\w)|\"[^\"\n]{1,60}\"|‘[^’\n]{1,60}’|“[^”\n]{1,60}”)"
    r"|(?P<emph>(?<![\w*])\*[^*\s][^*\n]{0,40}(?<!\s)\*(?![\w*]))"
    r"|(?P<word>[^\s`'\"‘’“”*()\[\]{},;]+)"
)
# A reST role that points at another entry (":confval:`name`", ":ref:`label`"): it names a thing,
# not a value.
_POINTER_ROLE_RE = re.compile(
    r"^:(?:ref|doc|numref|any|term|confval|setting|option|envvar|program|keyword|token"
    r"|(?:py:|c:|cpp:|js:|rst:)?(?:func|class|meth|attr|mod|obj|data|exc|const|member|type|macro|role"
    r"|directive|function))+:"
)
_PATH_RE = re.compile(r"(?:^|[\w.~%-])/[\w.%~-]|^~|^\.{1,2}/|^[A-Za-z]:\\")
_TRAILING_RE = re.compile(r"[.,:;!?]+$")


def states_default_value(sentence: str, question: str) -> bool:
    """True when some mention of "default" in `sentence` states a value the question lacks."""
    return bool(default_mentions(sentence, question))


@lru_cache(maxsize=50_000)
def default_mentions(sentence: str, question: str) -> tuple[int, ...]:
    """The start offsets of the mentions of "default" in `sentence` that state a value (see the
    module's doc), in order."""
    pieces = [(m.start(), m.end(), m.lastgroup or "", m.group(0)) for m in _PIECE_RE.finditer(sentence)]
    asked = _asked(question)
    releases = frozenset() if asks_version(question) else _releases(pieces)
    found = []
    for mention in DEFAULT_STATEMENT_RE.finditer(sentence):
        at = next((i for i, p in enumerate(pieces) if p[0] <= mention.start() < p[1]), None)
        if at is None or pieces[at][2] != "word":
            continue  # "default" inside a literal ("``doctest_default_flags``") is a name
        after = pieces[at + 1 : at + 1 + AFTER_WORDS]
        if any(_TRAILING_RE.sub("", p[3]).lower() in VARYING_WORDS for p in after[:3]):
            continue  # "... by default is different on ...": no one value is stated
        start = max(0, at - BEFORE_WORDS)
        for i in range(start, at):
            if _TRAILING_RE.sub("", pieces[i][3]).lower() in CONTRAST_WORDS:
                start = i + 1  # only what follows the contrast may be the default's value
        if (
            any(
                _is_value(pieces[i], asked, before=True, first=i == 0)
                for i in range(start, at)
                if i not in releases
            )
            or any(
                _is_value(p, asked, before=False, first=False)
                for i, p in enumerate(after, start=at + 1)
                if i not in releases
            )
            or _tied_word(sentence, mention, after, asked)
        ):
            found.append(mention.start())
    return tuple(found)


def _releases(pieces: list[tuple[int, int, str, str]]) -> frozenset[int]:
    """The indices of the pieces that write a release: "v5.0.0", "3.11.2", or a figure after
    "version" / "since" ("since version 3.2")."""
    found = set()
    for i, (_, _, kind, text) in enumerate(pieces):
        word = _TRAILING_RE.sub("", text)
        if kind != "word" or not FIGURE_RE.search(word):
            continue
        previous = _TRAILING_RE.sub("", pieces[i - 1][3]).lower() if i else ""
        if RELEASE_RE.fullmatch(word) or previous in RELEASE_WORDS:
            found.add(i)
    return frozenset(found)


@lru_cache(maxsize=4096)
def _asked(question: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The question's words (lowercased), its terms, and its identifiers and their parts."""
    words = frozenset(w.lower().lstrip("-") for w in WORD_TOKEN_RE.findall(question))
    named = {n.lower().lstrip("-").replace("-", "_") for n in identifiers(question) | code_literals(question)}
    parts = {part for n in named for part in re.split(r"[._]", n) if part}
    return words, term_set(question), frozenset(named | parts)


def _is_value(
    piece: tuple[int, int, str, str],
    asked: tuple[frozenset[str], frozenset[str], frozenset[str]],
    *,
    before: bool,
    first: bool,
) -> bool:
    """Whether one piece near a mention of "default" is a value the question does not already hold."""
    _, _, kind, text = piece
    words, question_terms, named = asked
    if kind == "code":
        if _POINTER_ROLE_RE.match(text):
            return False
        return not _names_asked(CODE_LITERAL_RE.sub("", text).strip(), named, words)
    if kind in ("quote", "emph"):
        return not _names_asked(text[1:-1].strip(), named, words)
    word = _TRAILING_RE.sub("", text)
    bare = word.lower()
    if bare in BOOLEAN_WORDS or (before and bare in BEFORE_ONLY_WORDS):
        return True  # a boolean states the value even when the question writes it ("on or off")
    if not word or bare.lstrip("-") in words or bare.lstrip("-").replace("-", "_") in named:
        return False
    if FIGURE_RE.search(word) or IDENTIFIER_RE.fullmatch(word) or _PATH_RE.search(word):
        return True
    # a capitalised name ("UTC", "Alabaster"), not the sentence's first word nor a function word
    return (
        not first
        and word[:1].isupper()
        and len(word) > 1
        and bool(term_set(word))
        and not term_set(word) <= question_terms
    )


def _names_asked(code: str, named: frozenset[str], words: frozenset[str]) -> bool:
    """A literal naming the question's own identifier, or one of its words, is no value."""
    bare = code.lower().lstrip("-").replace("-", "_")
    if not bare:
        return True
    return bare in named or bare in words or any(n in bare for n in named if "_" in n or "." in n)


def _tied_word(
    sentence: str,
    mention: re.Match[str],
    after: list[tuple[int, int, str, str]],
    asked: tuple[frozenset[str], frozenset[str], frozenset[str]],
) -> bool:
    """A content word the mention is tied to by a copula or colon ("the default is fast",
    "defaults to fast", "Default: fast"); not after "by default" ("by default is different")."""
    if BY_DEFAULT_RE.search(sentence, 0, mention.start()):
        return False
    end = mention.end()
    tie = _TIED_RE.match(sentence[end:])
    if tie is None:
        return False
    following = [p for p in after if p[0] >= end + tie.end()]
    for _, _, kind, text in following[:2]:
        if kind != "word":
            return False  # a literal: judged as a value already
        word = _TRAILING_RE.sub("", text)
        terms = term_set(word)
        if not terms:
            continue  # "the", "a": the value follows
        return not terms <= asked[1]
    return False


# "the default <thing> is ...": the default stated is that thing's.
DEFAULT_OF_RE = re.compile(
    r"\bdefault\s+((?:[^\W\d_][\w-]*\s+){0,2}?[^\W\d_][\w-]*)\s+(?:is|are|was|were|will\s+be)\b",
    re.IGNORECASE,
)


def defaults_another(sentence: str, asked: AbstractSet[str]) -> bool:
    """True when every default the sentence states is named, as "the default <thing> is ...", for a
    thing none of whose words the question asks about (`asked`: its terms): "the default typeface is
    X" does not say which engine is used by default."""
    named = list(DEFAULT_OF_RE.finditer(sentence))
    if not named or len(named) != len(DEFAULT_STATEMENT_RE.findall(sentence)):
        return False
    return all(term_set(m.group(1)).isdisjoint(asked) for m in named)
