"""Example questions for the web page's empty state, worded from the indexed documents' own headings.

Pure: `example_questions(headings, limit=4, seed=0)` reads `Heading` values (what the store's
`headings()` returns) and writes at most one question per document. A heading already worded as a
question (and long enough to stand alone) is asked as it stands, "How to X" becomes "How do I X?",
any other topic heading becomes "What does the <title> say about <heading>?". Headings that name a
part of a document's layout ("Overview", "See also"), bare figures and very long headings are never used.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rag.language.lexicon import HOW_TO_HEADING_RE, LAYOUT_HEADINGS
from rag.language.text import normalise
from rag.types import Heading

# Characters of the longest heading worded into a question, and of a title kept in one.
MAX_HEADING_CHARS = 80
MAX_TITLE_CHARS = 60
# Words a question heading needs to stand alone ("What went wrong?" needs its document's title).
MIN_QUESTION_WORDS = 4
# Leading section numbers ("2.", "3.1", "IV.", "A)") and inline markup left in headings.
_NUMBERING_RE = re.compile(r"^(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Z])[.)]\s+|^\d+(?:\.\d+)+\s+")
_MARKUP_RE = re.compile(r"[*_`]+")
_LETTERS_RE = re.compile(r"[^\W\d_]")
_ARTICLE_RE = re.compile(r"^(?:the|a|an)\s", re.IGNORECASE)
# Heading forms, best first: a question as written, a "how to", a topic.
_QUESTION, _HOW_TO, _TOPIC = 0, 1, 2


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


def _lower_first(phrase: str) -> str:
    """Lower-case the first word unless it is an acronym or a name with inner capitals ("SSO", "GitHub")."""
    first = phrase.split(" ", 1)[0]
    if len(first) > 1 and any(ch.isupper() for ch in first[1:]):
        return phrase
    return phrase[:1].lower() + phrase[1:]


def _title_phrase(title: str) -> str:
    """The title as a noun phrase ("the Lumio Admin Guide"); "" when it is too long to read well."""
    title = " ".join(title.split()).rstrip(".:")
    if not title or len(title) > MAX_TITLE_CHARS:
        return ""
    return title if _ARTICLE_RE.match(title) else f"the {title}"


def _worth_asking(leaf: str, title: str) -> bool:
    """False for a heading leaf that is empty, too long, mostly figures, a layout part or the title."""
    if not leaf or len(leaf) > MAX_HEADING_CHARS or len(_LETTERS_RE.findall(leaf)) < 3:
        return False
    return not (normalise(leaf) in LAYOUT_HEADINGS or leaf.casefold() == title.strip().casefold())


def word_question(heading: Heading) -> tuple[int, str] | None:
    """(form rank, question) for one heading; None when the heading is not a topic worth asking about."""
    leaf = _leaf(heading.section)
    if not _worth_asking(leaf, heading.title):
        return None
    how_to = HOW_TO_HEADING_RE.match(leaf)
    if how_to and len(how_to.group("rest").split()) >= MIN_QUESTION_WORDS - 2:
        return _HOW_TO, f"How do I {how_to.group('rest').rstrip('?.! ')}?"
    if leaf.endswith("?") and len(leaf.split()) >= MIN_QUESTION_WORDS:
        return _QUESTION, leaf
    title = _title_phrase(heading.title)
    if not title:
        return None
    return _TOPIC, f"What does {title} say about {_lower_first(leaf.rstrip('?'))}?"


def _spread(key: str, seed: int) -> str:
    """A stable pseudo-random sort key, so the examples come from across the corpus, not its first files."""
    return hashlib.sha1(f"{seed}:{key}".encode()).hexdigest()


def example_questions(headings: Iterable[Heading], *, limit: int = 4, seed: int = 0) -> list[Example]:
    """At most `limit` example questions, one per document, none repeated; the same for the same
    headings and `seed` (another seed draws other documents). Question headings are preferred."""
    best: dict[str, tuple[int, str, Heading]] = {}
    for heading in headings:
        worded = word_question(heading)
        if worded is None:
            continue
        rank, question = worded
        kept = best.get(heading.doc_id)
        if kept is None or (rank, _spread(question, seed)) < (kept[0], _spread(kept[1], seed)):
            best[heading.doc_id] = (rank, question, heading)
    ordered: Sequence[tuple[int, str, Heading]] = sorted(
        best.values(), key=lambda item: (item[0], _spread(item[2].doc_id, seed))
    )
    out: list[Example] = []
    seen: set[str] = set()
    for _, question, heading in ordered:
        key = normalise(question)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            Example(question=question, doc_id=heading.doc_id, title=heading.title, section=heading.section)
        )
        if len(out) >= max(0, limit):
            break
    return out
