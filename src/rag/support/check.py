"""Support: does a sentence say what its cited span says? (native citations, whose span is verbatim)

The API guarantees that `cited_text` is in the document; what is left to judge is the sentence:
1. an attribution lead-in that names the cited document ("According to the Lumio User Manual (updated
   2026-03-18), ...", "The policy states that ...", "..., per the admin guide.") is set aside, so its
   title words and date are not judged as claims; one that names another document stays, and fails;
2. coverage: the share of the sentence's content terms (stemmed, stop words out, topic words kept) found
   in its own span or the block's title and section must reach `MIN_COVERAGE`; a word also counts as
   found when it aligns to a span word through a WordNet sense ("rejected" / "refused", see below);
3. harmful edits are withheld even when coverage is high: a negation the span does not have, or one it
   has and the sentence drops ("must" / "must not", "no longer", "cannot"); the entities of the span
   in swapped roles ("admins invite members" / "members invite admins"); a subject the span does not
   name. Changed figures are judged by `figures.missing_figures` on the same span.
4. alignment (with WordNet's data installed, the `lexical` extra; `Tools.wordnet`): each content
   word of the sentence is aligned to the span by stem, by a shared WordNet sense, or as an acronym of
   a run of words. A sentence word left unaligned that stands where an unaligned span word stood (next
   to the same aligned word) replaces it: when the two are WordNet antonyms ("downloads" / "uploads")
   the sentence contradicts its span; when both name things (usually nouns or adjectives, or
   capitalised names) it says something about another subject or role ("the workspace owner is
   notified" / "its creator is notified"). A capitalised name the span lacks, while the span has a
   name the sentence lacks, is another subject wherever it stands. Verbs are left to paraphrase:
   WordNet's verb senses are too narrow to tell a paraphrase ("switched on" / "enabled") from a change.
5. frames (with a dependency parser installed, the `parse` extra; `Tools.parser`): each predicate of
   the sentence is compared with the span's instances of the same predicate: the other polarity ("they
   expire" / "days do not expire"), a subject or object given to a word the span names in another role
   (a swap: "finance approves the claim" / "your manager approves the claim ... approval from finance"),
   or to a word the span lacks (another subject), two arguments the span gives to two instances of the
   predicate ("downgrades take effect immediately"), an argument narrowed by another word ("workspace
   owner" / "organisation owner"). The parser also vetoes a substitution of (4) between words it tags
   as a verb and a word of another part of speech ("in a row" / "is disabled"), or as two verbs.
   Without the parser, (5) is skipped and the check runs as before.
6. meaning (with the sentence encoder installed, `Tools.meaning`): words left unaligned by (4) may
   align by their contextual vectors (`CheckOptions.min_word_similarity`, off: on dev a sibling in a
   word's place is as alike as a paraphrase), and the sentence-to-span similarities are signals for the
   calibrated model (measured only when it decides). Without the encoder, or with `RAG_ENCODER=off`,
   nothing changes.
`signals` measures all of the above for one sentence (no rule stops the others); `decision.decide`
turns the measurements into the verdict (the hand rules, in the order above, or a calibrated model).
The tools, the model and the alignment threshold come in one `CheckOptions` (built from `Settings` where
the pipeline is built); a caller that passes none gets `default_options()`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from rag.calibration import Model
from rag.language.lexicon import (
    COMPOUND_PREPOSITION_HEADS,
    COMPOUND_PREPOSITION_TAILS,
    FUNCTION_WORDS,
    GENERIC_SOURCE_WORDS,
    OPPOSITES,
    SCOPE_EQUIVALENTS_ONLY,
    SCOPE_GROUPS,
    SOURCE_VERBS,
)
from rag.language.meaning import Matrix, Meaning
from rag.language.numbers import find_numbers
from rag.language.quantities import find_quantities
from rag.language.syntax import EMPTY, Analysis, Frame, Parser
from rag.language.text import STOP_WORDS, stem, term_set, terms
from rag.language.tools import Tools, installed
from rag.language.wordnet import WordNet
from rag.support.decision import Decision, Signals, active_model, decide
from rag.support.figures import missing_figures
from rag.types import Block

__all__ = [
    "CheckOptions",
    "Decision",
    "Signals",
    "check",
    "default_options",
    "misattribution",
    "signals",
    "strip_attribution",
]

# Calibrated on fixtures/support/claims.jsonl (dev split), see docs/eval.md.
MIN_COVERAGE = 0.5
# Contextual similarity at which two words left unaligned by stem and WordNet align by meaning (the
# encoder's token vectors). Off by default: on dev no threshold separates a faithful paraphrase from a
# sibling put in its place (faithful "newer" / "higher" 0.59; harmful "newest" / "oldest" and "email" /
# "message" 0.66; names, left out anyway, "SMS" / "text" 0.77, "October" / "September" 0.75), so every value
# tried traded faithful kept for harmful shown one for one or worse (docs/eval.md, fifth round).
# `RAG_SUPPORT_WORD_SIMILARITY=0.7` (`CheckOptions.min_word_similarity`) turns it on for a measurement.
MIN_WORD_SIMILARITY: float | None = None

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
_VERB_RE = re.compile(r"\s+" + _SOURCE_VERBS + r"(?:\s+that)?\s*[,:]?\s+", re.IGNORECASE)
_TRAILING = re.compile(
    r"\s*,?\s*(?:according to|as (?:stated|described|noted|explained|documented|outlined|specified|mentioned)"
    r" in)\s+" + _SOURCE + _DATE_PART + r"\s*(?P<stop>[.!?]?)\s*$",
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
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|unable|(?<!-)only(?!-)|"
    r"(?:ca|wo|do|does|is|are|was|were|must|should|could|did|has|have|need|would)n['’]?t)\b",
    re.IGNORECASE,
)
# Bounds, not negations: "no more than" is "at most".
_BOUND_RE = re.compile(r"\bno (?:more|less|fewer|later|earlier|sooner|longer) than\b", re.IGNORECASE)
_CLAUSE_RE = re.compile(
    r"[,;:.!?()\[\]—–]+|\b(?:and|or|but|so|then|while|whereas|although|though|however|because|since|when"
    r"|whenever|if|unless|until)\b",
    re.IGNORECASE,
)
MIN_CLAUSE_SHARE = 0.5
MIN_CLAUSE_TERMS = 3
# How many terms either side count as a term's neighbours when looking for swapped roles.
SWAP_REACH = 2

_SCOPE_WORDS = frozenset().union(*SCOPE_GROUPS) - SCOPE_EQUIVALENTS_ONLY


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


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOptions:
    """What the check reads besides its texts: the English tools, the decision model (None: the hand
    rules, `decision.rules`) and the similarity at which words align by meaning (None: not at all)."""

    tools: Tools
    model: Model | None = None
    min_word_similarity: float | None = MIN_WORD_SIMILARITY


@lru_cache(maxsize=1)
def default_options() -> CheckOptions:
    """The options of a caller that passes none: the installed tools, the stored model only when it was
    adopted (`decision.active_model`), no alignment by meaning."""
    return CheckOptions(tools=installed(), model=active_model())


def _or_default(options: CheckOptions | None) -> CheckOptions:
    return options if options is not None else default_options()


def check(
    sentence: str,
    spans: Sequence[str],
    blocks: Sequence[Block],
    *,
    common: frozenset[str] = frozenset(),
    min_coverage: float = MIN_COVERAGE,
    options: CheckOptions | None = None,
) -> Decision:
    """Whether `sentence` says what `spans` (verbatim text of the `blocks`' chunks) say (module docstring).
    `common` holds the request's topic terms (in most blocks): naming one of those is not naming another
    subject. Issues name the first block. The verdict is `decision.decide` over `signals`, with the
    model of `options` (None: `default_options()`)."""
    options = _or_default(options)
    measured = signals(sentence, spans, blocks, common=common, options=options)
    return decide(measured, blocks[0].n, min_coverage=min_coverage, model=options.model)


def signals(
    sentence: str,
    spans: Sequence[str],
    blocks: Sequence[Block],
    *,
    common: frozenset[str] = frozenset(),
    with_meaning: bool | None = None,
    options: CheckOptions | None = None,
) -> Signals:
    """Every signal of the check for `sentence` against `spans` (no rule stops the others, except a
    lead-in naming another document and a sentence with nothing to judge, which need no more), with the
    tools of `options` (None: `default_options()`). `with_meaning`: measure the encoder's `meaning` and
    `word_meaning` (only the calibrated model reads them; by default, only when `options` has a model,
    so the rules' path encodes nothing for them)."""
    options = _or_default(options)
    wn, parser = options.tools.wordnet, options.tools.parser
    core = sentence
    for block in blocks:
        core = strip_attribution(core, block)
    evidence = " ".join(spans)
    other = next((m for m in (misattribution(core, b) for b in blocks) if m), "") if core == sentence else ""
    if other:
        return Signals(core=core, misattributed=other)
    wanted = term_set(core)
    if not wanted:
        return Signals(core=core, lead_in=core != sentence, empty=True)
    context = term_set(" ".join(f"{b.chunk.title} {b.chunk.section}" for b in blocks))
    span_terms = term_set(evidence)
    found = span_terms | context
    stem_coverage = len(wanted & found) / len(wanted)
    aligned, unaligned = _aligned_share(core, evidence, context, options)
    substituted = _substituted(core, evidence, context, options)
    vetoed = False
    if (
        substituted
        and substituted[2] != "antonym"
        and _other_kinds(parser, substituted[0], core, substituted[1], evidence)
    ):
        substituted, vetoed = None, True  # the parser tags the two words as different kinds, or both as verbs
    wanted_meaning = options.model is not None if with_meaning is None else with_meaning
    measured_meaning = _meaning_signals(core, evidence, context, options) if wanted_meaning else (0.0, 1.0)
    return Signals(
        core=core,
        lead_in=core != sentence,
        coverage=max(stem_coverage, aligned),
        stem_coverage=stem_coverage,
        aligned_share=aligned,
        span_coverage=len(span_terms & wanted) / len(span_terms) if span_terms else 0.0,
        terms=len(wanted),
        unfound=len(wanted - found),
        unaligned=unaligned,
        new_name=_new_name(core, found | common),
        new_scope=_new_scope(core, evidence),
        opposite=_opposite(core, evidence),
        negation_flip=_negation_flip(core, evidence),
        substituted=substituted,
        substitution_vetoed=vetoed,
        swapped=_swapped(core, evidence),
        frames=_frame_conflicts(parser, wn, core, evidence, context | common),
        missing_figures=len(missing_figures(core, [evidence])),
        meaning=measured_meaning[0],
        word_meaning=measured_meaning[1],
    )


def _meaning_signals(
    sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> tuple[float, float]:
    """`meaning` and `word_meaning` of `Signals` (their defaults, 0.0 and 1.0, without the encoder; the
    second also without WordNet, which decides the words left unaligned)."""
    meaning = options.tools.meaning
    whole = meaning.similarity(sentence, evidence) if meaning is not None else None
    if meaning is None or whole is None:
        return 0.0, 1.0
    return whole, _word_meaning(meaning, sentence, evidence, context, options)


def _word_meaning(
    meaning: Meaning, sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> float:
    """The lowest best contextual similarity of a sentence word left unaligned to any span word; 1.0
    when every word aligned, or without WordNet."""
    wn = options.tools.wordnet
    if wn is None:
        return 1.0
    a = _alignment(wn, sentence, evidence, context, options)
    loose = [w for w, ok in zip(a.said, a.said_aligned, strict=True) if not ok]
    if not loose or not a.source:
        return 1.0
    sims = meaning.word_similarities(
        sentence, [(w.start, w.end) for w in loose], evidence, [(w.start, w.end) for w in a.source]
    )
    return float(sims.max(axis=1).min()) if sims is not None else 1.0


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


def _new_name(sentence: str, known: frozenset[str]) -> str:
    """A capitalised name inside the sentence ("the Business plan", "in Frankfurt") that its span, the
    block's title and the request's topic terms do not have: another entity than the span's; "" if none."""
    first = _PLAIN_WORD_RE.search(sentence)
    for match in _NAME_RE.finditer(sentence):
        word = match.group()
        if first is not None and match.start() == first.start():
            continue
        if word.lower() in STOP_WORDS or stem(word.lower()) in known:
            continue
        return word
    return ""


_NAME_RE = re.compile(r"(?<=[\s(\"'“‘/])[A-Z][A-Za-z]+")


def _opposite(sentence: str, evidence: str) -> tuple[str, str] | None:
    """(what the sentence says, what the span says) for a pair of opposites the sentence reverses."""
    said, source = f" {' '.join(_words(sentence))} ", f" {' '.join(_words(evidence))} "
    for a, b in OPPOSITES:
        for x, y in ((a, b), (b, a)):
            if f" {x} " in said and f" {y} " in source and f" {x} " not in source and f" {y} " not in said:
                return x, y
    return None


def _words(text: str) -> list[str]:
    return [w.lower() for w in _PLAIN_WORD_RE.findall(text)]


def _new_scope(sentence: str, evidence: str) -> str:
    """A scope word of the sentence that neither the span nor an equivalent in it has; "" if none."""
    said = {w.lower() for w in _PLAIN_WORD_RE.findall(sentence)}
    source = {w.lower() for w in _PLAIN_WORD_RE.findall(evidence)}
    for word in sorted(said & _SCOPE_WORDS):
        if word in source:
            continue
        if not any(word in group and group & source for group in SCOPE_GROUPS):
            return str(word)
    return ""


_PLAIN_WORD_RE = re.compile(r"[A-Za-z]+")


def _clauses(text: str) -> list[tuple[frozenset[str], int]]:
    """(content terms, negation cues) per clause with at least one content term."""
    out = []
    for part in _CLAUSE_RE.split(_BOUND_RE.sub("at most", text)):
        found = term_set(part)
        if found:
            out.append((found, len(_NEGATION_RE.findall(part))))
    return out


def _negation_flip(sentence: str, evidence: str) -> str:
    """ "negates" / "drops the negation of" when a sentence clause and the span clause it restates
    (sharing most of its terms) differ in polarity ("is not recorded" / "is recorded"); "" otherwise."""
    said, source = _clauses(sentence), _clauses(evidence)

    def restates(found: frozenset[str], other: frozenset[str]) -> bool:
        shared = len(found & other)
        return shared >= 2 and shared >= MIN_CLAUSE_SHARE * len(found)

    for terms_e, cues_e in source:
        if len(terms_e) < MIN_CLAUSE_TERMS:
            continue
        restating = [(found, cues) for found, cues in said if restates(found, terms_e)]
        covered = frozenset().union(*(found for found, _ in restating)) & terms_e
        if len(covered) < MIN_CLAUSE_SHARE * len(terms_e):
            continue  # the sentence does not restate this clause of the span (a partial answer)
        if sum(c for _, c in restating) % 2 == cues_e % 2 or any(c % 2 == cues_e % 2 for _, c in restating):
            continue
        # each restating clause of the sentence may still say what another clause of the span says
        if all(any(restates(f, t) and c % 2 == ce % 2 for t, ce in source) for f, c in restating):
            continue
        return "negates" if cues_e % 2 == 0 else "drops the negation of"
    return ""


def _swapped(sentence: str, evidence: str) -> tuple[str, str] | None:
    """Two terms that trade places: each in both texts once, and each sits, in the sentence, next to a
    term that sits next to the other one in the span ("$75 for domestic, $110 for international" /
    "$110 for domestic, $75 for international"); None when there are none."""
    said, source = _figure_terms(sentence), _figure_terms(evidence)
    once = [t for t in dict.fromkeys(said) if said.count(t) == 1 and source.count(t) == 1]
    if len(once) < 4:
        return None
    named = _anchors(sentence) | _anchors(evidence)
    for reach, anchors in ((SWAP_REACH, [t for t in once if t in named]), (1, once)):
        near_said = {t: _neighbours(said, said.index(t), reach) & set(once) for t in once}
        near_source = {t: _neighbours(source, source.index(t), reach) & set(once) for t in once}
        for i, a in enumerate(anchors):
            for b in anchors[i + 1 :]:
                if a in near_source[b] or b in near_source[a]:
                    continue
                a_takes = (near_said[a] & near_source[b]) - near_source[a] - {a, b}
                b_takes = (near_said[b] & near_source[a]) - near_source[b] - {a, b}
                # names and values may keep a neighbour; other words must have traded all of theirs
                kept = reach == 1 and bool(near_said[a] & near_source[a] or near_said[b] & near_source[b])
                if a_takes and b_takes and not kept:
                    return a, b
    return None


def _anchors(text: str) -> frozenset[str]:
    """The terms that name a value or an entity: numbers, and capitalised words inside a sentence."""
    found = {t for t in _figure_terms(text) if t[:1].isdigit()}
    found |= {stem(m.group().lower()) for m in _NAME_RE.finditer(text)}
    return frozenset(found)


def _neighbours(seq: list[str], at: int, reach: int = SWAP_REACH) -> set[str]:
    return set(seq[max(0, at - reach) : at] + seq[at + 1 : at + 1 + reach])


def _figure_terms(text: str) -> list[str]:
    """Content terms in order, with each number as one term ("$1,000" -> "1000")."""
    return terms(_NUMBER_GLUE_RE.sub(lambda m: re.sub(r"[,:.-]", "", m.group()), text))


_NUMBER_GLUE_RE = re.compile(r"\d{1,3}(?:,\d{3})+|\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}")


_PASSIVE_RE = re.compile(
    r"\b(?:is|are|was|were|be|been|being|gets?|got)\s+(?:\w+ly\s+)?\w+(?:ed|en)\s+by\b", re.I
)


def _passive(text: str) -> bool:
    return bool(_PASSIVE_RE.search(text))


def _content_tokens(text: str) -> list[str]:
    return terms(text)


# --- alignment: each content word of the sentence aligned to the span (same stem or a WordNet sense) ---

_ALIGN_WORD_RE = re.compile(r"[A-Za-z]+(?:['’][a-z]+)?")


@dataclass(frozen=True, slots=True)
class _Word:
    lower: str
    stem: str
    capital: bool  # capitalised inside its sentence: a name
    start: int = 0  # character offsets in its text (for the encoder's token vectors)
    end: int = 0


def _align_words(text: str) -> list[_Word]:
    """Content words in order, without stop words, without the words of a number ("twenty", "dozen"),
    which the figures check judges, and without the noun of a compound preposition ("in addition to",
    "on top of"), which relates, not names."""
    numbers = [(n.start, n.end) for n in find_numbers(text)] + [
        (q.start, q.end) for q in find_quantities(text)
    ]
    words = list(_ALIGN_WORD_RE.finditer(text))
    out = []
    for i, match in enumerate(words):
        word = match.group()
        capital = word[:1].isupper() and i > 0
        lower = word.lower()
        if lower in STOP_WORDS or lower in FUNCTION_WORDS or len(lower) < 2:
            continue
        if any(s <= match.start() < e for s, e in numbers):
            continue
        before = words[i - 1].group().lower() if i > 0 else ""
        after = words[i + 1].group().lower() if i + 1 < len(words) else ""
        if before in COMPOUND_PREPOSITION_HEADS and after in COMPOUND_PREPOSITION_TAILS:
            continue
        out.append(_Word(lower, stem(lower), capital, match.start(), match.end()))
    return out


@lru_cache(maxsize=65536)
def _sense_stems(wn: WordNet | None, word: str) -> frozenset[str]:
    """Stems of the one-word synonyms of `word` (none without WordNet)."""
    if wn is None:
        return frozenset()
    return frozenset(stem(w) for w in wn.synonyms(word) if " " not in w and "-" not in w)


@lru_cache(maxsize=65536)
def _antonym_stems(wn: WordNet, word: str) -> frozenset[str]:
    return frozenset(stem(w) for w in wn.antonyms(word) if " " not in w)


@lru_cache(maxsize=65536)
def _phrases(wn: WordNet, word: str) -> tuple[frozenset[str], ...]:
    """The stem sets of the multiword synonyms of `word` ("turn down")."""
    return tuple(
        frozenset(stem(p) for p in w.replace("-", " ").split() if p not in STOP_WORDS)
        for w in wn.synonyms(word)
        if " " in w or "-" in w
    )


def _aligns(
    wn: WordNet, word: _Word, stems: frozenset[str], senses: frozenset[str], initials: frozenset[str]
) -> bool:
    """Whether `word` has a counterpart among `stems` (the other text's stems; `senses`: their synonyms;
    `initials`: the initials of its runs of words, for an acronym: "IdP" / "identity provider")."""
    if word.stem in stems or word.stem in senses or word.lower in initials:
        return True
    if _sense_stems(wn, word.lower) & stems:
        return True
    return any(p and p <= stems for p in _phrases(wn, word.lower))


@dataclass(frozen=True, slots=True)
class _Alignment:
    said: list[_Word]
    source: list[_Word]
    said_aligned: list[bool]
    source_aligned: list[bool]


def _alignment(
    wn: WordNet, sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> _Alignment:
    said, source = _align_words(sentence), _align_words(evidence)
    source_stems = frozenset(w.stem for w in source)
    said_stems = frozenset(w.stem for w in said)
    source_senses = frozenset().union(*(_sense_stems(wn, w.lower) for w in source)) if source else frozenset()
    said_senses = frozenset().union(*(_sense_stems(wn, w.lower) for w in said)) if said else frozenset()
    said_aligned = [_aligns(wn, w, source_stems | context, source_senses, _initials(evidence)) for w in said]
    source_aligned = [_aligns(wn, w, said_stems, said_senses, _initials(sentence)) for w in source]
    _align_by_meaning(options, sentence, said, said_aligned, evidence, source, source_aligned)
    return _Alignment(said, source, said_aligned, source_aligned)


def _align_by_meaning(
    options: CheckOptions,
    sentence: str,
    said: list[_Word],
    said_aligned: list[bool],
    evidence: str,
    source: list[_Word],
    source_aligned: list[bool],
) -> None:
    """Align, in place, the sentence words still unaligned to unaligned span words whose contextual
    vectors are at least `options.min_word_similarity` alike, greedily, most similar pair first, one to
    one. Names are left out (a name for another name is another entity, however alike their vectors)."""
    threshold, meaning = options.min_word_similarity, options.tools.meaning
    if threshold is None or meaning is None or not meaning.available():
        return
    mine = [i for i, w in enumerate(said) if not said_aligned[i] and not w.capital]
    theirs = [j for j, w in enumerate(source) if not source_aligned[j] and not w.capital]
    if not mine or not theirs:
        return
    sims = meaning.word_similarities(
        sentence,
        [(said[i].start, said[i].end) for i in mine],
        evidence,
        [(source[j].start, source[j].end) for j in theirs],
    )
    if sims is None:
        return
    for a, b in _greedy_pairs(sims, threshold):
        said_aligned[mine[a]] = True
        source_aligned[theirs[b]] = True


def _greedy_pairs(sims: Matrix, threshold: float) -> list[tuple[int, int]]:
    """(row, column) pairs of `sims` at least `threshold` alike, most similar first, each row and column
    in one pair at most."""
    rows, columns = sims.shape
    pairs = sorted(((float(sims[a, b]), a, b) for a in range(rows) for b in range(columns)), reverse=True)
    used_a: set[int] = set()
    used_b: set[int] = set()
    out: list[tuple[int, int]] = []
    for sim, a, b in pairs:
        if sim < threshold:
            break
        if a in used_a or b in used_b:
            continue
        used_a.add(a)
        used_b.add(b)
        out.append((a, b))
    return out


MAX_ACRONYM = 6


def _initials(text: str) -> frozenset[str]:
    """The initials of every run of 2 to `MAX_ACRONYM` consecutive words ("bring your own key": "byok")."""
    letters = [w[0].lower() for w in _ALIGN_WORD_RE.findall(text)]
    return frozenset(
        "".join(letters[i : i + k]) for k in range(2, MAX_ACRONYM + 1) for i in range(len(letters) - k + 1)
    )


def _neighbour_stems(
    wn: WordNet, words: list[_Word], aligned: list[bool], at: int, step: int
) -> frozenset[str]:
    """The stem (and synonyms) of the nearest aligned word before (`step` -1) or after (+1) `at`."""
    i = at + step
    while 0 <= i < len(words):
        if aligned[i]:
            return frozenset({words[i].stem}) | _sense_stems(wn, words[i].lower)
        i += step
    return frozenset()


def _same_slot(wn: WordNet, a: _Alignment, i: int, j: int) -> bool:
    """Whether sentence word `i` and span word `j` stand by the same aligned word (the nearest aligned
    word on either side of each): "with approval from finance" / "with your manager's approval"."""
    mine = _neighbour_stems(wn, a.said, a.said_aligned, i, -1)
    mine |= _neighbour_stems(wn, a.said, a.said_aligned, i, 1)
    theirs = _neighbour_stems(wn, a.source, a.source_aligned, j, -1)
    theirs |= _neighbour_stems(wn, a.source, a.source_aligned, j, 1)
    return bool(mine & theirs)


def _aligned_share(
    sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> tuple[float, int]:
    """Share of the sentence's content words aligned to the span (or the title) and how many are not;
    (0.0, 0) without WordNet."""
    wn = options.tools.wordnet
    if wn is None:
        return 0.0, 0
    a = _alignment(wn, sentence, evidence, context, options)
    if not a.said:
        return 0.0, 0
    return sum(a.said_aligned) / len(a.said), len(a.said) - sum(a.said_aligned)


def _substituted(
    sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> tuple[str, str, str] | None:
    """(the sentence's word, the span's word, "antonym" / "name" / "noun") for a word of the sentence that
    takes the place of a word of the span without sharing a sense with it ("the workspace owner is
    notified" / "its creator is notified"); None when every new word is a paraphrase, or without WordNet."""
    wn = options.tools.wordnet
    if wn is None:
        return None
    a = _alignment(wn, sentence, evidence, frozenset(), options)
    dropped = [j for j, ok in enumerate(a.source_aligned) if not ok]
    names = [j for j in dropped if a.source[j].capital]
    for i, word in enumerate(a.said):
        if a.said_aligned[i]:
            continue
        for j in dropped:
            other = a.source[j]
            if other.stem in _antonym_stems(wn, word.lower) or word.stem in _antonym_stems(wn, other.lower):
                return word.lower, other.lower, "antonym"
        if word.capital and word.stem not in context and names:
            return word.lower, a.source[names[0]].lower, "name"  # a name in place of another
        if not _nominal(wn, word) or word.stem in context:
            continue
        for j in dropped:
            if _nominal(wn, a.source[j]) and _same_kind(wn, word, a.source[j]) and _same_slot(wn, a, i, j):
                return word.lower, a.source[j].lower, "noun"
    return None


def _same_kind(wn: WordNet, a: _Word, b: _Word) -> bool:
    """Names stand for names, nouns for nouns: the usual parts of speech of the two words meet."""
    if a.capital or b.capital:
        return True
    mine, theirs = wn.usual_parts_of_speech(a.lower), wn.usual_parts_of_speech(b.lower)
    return not mine or not theirs or bool(mine & theirs)


def _nominal(wn: WordNet, word: _Word) -> bool:
    """A name or a word that can be a noun or an adjective (what names a subject or a role)."""
    if word.capital:
        return True
    kinds = wn.usual_parts_of_speech(word.lower)
    return not kinds or bool(kinds & {"noun", "adj"})


# --- frames: the same predicate with other arguments, or the other polarity (the `parse` extra) ---


def _same_word(wn: WordNet | None, a: str, b: str) -> bool:
    """Same stem, or a WordNet sense shared (the lemmas of two frames' words)."""
    sa, sb = stem(a), stem(b)
    return sa == sb or sb in _sense_stems(wn, a) or sa in _sense_stems(wn, b)


def _in_text(wn: WordNet | None, word: str, stems: frozenset[str]) -> bool:
    return stem(word) in stems or bool(_sense_stems(wn, word) & stems)


def _analyse(parser: Parser | None, text: str) -> Analysis:
    return parser.analyse(text) if parser is not None else EMPTY


def _frame_conflicts(
    parser: Parser | None, wn: WordNet | None, sentence: str, evidence: str, context: frozenset[str]
) -> tuple[tuple[str, str, str], ...]:
    """What each sentence predicate changes against its span counterparts (the same predicate, by lemma
    or WordNet sense), in order, at most one per kind and predicate: ("negation", "negates"/"drops the
    negation of", the predicate) when every counterpart about the same thing has the other polarity;
    ("swap", the sentence's argument, the span's) when an argument's role goes to another word both texts
    name; ("subject", ...) when it goes to a word the span lacks in place of one the sentence lacks;
    ("split", ...) two arguments the span gives to two instances of the predicate; ("narrowed", ...) an
    argument narrowed by another word ("workspace owner" / "organisation owner"). Empty without the
    parser or when the frames agree."""
    said = _analyse(parser, sentence)
    if not said.frames:
        return ()
    source = _analyse(parser, evidence)
    said_stems = frozenset(term_set(sentence))
    source_stems = frozenset(term_set(evidence))
    out: list[tuple[str, str, str]] = []
    for frame in said.frames:
        matching = [f for f in source.frames if _same_word(wn, f.head, frame.head)]
        if not matching:
            continue
        flipped = _polarity_flip(wn, frame, matching)
        if flipped:
            out.append(("negation", flipped, frame.head))
        changed = _role_change(wn, frame, matching, said, source, said_stems, source_stems | context)
        if changed is not None:
            out.append(changed)
        split = _split_pair(wn, frame, matching)
        if split is not None:
            out.append(("split", split[0], split[1]))
        narrowed = _narrowed(wn, frame, matching, said_stems, source_stems)
        if narrowed is not None:
            out.append(("narrowed", narrowed[0], narrowed[1]))
    return tuple(out)


def _shares(wn: WordNet | None, frame: Frame, other: Frame, but: tuple[str, str] | None = None) -> bool:
    """Whether the two frames give one role the same word (`but` aside)."""
    return any(
        r == r2 and _same_word(wn, a, a2) for r, a in frame.args if (r, a) != but for r2, a2 in other.args
    )


def _same_subject(wn: WordNet | None, frame: Frame, other: Frame) -> bool:
    mine, theirs = frame.fillers("subj"), other.fillers("subj")
    return not mine or not theirs or any(_same_word(wn, a, b) for a in mine for b in theirs)


def _has_core(frame: Frame) -> bool:
    return any(r in ("subj", "obj") for r, _ in frame.args)


def _polarity_flip(wn: WordNet | None, frame: Frame, matching: list[Frame]) -> str:
    """ "negates" / "drops the negation of" when every span counterpart about the same thing (sharing an
    argument and the subject; when none does, those whose subject and object are pronouns) has the other
    polarity ("carried-over days do not expire" / "after which they expire"); "" otherwise. A claim
    restricted by "only" is not compared ("only A can X" says that others cannot)."""
    if frame.restricted:
        return ""
    matching = [f for f in matching if not f.restricted]
    related = [f for f in matching if _shares(wn, frame, f) and _same_subject(wn, frame, f)]
    if not related and not _has_core(frame):
        related = [f for f in matching if _same_subject(wn, frame, f)]
    if not related:
        related = [f for f in matching if _same_subject(wn, frame, f) and not _has_core(f)]
    if related and all(f.negated != frame.negated for f in related):
        return "drops the negation of" if related[0].negated else "negates"
    return ""


def _role_change(
    wn: WordNet | None,
    frame: Frame,
    matching: list[Frame],
    said: Analysis,
    source: Analysis,
    said_stems: frozenset[str],
    source_stems: frozenset[str],
) -> tuple[str, str, str] | None:
    """("swap", word, other) when the sentence gives the subject or object of a predicate to a noun that
    the span names in no such role, while the span gives it to a noun the sentence names in no such role
    ("Finance approves the claim" / "Your manager approves the claim ... approval from finance");
    ("subject", word, other) when neither word is in the other text at all."""
    for role in ("subj", "obj"):
        mine = frame.fillers(role)
        if any(_same_word(wn, a, x) for a in mine for f in matching for x in f.fillers(role)):
            continue
        for word in sorted(mine):
            for f in (f for f in matching if _shares(wn, frame, f, (role, word))):
                for other in sorted(f.fillers(role)):
                    moved = other in said.nouns - _in_role(wn, said.frames, frame.head, role)
                    if moved and word in source.nouns - _in_role(wn, source.frames, frame.head, role):
                        return "swap", word, other
                    new = not _in_text(wn, other, said_stems) and not _in_text(wn, word, source_stems)
                    if role == "subj" and new:
                        return "subject", word, other
    return None


def _other_kinds(parser: Parser | None, word: str, sentence: str, other: str, evidence: str) -> bool:
    """Whether the parser tags `word` (in the sentence) and `other` (in the span) as a verb and a word of
    another part of speech ("in a row" / "is disabled"), or both as verbs (verbs are left to paraphrase);
    a noun against an adjective is not told apart (the tagger is unsure of capitalised words)."""
    mine, theirs = _analyse(parser, sentence).kinds_of(word), _analyse(parser, evidence).kinds_of(other)
    if not mine or not theirs:
        return False
    return "verb" in mine | theirs and (not mine & theirs or mine | theirs == {"verb"})


def _in_role(wn: WordNet | None, frames: Sequence[Frame], head: str, role: str) -> frozenset[str]:
    """The words that fill `role` of the predicate `head` (or a synonym) in `frames`."""
    return frozenset(w for f in frames if _same_word(wn, f.head, head) for w in f.fillers(role))


def _split_pair(wn: WordNet | None, frame: Frame, matching: list[Frame]) -> tuple[str, str] | None:
    """Two arguments of one sentence predicate that the span gives to two different instances of it,
    one of which has the other role filled by another word ("downgrades take effect immediately" /
    "upgrades take effect immediately ... downgrades take effect at renewal")."""
    args = sorted(frame.args)
    for i, (r1, a1) in enumerate(args):
        for r2, a2 in args[i + 1 :]:
            if r1 == r2:
                continue
            with_1 = [f for f in matching if any(r == r1 and _same_word(wn, a1, x) for r, x in f.args)]
            with_2 = [f for f in matching if any(r == r2 and _same_word(wn, a2, x) for r, x in f.args)]
            if not with_1 or not with_2 or set(map(id, with_1)) & set(map(id, with_2)):
                continue
            for f in with_2:
                other = sorted(f.fillers(r1))
                if other and r1 != "mod":
                    return a1, other[0]
            for f in with_1:
                other = sorted(f.fillers(r2))
                if other and r2 != "mod":
                    return a2, other[0]
    return None


def _narrowed(
    wn: WordNet | None,
    frame: Frame,
    matching: list[Frame],
    said_stems: frozenset[str],
    source_stems: frozenset[str],
) -> tuple[str, str] | None:
    """(the sentence's modifier, the span's) for an argument both texts give the predicate, narrowed by
    a word the span lacks where the span narrows it by a word the sentence lacks ("workspace owner" /
    "organisation owner", "Free and Team workspaces" / "Team and Business workspaces")."""
    for role, lemma, mine in frame.modifiers:
        for f in matching:
            for r, other, theirs in f.modifiers:
                if r != role or not _same_word(wn, lemma, other):
                    continue
                new = [
                    m
                    for m in mine
                    if not any(_same_word(wn, m, t) for t in theirs) and not _in_text(wn, m, source_stems)
                ]
                lost = [
                    t
                    for t in theirs
                    if not any(_same_word(wn, t, m) for m in mine) and not _in_text(wn, t, said_stems)
                ]
                if new and lost:
                    return sorted(new)[0], sorted(lost)[0]
    return None
