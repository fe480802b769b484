"""Attribution lead-ins: "According to the Lumio User Manual (updated 2026-03-18), ...", "The policy
states that ...", "..., per the admin guide." A lead-in that names the cited block's document (its title,
section or doc id, or a generic "the policy"; its date, if it gives one) is set aside
(`strip_attribution`); one that names another document is a misattribution (`misattribution`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from rag.language.lexicon import GENERIC_SOURCE_WORDS, SOURCE_VERBS
from rag.language.text import term_set
from rag.types import Block

__all__ = ["misattribution", "strip_attribution", "strip_attributions"]

# Words that refer to a document in general: a lead-in naming only these refers to the cited block.
_GENERIC_SOURCE = frozenset(term_set(GENERIC_SOURCE_WORDS))
_SOURCE_VERBS = SOURCE_VERBS
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
_VERB_RE = re.compile(
    r"(?:\s+(?:still|also|now|currently|instead|only))?\s+" + _SOURCE_VERBS + r"(?:\s+that)?\s*[,:]?\s+",
    re.IGNORECASE,
)
# Where a clause starts inside a sentence, so a lead-in may open it: "..., while the older FAQ still
# says ...", "For monthly billing, the pricing page lists ...".
_CLAUSE_START_RE = re.compile(
    r"(?:[,;]|\s(?=(?:while|whereas)\s))\s*(?:(?:while|whereas|but|and)\s+)?", re.IGNORECASE
)
_TRAILING = re.compile(
    r"\s*,?\s*(?:according to|as (?:stated|described|noted|explained|documented|outlined|specified|mentioned)"
    r" in)\s+" + _SOURCE + _DATE_PART + r"\s*(?P<stop>[.!?]?)\s*$",
    re.IGNORECASE,
)
# Share of the named source's own words (beyond "the policy", "the guide") that must be in the title.
MIN_TITLE_SHARE = 0.6
_MONTHS = {m: i for i, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), start=1)}
_DATE_TOKEN_RE = re.compile(r"\d+|[A-Za-z]+")


def misattribution(sentence: str, block: Block) -> str:
    """The source an attribution lead-in names when it is not `block`'s document ("According to the
    Security Handbook, ..." citing the user manual); "" when there is none or it names the block."""
    match = _LEAD_IN.match(sentence) or _TRAILING.search(sentence)
    if match is None or not match.group(0).lower().lstrip(" ,").startswith(("according", "as ")):
        return ""
    source = match.group("source").strip()
    return "" if _names_block(source, "", block) else source


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


def strip_attributions(sentence: str, blocks: Sequence[Block]) -> str:
    """The sentence without the lead-ins that name any of `blocks`' documents, at its start or end
    (`strip_attribution`) and where a later clause opens with one, each clause's lead-in naming its own
    block ("The pricing page (updated D1) says X, while the older FAQ (updated D2) still says Y": X,
    while Y). Dates a stripped lead-in gives go with it."""
    core = sentence
    for block in blocks:
        core = strip_attribution(core, block)
    out, last = [], 0
    for start in _CLAUSE_START_RE.finditer(core):
        cut = _inner_lead_in(core, start.end(), blocks)
        if cut:
            out.append(core[last : start.end()])
            last = cut
    return "".join(out) + core[last:] if out else core


def _inner_lead_in(text: str, at: int, blocks: Sequence[Block]) -> int:
    """Where the text after an inner lead-in starting at `at` ("the older FAQ (updated D) still says")
    begins, when the lead-in names one of `blocks`; 0 when none does."""
    for verb in _VERB_RE.finditer(text, at, min(len(text), at + 160)):
        source = _SOURCE_ONLY.fullmatch(text, at, verb.start())
        if source is not None and any(
            _names_block(source.group("source"), _date_of(source), b) for b in blocks
        ):
            return verb.end()
    return 0


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
