"""Support: does a sentence say what its cited span says? (native citations, whose span is verbatim)

The API guarantees that `cited_text` is in the document; what is left to judge is the sentence:
1. an attribution lead-in that names the cited document ("According to the Lumio User Manual (updated
   2026-03-18), ...", "The policy states that ...", "..., per the admin guide.") is set aside, so its
   title words and date are not judged as claims; one that names another document stays, and fails;
2. coverage: the share of the sentence's content terms (stemmed, stop words out, topic words kept) found
   in its own span or the block's title and section must reach `MIN_COVERAGE`;
3. harmful edits are withheld even when coverage is high: a negation the span does not have, or one it
   has and the sentence drops ("must" / "must not", "no longer", "cannot"); the entities of the span
   in swapped roles ("admins invite members" / "members invite admins"); a subject the span does not
   name. Changed figures are judged by `figures.missing_figures` on the same span.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from rag.text import term_set, terms
from rag.types import Block

# Calibrated on fixtures/support/claims.jsonl (dev split), see docs/eval.md.
MIN_COVERAGE = 0.6

# Words that refer to a document in general: a lead-in naming only these refers to the cited block.
_GENERIC_SOURCE = frozenset(
    term_set(
        """document documents documentation docs doc manual manuals guide guides handbook policy policies
        article page pages section sections faq source sources text notes note release wiki knowledge base
        help center centre official current latest cited passage entry record records article guidance
        guideline guidelines reference material file"""
    )
)
_SOURCE_VERBS = (
    r"(?:states?|says?|notes?|explains?|specif(?:y|ies)|mentions?|confirms?|indicates?|reports?|documents?"
    r"|clarif(?:y|ies)|describes?|outlines?|stipulates?|provides?|sets? out|tells? us|reads?|gives?|lists?"
    r"|puts?|shows?|warns?|recommends?|advises?|points? out|adds?|records?)"
)
_DATED = r"(?:last\s+)?(?:updated|revised|dated|as of|effective)"
_SOURCE = rf"(?P<source>(?:[^,;:()]|\((?!\s*{_DATED})[^()]{{0,40}}\)){{1,100}}?)"
_DATE_PART = (
    r"(?:\s*\(\s*(?:last\s+)?(?:updated|revised|dated|as of|effective)?(?:\s+on)?:?\s*(?P<date>[^)]{0,40})\)"
    r"|\s*,\s*(?:last\s+)?(?:updated|revised|dated)(?:\s+on)?\s+(?P<date2>[^,]{1,40}),)?"
)
_LEAD_IN = re.compile(
    r"^\s*(?:according to|as (?:stated|described|noted|explained|documented|outlined|specified|mentioned"
    r"|set out|written) in|as per|per|based on|under|in)\s+" + _SOURCE + _DATE_PART + r"\s*[,:]\s*",
    re.IGNORECASE,
)
# "<source> [(updated D)] says [that]": the source is what precedes one of these verbs.
_SOURCE_ONLY = re.compile(r"\s*" + _SOURCE + _DATE_PART + r"\s*", re.IGNORECASE)
_VERB_RE = re.compile(r"\s+" + _SOURCE_VERBS + r"(?:\s+that)?\s*[,:]?\s+", re.IGNORECASE)
_TRAILING = re.compile(
    r"\s*,?\s*(?:according to|as (?:stated|described|noted|explained|documented|outlined|specified|mentioned)"
    r" in|as per|per)\s+" + _SOURCE + _DATE_PART + r"\s*(?P<stop>[.!?]?)\s*$",
    re.IGNORECASE,
)
# Share of the named source's own words (beyond "the policy", "the guide") that must be in the title.
MIN_TITLE_SHARE = 0.6
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_DATE_TOKEN_RE = re.compile(r"\d+|[A-Za-z]+")

# Negation is judged per clause: the polarity (odd or even number of cues) of each sentence clause
# against the span clause that shares most of its terms. "only" restricts as a negation does ("cannot X
# unless Y" = "only X if Y"); "unless" negates a condition, not the clause.
_NEGATION_RE = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|unable|only|"
    r"(?:ca|wo|do|does|is|are|was|were|must|should|could|did|has|have|need|would)n['’]?t)\b",
    re.IGNORECASE,
)
_CLAUSE_RE = re.compile(
    r"[;:.!?()\[\]—–]+|,\s*(?:and|so|or|then)\b|\b(?:but|while|whereas|although|though|however|so that|"
    r"because|since)\b",
    re.IGNORECASE,
)
MIN_CLAUSE_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Judgement:
    """The support verdict of one sentence against one block's cited spans; `issue` is "" when supported."""

    issue: str
    coverage: float
    core: str


def strip_attribution(sentence: str, block: Block) -> str:
    """The sentence without a lead-in (or trailing "..., according to X.") that names `block`'s document
    (its title or section, or a generic "the policy"/"the documentation") and, if it gives one, its date.
    The sentence is returned unchanged when the lead-in names something else."""
    match = _LEAD_IN.match(sentence)
    if match is not None and _names_block(match.group("source"), _date_of(match), block):
        return _capitalised(sentence[match.end() :])
    # the longest source that names the block ("the release notes (updated D) say": not "the release")
    cut = 0
    for verb in _VERB_RE.finditer(sentence, 0, min(len(sentence), 160)):
        source = _SOURCE_ONLY.fullmatch(sentence, 0, verb.start())
        if source is not None and _names_block(source.group("source"), _date_of(source), block):
            cut = verb.end()
    if cut:
        return _capitalised(sentence[cut:])
    match = _TRAILING.search(sentence)
    if match is not None and _names_block(match.group("source"), _date_of(match), block):
        return sentence[: match.start()] + (match.group("stop") or "")
    return sentence


def judge(
    sentence: str, spans: Sequence[str], block: Block, *, min_coverage: float = MIN_COVERAGE
) -> Judgement:
    """Whether `sentence` says what `spans` (verbatim text of `block`'s chunk) say (module docstring)."""
    core = strip_attribution(sentence, block)
    evidence = " ".join(spans)
    wanted = term_set(core)
    if not wanted:
        return Judgement("nothing substantive to verify", 0.0, core)
    context = term_set(f"{block.chunk.title} {block.chunk.section}")
    found = term_set(evidence) | context
    coverage = len(wanted & found) / len(wanted)
    n = block.n
    if coverage < min_coverage:
        return Judgement(f"[{n}] has only {coverage:.2f} overlap with its cited span", coverage, core)
    flipped = _negation_flip(core, evidence)
    if flipped:
        return Judgement(f"[{n}] {flipped} its cited span", coverage, core)
    swapped = _swapped(core, evidence)
    if swapped:
        return Judgement(
            f"[{n}] swaps {swapped[0]!r} and {swapped[1]!r} against its cited span", coverage, core
        )
    return Judgement("", coverage, core)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _date_of(match: re.Match[str]) -> str:
    return match.group("date") or match.group("date2") or ""


def _names_block(source: str, written_date: str, block: Block) -> bool:
    """True when `source` names the block's document: its own words (beyond generic ones like "the
    policy") mostly in the title, section or doc id, every number among them; a date, if given, its date."""
    named = term_set(source)
    if not named:
        return False
    known = term_set(f"{block.chunk.title} {block.chunk.section} {block.chunk.doc_id}")
    specific = named - _GENERIC_SOURCE
    if any(t.isdigit() and t not in known for t in specific):
        return False
    if specific and len(specific & known) < MIN_TITLE_SHARE * len(specific):
        return False
    if not specific and not named & _GENERIC_SOURCE:
        return False
    return not written_date or _same_date(written_date, block.chunk.updated_at)


def _same_date(written: str, updated: date | None) -> bool:
    """True when every number and month name in `written` is part of `updated` ("March 18, 2026")."""
    if updated is None:
        return False
    allowed = {updated.year, updated.month, updated.day}
    for token in _DATE_TOKEN_RE.findall(written):
        if token.isdigit():
            if int(token) not in allowed:
                return False
        elif token[:3].lower() in _MONTHS:
            if _MONTHS[token[:3].lower()] != updated.month:
                return False
    return True


def _clauses(text: str) -> list[tuple[frozenset[str], int]]:
    """(content terms, negation cues) per clause with at least one content term."""
    out = []
    for part in _CLAUSE_RE.split(text):
        found = term_set(part)
        if found:
            out.append((found, len(_NEGATION_RE.findall(part))))
    return out


def _negation_flip(sentence: str, evidence: str) -> str:
    """ "negates" / "drops the negation of" when a sentence clause and the span clause it restates
    (sharing most of its terms) differ in polarity ("is not recorded" / "is recorded"); "" otherwise."""
    source = _clauses(evidence)
    for found, cues in _clauses(sentence):
        parities = {
            cues_e % 2
            for terms_e, cues_e in source
            if len(found & terms_e) >= 2 and len(found & terms_e) >= MIN_CLAUSE_SHARE * len(found)
        }
        if parities and cues % 2 not in parities:
            return "negates" if cues % 2 else "drops the negation of"
    return ""


def _swapped(sentence: str, evidence: str) -> tuple[str, str] | None:
    """Two content words that the sentence and the span both name, once each, on opposite sides of the
    same verb in opposite order; None when order is kept or the sentence turns the voice around."""
    if _passive(sentence) != _passive(evidence):
        return None
    said = _content_tokens(sentence)
    source = _content_tokens(evidence)
    shared = [t for t in dict.fromkeys(said) if said.count(t) == 1 and source.count(t) == 1]
    if len(shared) < 3:
        return None
    where = {t: source.index(t) for t in shared}
    first, last = shared[0], shared[-1]
    middle = shared[1:-1]
    if where[first] > where[last] and any(where[last] < where[m] < where[first] for m in middle):
        return first, last
    return None


_PASSIVE_RE = re.compile(
    r"\b(?:is|are|was|were|be|been|being|gets?|got)\s+(?:\w+ly\s+)?\w+(?:ed|en)\s+by\b", re.I
)


def _passive(text: str) -> bool:
    return bool(_PASSIVE_RE.search(text))


def _content_tokens(text: str) -> list[str]:
    return terms(text)
