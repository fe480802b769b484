"""Subject binding: whether the value a sentence states belongs to the asked subject.

A sentence may hold the asked kind of value (a default, a figure, a date) and still state it about
something else: "``retry`` otherwise, which is the default, since the startup setting defaults to
``None``" names the asked option but gives another option's default; "``attr.ib``'s *metadata*
argument defaults to an empty dict" gives another argument's default. The value belongs to the
subject of its own clause: the things named before it in that clause (code literals, identifiers,
emphasised or capitalised names). A clause naming nothing inherits its subject: from the nearest
clause before it in the sentence that names something, then from the sentence a pronoun-led one
refers back to, then from the label it sits under (the entry, term or heading: a `Default:` line
belongs to the entry whose name it follows).

Pure text functions; the generator decides what the answer is.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from rag.language.lexicon import IDENTIFIER_RE, INLINE_CODE_RE
from rag.language.text import term_set
from rag.reader.words import CODE_LITERAL_RE

# Where one clause ends and the next begins: a semicolon, a dash used as a parenthesis, a colon or
# a bracket, and a comma (a comma inside a list of values cuts values apart, never a value from the
# name before it in the same clause).
_CLAUSE_BREAK_RE = re.compile(r";|\s--?\s|\s?[—–]\s?|:\s|[()]|,\s")
# A code literal that is a value, not the name of a thing: None, true, 42, "text", [], {}.
_VALUE_LITERAL_RE = re.compile(
    r"(?:none|null|nil|true|false|yes|no|on|off)|[-+]?\d[\w.:]*|(['\"]).*\1|\[\s*]|\{\s*}|\(\s*\)",
    re.IGNORECASE,
)
# A word set in single asterisks or underscores: an argument or term the text names ("*metadata*").
_EMPHASIS_RE = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])|(?<![\w_])_([^_\s][^_]*?)_(?![\w_])")


@lru_cache(maxsize=50_000)
def clause_spans(text: str) -> tuple[tuple[int, int], ...]:
    """The (start, end) of each clause of `text`, in order, covering it without gaps (cached by the
    text: each value of a sentence looks its clause up)."""
    bounds = [0]
    for m in _CLAUSE_BREAK_RE.finditer(text):
        if _inside_code(text, m.start()):
            continue
        bounds.append(m.end())
    bounds.append(len(text))
    return tuple((a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a)


def _clause_start(text: str, at: int) -> int:
    """Where the clause holding position `at` of `text` begins."""
    return next((a for a, b in clause_spans(text) if a <= at < b), 0)


def _inside_code(text: str, at: int) -> bool:
    """True when position `at` is inside an inline code literal (``f(a, b)`` is one name)."""
    return any(m.start() < at < m.end() for m in INLINE_CODE_RE.finditer(text))


@lru_cache(maxsize=50_000)
def code_names(text: str) -> frozenset[str]:
    """The code things `text` names: identifiers and inline literals that are not values, normalised
    as identifiers compare (lowercase, leading dashes dropped, `-` read as `_`)."""
    found: set[str] = set()
    for m in INLINE_CODE_RE.finditer(text):
        if text[m.end() : m.end() + 1] == "_":
            continue  # a reST link ("`Click`_", "`TL;DR <url>`_"): words in prose
        code = CODE_LITERAL_RE.sub("", m.group(0)).strip()
        code = code.split("<")[0].strip() if code.endswith(">") else code  # "title <target>"
        if code and not _VALUE_LITERAL_RE.fullmatch(code):
            found.add(_normal(code))
    bare = INLINE_CODE_RE.sub(" ", text)
    found |= {_normal(i) for i in IDENTIFIER_RE.findall(bare)}
    return frozenset(found)


def _normal(name: str) -> str:
    """A code name as identifiers compare: "~attrs.define()" -> "attrs.define", "--max-requests" ->
    "max_requests"."""
    name = name.lstrip("~!").removesuffix("()")
    return name.lower().lstrip("-").replace("-", "_")


@lru_cache(maxsize=50_000)
def named_things(text: str) -> frozenset[str]:
    """The code names of `text` and the words it sets in emphasis ("*metadata*"): the arguments,
    options and terms it names. (Capitalised names are left to the generator's other-subject check:
    a product's name is often the document's own subject.)"""
    bare = INLINE_CODE_RE.sub(" ", text)
    emphasised = {(m.group(1) or m.group(2)).lower() for m in _EMPHASIS_RE.finditer(bare)}
    return code_names(text) | frozenset(emphasised)


def value_subject(
    text: str,
    at: int,
    *,
    own: bool = True,
    before: str = "",
    label: str = "",
    names: Callable[[str], frozenset[str]] = code_names,
    inherit: bool = True,
) -> frozenset[str]:
    """What the value at position `at` of `text` is stated about: the things `names` finds between
    the start of its clause and the value; else (with `inherit`), in order, those of the nearest
    clause before it that names any, of `before` (the sentence a pronoun-led one refers back to), of
    `label`. Empty when nothing names a subject. With `own` False the value's own clause is skipped
    (in "``X`` is used by default" the name before the value may be the value)."""
    start = _clause_start(text, at)
    found = names(text[start:at]) if own else frozenset()
    if found or not inherit:
        return found
    for a, b in reversed(clause_spans(text)):
        if b <= start and (found := names(text[a:b])):
            return found
    return names(before) or names(label)


def bound_values(
    text: str,
    positions: Sequence[tuple[int, bool]],
    asked: Callable[[frozenset[str]], bool],
    *,
    before: str = "",
    label: str = "",
    names: Callable[[str], frozenset[str]] = code_names,
    inherit: bool = True,
) -> bool:
    """True when some value of `text` is stated about an asked subject. `positions` holds (where the
    value is, whether the names before it in its clause are its subject for certain): a value whose
    subject (see `value_subject`) is empty or accepted by `asked` is bound; a value of the uncertain
    kind is also bound when its own clause names an asked thing, and otherwise judged by the
    subject it inherits. False when every value is another's."""
    if not positions:
        return True
    for at, certain in positions:
        if not certain:
            mine = names(text[_clause_start(text, at) : at])
            if (mine and asked(mine)) or not inherit:
                return True  # without an inherited subject to judge by, the name may be the value
        subject = value_subject(
            text, at, own=certain, before=before, label=label, names=names, inherit=inherit
        )
        if not subject or asked(subject):
            return True
    return False


def names_only_asked(subject: frozenset[str], question_terms: frozenset[str]) -> bool:
    """True when some name of `subject` is one the question uses: every term of it, or of its last
    dotted part, is a question term ("the ``timeout`` setting" and ``Worker.timeout`` for "the
    default timeout"; not ``graceful_timeout``, not ``attr.ib`` for "an attrs attribute")."""
    return any(
        term_set(name.replace("_", " ")) <= question_terms
        or term_set(name.rsplit(".", 1)[-1].replace("_", " ")) <= question_terms  # Worker.timeout
        for name in subject
    )
