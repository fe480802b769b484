"""The words and names of a text as the reader compares them: normalised keys, content terms, code
identifiers, inline code literals and capitalised names.

Each depends on the text alone (and the sets it is given), so the ones the reader calls question after
question are cached by the text itself (the same chunks and sentences are read again and again);
bounded, and each returns an immutable value.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.language.lexicon import CAPITALISED_RE, IDENTIFIER_RE, INLINE_CODE_RE, NOT_PLACES
from rag.language.text import normalise, term_set, terms

_IDENTIFIER_SPLIT_RE = re.compile(r"_+")
# The markup around an inline code literal (":data:`", "``", "~"): what remains is the literal itself.
CODE_LITERAL_RE = re.compile(r"^:[\w:-]+:|`|^~")
# A heading's numbering, not its topic: a whole part that is an enumerator ("(1)", "[2]", "3", "iv.",
# "b)": a footnote's or a list's mark; a letter only with its bracket or point, so "R", "C" and "CLI"
# stay names) or a leading multi-level section number ("10.13 ", "2.3.1. ").
_ENUMERATOR_PART_RE = re.compile(
    r"^\s*(?:[(\[]?\d+[.)\]]?|[(\[](?:[ivxlc]+|[a-z])[)\]]|(?:[ivxlc]+|[a-z])[.)])\s*$", re.IGNORECASE
)
_SECTION_NUMBER_RE = re.compile(r"^\d+(?:\.\d+)+\.?\s+")
# Where a link points, not what its sentence says: a Markdown link's target ("[exit codes](./basics.md)"
# says "exit codes"), an angle-bracketed address, a bare web address.
_LINK_TARGET_RE = re.compile(
    r"(?<=\])\((?:[^()\s]|\([^()\s]*\))*\)|<(?:https?://|mailto:)[^>\s]*>|\bhttps?://[^\s)>\]]+"
)


@lru_cache(maxsize=50_000)
def sentence_key(sentence: str) -> str:
    """The sentence's normalised form: the key that finds it again in any block."""
    return normalise(sentence)


@lru_cache(maxsize=4096)
def block_key(text: str) -> str:
    """A block's normalised text (a chunk: fewer and longer than its sentences)."""
    return normalise(text)


@lru_cache(maxsize=50_000)
def heading_terms(heading: str) -> frozenset[str]:
    """The content terms of a heading or section path (parts joined by " > "), its numbering left
    out: the "1" of a footnote heading "(1)" is no term the heading is about."""
    parts = (_SECTION_NUMBER_RE.sub("", part) for part in heading.split(" > "))
    return term_set(" ".join(part for part in parts if not _ENUMERATOR_PART_RE.match(part)))


@lru_cache(maxsize=50_000)
def sentence_terms(sentence: str) -> tuple[str, ...]:
    """The sentence's content terms in order (see `terms`)."""
    return tuple(terms(sentence))


@lru_cache(maxsize=4096)
def joined_terms(*parts: str) -> frozenset[str]:
    """The terms of the parts joined by spaces (a block's title, section and text): cached by the
    parts, so a long chunk text is not copied into a new string to look its terms up."""
    return term_set(" ".join(parts))


@lru_cache(maxsize=50_000)
def identifiers(text: str) -> frozenset[str]:
    """The code identifiers `text` names (snake_case, dotted.paths, --flags), normalised: lowercase,
    leading dashes dropped, `-` read as `_` (so `--max-requests` names `max_requests`)."""
    return frozenset(m.lower().lstrip("-").replace("-", "_") for m in IDENTIFIER_RE.findall(text))


def spelled(identifier: str) -> str:
    """A snake_case identifier spelled out as words ("worker_class" -> "worker class")."""
    return " ".join(p for p in _IDENTIFIER_SPLIT_RE.split(identifier) if p)


@lru_cache(maxsize=50_000)
def code_literals(text: str) -> frozenset[str]:
    """The inline code literals of `text` as identifiers compare ("``--host``", "``host``" -> "host")."""
    return frozenset(
        CODE_LITERAL_RE.sub("", m.group(0)).strip().lower().lstrip("-").replace("-", "_")
        for m in INLINE_CODE_RE.finditer(text)
    )


@lru_cache(maxsize=50_000)
def without_link_targets(text: str) -> str:
    """`text` without the places its links point to: the words of an address ("docs.docker.com/
    engine/reference/run/#exit-status") are not words the sentence says."""
    if "](" not in text and "://" not in text:
        return text
    return _LINK_TARGET_RE.sub(" ", text)


@lru_cache(maxsize=50_000)
def without_code(text: str, keep: frozenset[str], literals: str = "") -> str:
    """`text` with its inline code spans blanked, except those naming an identifier in `keep` or
    quoting a literal that `literals` (the question, lowercased) writes too ("``run-server``")."""
    if "`" not in text:
        return text

    def kept(m: re.Match[str]) -> str:
        code = CODE_LITERAL_RE.sub("", m.group(0)).strip().lower()
        quoted = bool(code) and re.search(rf"(?<![\w-]){re.escape(code)}(?![\w-])", literals) is not None
        named = identifiers(m.group(0)) | {code.lstrip("-").replace("-", "_")}
        return m.group(0) if quoted or named & keep else " "

    return INLINE_CODE_RE.sub(kept, text)


def proper_names(text: str) -> frozenset[str]:
    """Stems of the capitalised words inside `text` (not its first word): the names it mentions."""
    return term_set(" ".join(w for w in CAPITALISED_RE.findall(text) if w.lower() not in NOT_PLACES))


_LOWER_WORD_RE = re.compile(r"(?<![\w-])[a-z][a-z'-]*")


def _may_name(word: str) -> bool:
    return len(word) > 2 and word not in NOT_PLACES


def names_typed_in_lower_case(question: str, texts: list[str], headings: list[str]) -> frozenset[str]:
    """Stems of the words `question` writes in lower case that the passages read name: a heading of
    theirs that is that one word capitalised ("the team plan" under a section "Team"), or the first of
    two words that `texts` capitalise each time they write the two together ("the Team plan", whatever
    else they say of teams). A question typed without capitals names what the passages name."""
    words = _LOWER_WORD_RE.findall(question)
    if len(words) < 2:
        return frozenset()
    titled = {h for h in headings if h[:1].isupper() and h[1:].islower() and h.isalpha()}
    named = {w for w in words if _may_name(w) and w.capitalize() in titled}
    text = " ".join(texts)
    for first, second in zip(words, words[1:], strict=False):
        if not _may_name(first):
            continue
        # inside a sentence only, as `proper_names` reads a capital: a sentence's first word says nothing
        found = re.findall(
            rf"(?<=[a-z,;:] )({re.escape(first)})\s+{re.escape(second)}(?![\w-])", text, re.IGNORECASE
        )
        if found and all(w[0].isupper() and w[1:].islower() for w in found):
            named.add(first)
    return term_set(" ".join(sorted(named)))
