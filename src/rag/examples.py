"""Example questions for the web page's empty state, worded from the indexed documents' headings.

Pure. `candidate_questions(heading, opening)` words one section as the questions a person would type
about it, best first: a heading already worded as a question (and long enough to stand alone) as it
stands; "How to X", a gerund ("Archiving a project") or an imperative ("Create a project") heading as
"How do I ...?"; a topic heading from the section's own opening sentence when that sentence defines
it ("Service credits are ..." -> "What are service credits?"), else as "What does the <kind of
document> say about <topic>?" when the title ends in a kind ("the travel policy"), or about a short
title that reads as a name. Headings that name a part of a document's layout ("Overview", "See
also"), bare figures and very long headings are never used.

`candidates(...)` orders the candidates of many documents for asking, spread across the corpus;
`pick(...)` draws the offered ones for one seed. Which candidates are offered at all (those the
system answers) is decided by the caller (`rag.api.examples`), which asks them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from rag.language.lexicon import (
    EXAMPLE_DETERMINERS,
    EXAMPLE_JOINERS,
    GENERIC_SOURCE_WORDS,
    HOW_TO_HEADING_RE,
    LAYOUT_HEADINGS,
    NOT_A_NAME_OPENERS,
    STOP_WORDS,
    TO_FIRST_PERSON,
)
from rag.language.text import english_frequency, normalise, split_sentences
from rag.types import Heading

# Characters of the longest heading worded into a question, and words of a title kept in one.
MAX_HEADING_CHARS = 80
MAX_TITLE_WORDS = 4
# Words a question heading needs to stand alone ("What went wrong?" needs its document's title).
MIN_QUESTION_WORDS = 4
# How often (per word of English) a word must occur to count as a common word (the verb a heading's
# form implies; a title word written in lower case, where a rarer one is kept as a name).
MIN_WORD_FREQUENCY = 1e-6
# Share of the corpus's titles a capitalised word must appear in to count as its brand ("Acme ...").
BRAND_SHARE = 0.1
# Leading section numbers ("2.", "3.1", "IV.", "A)", "Step 5:") and inline markup left in headings.
_NUMBERING_RE = re.compile(
    r"^(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])[.)]\s+|^\d+(?:\.\d+)+\s+"
    r"|^(?:step|part|chapter|section|phase|stage)\s+\d+\s*[:.)-]\s*",
    re.IGNORECASE,
)
_MARKUP_RE = re.compile(r"[*_`]+")
_LETTERS_RE = re.compile(r"[^\W\d_]")
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s", re.IGNORECASE)
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]*")
_KINDS = frozenset(GENERIC_SOURCE_WORDS.split())
# A definition: "[The|A|An|Our|Your] <topic> is|are ..." at the start of the section's first sentence.
_DEFINITION_RE = re.compile(r"^(?:(?P<article>the|a|an|our|your)\s+)?(?P<rest>.+)$", re.IGNORECASE)
_COPULA_RE = re.compile(r"^\s*(?P<verb>is|are)\b", re.IGNORECASE)

# Forms, best first: a question as written, a "how do I", a definition, a topic.
QUESTION, HOW_DO_I, DEFINITION, TOPIC = 0, 1, 2, 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    """One example question and the section it was worded from."""

    question: str
    doc_id: str
    title: str
    section: str


def _leaf(section: str) -> str:
    """The last part of a section path ("Admin guide > Limits" -> "Limits"), without numbering or markup."""
    leaf = section.rsplit(">", 1)[-1]
    leaf = _MARKUP_RE.sub("", leaf).strip().rstrip(":.;,!").strip()
    return _NUMBERING_RE.sub("", leaf).strip()


def _lower_word(word: str) -> str:
    """`word` lower-cased unless it is an acronym or a name with inner capitals ("SSO", "GitHub")."""
    if len(word) > 1 and any(ch.isupper() for ch in word[1:]):
        return word
    return word.lower()


def _lower_first(phrase: str) -> str:
    first, _, rest = phrase.partition(" ")
    return " ".join(filter(None, (_lower_word(first), rest)))


def _worth_asking(leaf: str, title: str) -> bool:
    """False for a heading leaf that is empty, too long, mostly figures, a layout part or the title."""
    if not leaf or len(leaf) > MAX_HEADING_CHARS or len(_LETTERS_RE.findall(leaf)) < 3:
        return False
    return not (normalise(leaf) in LAYOUT_HEADINGS or leaf.casefold() == title.strip().casefold())


def _best_word(forms: Iterable[str]) -> str:
    """The most frequent English word among `forms`, or "" when none is common enough to be a word."""
    scored = [(english_frequency(f), f) for f in forms if f]
    frequency, word = max(scored, default=(0.0, ""))
    return word if frequency >= MIN_WORD_FREQUENCY else ""


def _verb_of_gerund(word: str) -> str:
    """The base form of an -ing word ("archiving" -> "archive", "running" -> "run"), or ""."""
    lower = word.lower()
    if not lower.endswith("ing") or len(lower) < 6:
        return ""
    stem = lower[:-3]
    forms = [stem, stem + "e"]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "aeiouslfz":
        forms.append(stem[:-1])
    return _best_word(forms)


def _is_base_verb(word: str) -> bool:
    """Whether `word` has a common -ing form ("create" -> "creating"): a verb, as a heading's first
    word (never a function word: "Can I ...", "The ...")."""
    lower = word.lower()
    return lower.isalpha() and len(lower) >= 3 and lower not in STOP_WORDS and bool(_gerund(lower))


def _first_person(words: Sequence[str]) -> str:
    return " ".join(TO_FIRST_PERSON.get(w.lower(), w) for w in words)


def _title_case(words: Sequence[str]) -> bool:
    """Whether a heading capitalises every longer word ("Opening The Workload View"), names or not."""
    long = [w for w in words if len(w) > 3]
    return len(long) >= 2 and all(w[:1].isupper() for w in long)


def _rest(words: Sequence[str]) -> list[str]:
    """The words after a heading's first, as a sentence writes them (title case lowered, names kept)."""
    return [_lower_word(w) for w in words[1:]] if _title_case(words) else list(words[1:])


def _has_object(words: Sequence[str]) -> bool:
    """Whether the words after a verb read as its object: a determiner first, a name, or two words or
    more ("Sharing a snapshot", "Connecting Slack", "Importing from a spreadsheet"; not "Working hours")."""
    rest = _rest(words)
    if not rest or rest[0].lower() in EXAMPLE_JOINERS:
        return False
    return rest[0].lower() in EXAMPLE_DETERMINERS or _names(rest[0]) or len(rest) >= 2


def _names(word: str) -> bool:
    """A capitalised word inside a heading: a name ("Slack", "SSO"), never the pronoun "I"."""
    return word[:1].isupper() and word != "I"


def _how_do_i(leaf: str) -> str:
    """ "How do I ...?" for a "How to", gerund or imperative heading; "" for any other."""
    how_to = HOW_TO_HEADING_RE.match(leaf)
    if how_to and len(how_to.group("rest").split()) >= MIN_QUESTION_WORDS - 2:
        return f"How do I {_first_person(how_to.group('rest').rstrip('?.! ').split())}?"
    words = leaf.split()
    if leaf.endswith("?") or not _has_object(words):
        return ""
    if verb := _verb_of_gerund(words[0]):
        return f"How do I {verb} {_first_person(_rest(words))}?"
    if _imperative(words):
        return f"How do I {words[0].lower()} {_first_person(_rest(words))}?"
    return ""


def _imperative(words: Sequence[str]) -> bool:
    """A heading that opens with a verb's base form before a determiner or a name ("Create a project",
    "Enforce SSO"; not "Audit log")."""
    rest = _rest(words)
    if not rest or not (rest[0].lower() in EXAMPLE_DETERMINERS or _names(rest[0])):
        return False
    return _is_base_verb(words[0])


def _gerund(word: str) -> str:
    """The -ing form of a verb's base form ("create" -> "creating"), the most frequent spelling."""
    lower = word.lower()
    dropped = lower[:-1] + "ing" if lower.endswith("e") and len(lower) > 3 else ""
    return _best_word([lower + "ing", dropped, lower + lower[-1] + "ing"])


def _topic(leaf: str) -> str:
    """The heading as the object of "say about": an imperative turned to its gerund ("Enforce SSO" ->
    "enforcing SSO"), else the heading with its first word lower-cased."""
    words = leaf.rstrip("?").split()
    if len(words) >= 2 and _imperative(words):
        return " ".join([_gerund(words[0]), *_rest(words)])
    return " ".join([_lower_word(words[0]), *_rest(words)])


def _definition(leaf: str, opening: str) -> str:
    """ "What is/are <topic>?" when the section's first sentence opens by defining its heading's topic."""
    sentences = split_sentences(opening.strip())
    if not sentences:
        return ""
    match = _DEFINITION_RE.match(sentences[0].strip())
    topic = leaf.rstrip("?")
    if match is None or not match.group("rest").lower().startswith(topic.lower()):
        return ""
    copula = _COPULA_RE.match(match.group("rest")[len(topic) :])
    if copula is None:
        return ""
    article = (match.group("article") or "").lower()
    article = "the" if article in ("our", "your") else article
    subject = " ".join(filter(None, (article, _lower_first(topic))))
    return f"What {copula.group('verb').lower()} {subject}?"


def _document_phrase(title: str, brands: frozenset[str] = frozenset()) -> str:
    """How a person names the document: "the travel policy" for a title ending in a kind of document
    ("Acme Travel Policy": up to two words before the kind, `brands` left out), the short title
    itself when it reads as a name ("the Slack Integration"), else ""."""
    words = _WORD_RE.findall(title)
    if len(words) >= 2 and words[-1].lower() in _KINDS:
        before: list[str] = []
        for word in reversed(words[-3:-1]):
            if word.lower() in EXAMPLE_JOINERS or word.lower() in STOP_WORDS or word.casefold() in brands:
                break
            before.insert(
                0, _lower_word(word) if english_frequency(word.lower()) >= MIN_WORD_FREQUENCY else word
            )
        return f"the {' '.join(before)} {words[-1].lower()}" if before else ""
    plain = " ".join(title.split()).rstrip(".:")
    if (
        not words
        or len(plain.split()) > MAX_TITLE_WORDS
        or not all(_WORD_RE.fullmatch(w) for w in plain.split())
    ):
        return ""
    if (
        words[0].lower() in NOT_A_NAME_OPENERS
        or words[0].lower().endswith("ing")
        or EXAMPLE_JOINERS & {w.lower() for w in words}
    ):
        return ""
    return plain if _ARTICLE_RE.match(plain) else f"the {plain}"


def brand_words(titles: Iterable[str]) -> frozenset[str]:
    """Capitalised words (casefolded) in at least `BRAND_SHARE` of the titles, and in 3 or more: the
    organisation's or product's name, which a person leaves out when naming one of its documents."""
    titles = list(titles)
    counts: dict[str, int] = {}
    for title in titles:
        for word in {w for w in _WORD_RE.findall(title) if w[:1].isupper()}:
            counts[word.casefold()] = counts.get(word.casefold(), 0) + 1
    floor = max(3, BRAND_SHARE * len(titles))
    return frozenset(w for w, n in counts.items() if n >= floor and w not in _KINDS)


def candidate_questions(
    heading: Heading, opening: str = "", brands: frozenset[str] = frozenset()
) -> list[tuple[int, str]]:
    """(form, question) for one heading, best first; `opening`: the start of the section's text
    (its definition, when it opens with one); `brands`: see `brand_words`. Empty for a heading not
    worth asking about."""
    leaf = _leaf(heading.section)
    if not _worth_asking(leaf, heading.title):
        return []
    out: list[tuple[int, str]] = []
    if leaf.endswith("?") and len(leaf.split()) >= MIN_QUESTION_WORDS:
        out.append((QUESTION, leaf))
    if how := _how_do_i(leaf):
        out.append((HOW_DO_I, how))
    if defined := _definition(leaf, opening):
        out.append((DEFINITION, defined))
    document = _document_phrase(heading.title, brands)
    if document and not leaf.endswith("?"):
        out.append((TOPIC, f"What does {document} say about {_topic(leaf)}?"))
    return out


def word_question(
    heading: Heading, opening: str = "", brands: frozenset[str] = frozenset()
) -> tuple[int, str] | None:
    """The best (form, question) for one heading; None when the heading is not worth asking about."""
    found = candidate_questions(heading, opening, brands)
    return found[0] if found else None


def _spread(key: str, seed: int) -> str:
    """A stable pseudo-random sort key, so the examples come from across the corpus, not its first files."""
    return hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()


def candidates(
    headings: Iterable[Heading],
    openings: Callable[[str], Mapping[str, str]] | None = None,
    *,
    seed: int = 0,
) -> Iterator[list[Example]]:
    """Per document (in a stable order spread by `seed`), its candidate questions best first (better
    forms first, then spread): what to ask, one document's candidates until one answers. `openings`:
    doc_id -> {section: the start of its text}, called once per document reached (lazily, so a
    caller that stops early reads no more). No question appears twice."""
    by_doc: dict[str, list[Heading]] = {}
    for heading in headings:
        by_doc.setdefault(heading.doc_id, []).append(heading)
    brands = brand_words(group[0].title for group in by_doc.values())
    seen: set[str] = set()
    for doc_id in sorted(by_doc, key=lambda d: _spread(d, seed)):
        opening = openings(doc_id) if openings is not None else {}
        worded = [
            (form, question, heading)
            for heading in by_doc[doc_id]
            for form, question in candidate_questions(heading, opening.get(heading.section, ""), brands)
        ]
        examples = []
        for _, question, heading in sorted(worded, key=lambda item: (item[0], _spread(item[1], seed))):
            if (key := normalise(question)) not in seen:
                seen.add(key)
                examples.append(
                    Example(question=question, doc_id=doc_id, title=heading.title, section=heading.section)
                )
        if examples:
            yield examples


def answered(
    per_doc: Iterable[Sequence[Example]], answers: Callable[[str], bool], *, keep: int, max_asks: int
) -> list[Example]:
    """At most `keep` examples that `answers` accepts, at most one per document, asking at most
    `max_asks` questions in all: each document's candidates in order until one is accepted."""
    kept: list[Example] = []
    asked = 0
    for examples in per_doc:
        for example in examples:
            if asked >= max_asks or len(kept) >= keep:
                return kept
            asked += 1
            if answers(example.question):
                kept.append(example)
                break
    return kept


def pick(pool: Sequence[Example], *, limit: int, seed: int = 0) -> list[Example]:
    """At most `limit` of `pool`, in an order that depends on `seed` only (the same seed, the same draw)."""
    return sorted(pool, key=lambda e: _spread(e.doc_id + "\n" + e.question, seed))[: max(0, limit)]
