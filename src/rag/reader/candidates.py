"""Candidate sentences: each block's sentences read with their context, the eligible ones scored and
ranked, and the meaning pass that tries the sentences closest to the question when none answers on
words.

A reading (`rag.reader.answerable.Reading`) records which question terms a sentence covers by itself,
by its label, field entry, neighbours, the sentence it refers back to, and its block's title and
section. The eligible readings (`answerable.eligible`) become `Candidate`s ranked by coverage, the
asked kind of answer, the label, word order and the block's retrieval score.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from rag.language.lexicon import ANAPHOR_RE, BYTE_AMOUNT_RE, DEFAULT_TERMS, SIZE_NOUNS
from rag.language.meaning import Matrix, Meaning
from rag.language.text import is_proposal, term_set
from rag.reader.answer_types import QUANTITY_KINDS, asks_default_of_kind, price_match, type_match
from rag.reader.answerable import (
    Reading,
    answer_worthy,
    eligible,
    label_restates,
    named_entry,
    names_figures,
    tells_something,
)
from rag.reader.defaults import defaults_another, states_default_value
from rag.reader.prose import Prose, closing_label, prose
from rag.reader.question import Ask, matched, share
from rag.reader.words import (
    heading_terms,
    joined_terms,
    sentence_key,
    sentence_terms,
    without_code,
    without_link_targets,
)
from rag.types import Block

# Title/section terms count this much toward a sentence's rank (fully toward eligibility).
CONTEXT_WEIGHT = 0.5
# How much a figure in the sentence adds to its rank for quantity questions, and how much the
# block's retrieval score (in [0, 1]) adds: both only order eligible sentences, never admit one.
NUMBER_BONUS = 0.6
BLOCK_WEIGHT = 0.3
# Sentences on either side (same block) whose question terms count toward a sentence's eligibility
# and, at CONTEXT_WEIGHT, its rank: "It keeps working until ..." follows the sentence naming "it".
NEIGHBOURS = 1
# Rank added for a label (the heading, title line or term directly above the sentence) that restates
# the question: the question mass it covers beyond the document title, times the share of its own
# terms the question names. 0.35 on the dev and golden sets (0.5+ lets FAQ near-miss headings win).
LABEL_WEIGHT = 0.35
# When the best sentence and one from another block rank closer than this, neither is the answer:
# the generator is unsure and writes nothing (0.02 on the dev set; 0.05+ refuses golden answers).
UNSURE_MARGIN = 0.02
# Rank added for keeping the question's word order: the share of its adjacent term pairs that are
# adjacent in the sentence too ("failed sign-in attempts" over "sign-in attempts failed").
PHRASE_BONUS = 0.2
# A sentence that proposes or plans ("a proposal to raise the fee to $450") ranks this much lower
# than one that states what holds.
PROPOSAL_PENALTY = 0.5
# Meaning (`rag.language.meaning`), tried only when no sentence answers on words: a sentence at least
# MIN_MEANING close to the question (cosine), and within MEANING_MARGIN of the closest, may count the
# question words it does not write as paraphrased; its similarity adds MEANING_WEIGHT times itself
# to its rank.
MIN_MEANING = 0.6
MEANING_MARGIN = 0.1
MEANING_WEIGHT = 1.0
# A sentence chosen on words for a question of no particular kind ("How do I ...?", "What does X
# mean?") whose meaning is this far from the question (cosine) matched its words by coincidence.
MIN_RELATED = 0.25
# Two chunks of one document this close (characters between them) are read as one text: the
# label open at the end of the first is in force where the second starts.
MAX_CHUNK_GAP = 16


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """An eligible sentence, scored: the blocks that write it (`ns`), the question terms it covers
    alone (`own`) and the shares of the question's weight it covers alone and with its context."""

    text: str
    key: str
    ns: tuple[int, ...]
    own: frozenset[str]
    own_coverage: float
    coverage: float
    rank: float
    order: tuple[int, int]
    # the sentence under its label, as the encoder reads it (see `_meaning_text`)
    said: str = ""
    # the question's subject words neither the sentence nor its context says (see `unbound_terms`)
    unbound: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class _Place:
    """What a block's place says: the question terms of its title, and of its title and section; the
    question terms its own words write; whether it never mentions a name the question mentions."""

    title: frozenset[str]
    broad: frozenset[str]
    written: frozenset[str]
    names_missing: bool


def leads(blocks: Sequence[Block]) -> dict[int, str]:
    """For each block that continues another issued block of the same document and section (the
    chunker cut one text in two; a heading between them changes the section), the label open at
    the end of that block: the name of the entry, term or
    heading its first lines belong to."""
    ordered = sorted(blocks, key=lambda b: (b.chunk.doc_id, b.chunk.start_char))
    found: dict[int, str] = {}
    for prev, block in zip(ordered, ordered[1:], strict=False):
        gap = block.chunk.start_char - prev.chunk.end_char
        same_place = (prev.chunk.doc_id, prev.chunk.section) == (block.chunk.doc_id, block.chunk.section)
        if same_place and 0 <= gap <= MAX_CHUNK_GAP:
            lead = closing_label(prev.sent_text, prev.chunk.section, found.get(prev.n, ""))
            if lead:
                found[block.n] = lead
    return found


def readings(ask: Ask, block: Block, lead: str = "") -> Iterator[Reading]:
    """The block's answer-worthy sentences that carry the asked kind of answer, with their context."""
    sentences = prose(block.sent_text, block.chunk.section, lead)
    topic_terms = [_topic_terms(ask, p.text) for p in sentences]
    place = _place(ask, block, lead)
    where = f"{block.chunk.title} {block.chunk.section} {lead}"
    for pos, p in enumerate(sentences):
        fit = _fit(ask, p.text)
        if answer_worthy(ask, p, fit) and names_figures(ask, _context(sentences, pos, where)):
            yield _reading(ask, sentences, topic_terms, pos, fit, place)


def _context(sentences: Sequence[Prose], pos: int, where: str) -> str:
    """Sentence `pos` with its label, field entry, the sentence before it in its unit and `where`
    (its block's title, section and open label)."""
    p = sentences[pos]
    before = sentences[pos - 1].text if pos and sentences[pos - 1].unit == p.unit else ""
    return f"{where} {p.label} {p.entry} {before} {p.text}"


def _place(ask: Ask, block: Block, lead: str) -> _Place:
    chunk = block.chunk
    title = term_set(chunk.title)
    return _Place(
        title=matched(ask, title),
        broad=matched(ask, title | heading_terms(chunk.section)),
        # the question terms the block's own words name: a term covered but never written is paraphrase
        written=joined_terms(chunk.title, chunk.section, lead, block.sent_text) & ask.weights.keys(),
        # the question names a subject (a capitalised name) its block never mentions
        names_missing=bool(ask.names - joined_terms(chunk.title, chunk.section, chunk.text)),
    )


def _reading(
    ask: Ask,
    sentences: Sequence[Prose],
    topic_terms: Sequence[frozenset[str]],
    pos: int,
    fit: float,
    place: _Place,
) -> Reading:
    """Sentence `pos` with the question terms each part of its context covers."""
    p = sentences[pos]
    before = _antecedent(sentences, pos)
    own = _own_terms(ask, p, fit, topic_terms[pos])
    restated = fit >= 1.0 or label_restates(ask, p.label)
    label = matched(ask, heading_terms(p.label)) if restated else frozenset()
    entry = matched(ask, term_set(p.entry)) if p.field else frozenset()
    near = _near_terms(sentences, topic_terms, pos, fit, _topic_terms(ask, before) if before else frozenset())
    return Reading(
        sentence=p,
        pos=pos,
        own=own,
        label=label,
        entry=entry,
        near=near,
        title=place.title,
        broad=place.broad,
        fit=fit,
        names_missing=place.names_missing,
        before=before,
        via=(own | label | entry | near | place.broad) - place.written - ask.typed,
    )


def _own_terms(ask: Ask, p: Prose, fit: float, topic_terms: frozenset[str]) -> frozenset[str]:
    """The question terms the sentence itself covers: its topic terms, and the words naming the kind
    of fact it states."""
    keys = ask.weights.keys()
    # a sentence stating the asked-for kind of fact covers the words naming that kind
    own = topic_terms | (ask.typed if ask.required and fit >= 1.0 else frozenset())
    if ask.kind == "code" and fit >= 1.0:
        own |= ask.code_noun & keys  # "Which command ...": the literal it names is one
    if ask.measured & SIZE_NOUNS and fit >= 1.0 and BYTE_AMOUNT_RE.search(p.text):
        own |= ask.measured & SIZE_NOUNS  # "500 MB" states the asked space or memory
    return own


def _topic_terms(ask: Ask, text: str) -> frozenset[str]:
    """The question terms `text` names outside inline code and link addresses, plus those of code naming
    an asked identifier."""
    return matched(ask, term_set(without_code(without_link_targets(text), ask.identifiers, ask.literals)))


def _fit(ask: Ask, sentence: str) -> float:
    """How well the sentence carries the asked kind of answer, in [0, 1] (see `type_match`); for a
    default question it must state a default's value (`defaults.states_default_value`: "default"
    alone states none), and then counts as typed unless a quantity is asked. A question for a name in
    code that says "default" of another thing ("Which environment variable sets the default line
    length?") asks for the name, not a default: "the limit of `88`, Black's default" does not answer
    it (`answer_types.asks_default_of_kind`: "the default setting" is a value)."""
    fit = type_match(sentence, ask.kind, ask.question)
    if ask.price:
        fit = price_match(sentence, fit)
    if ask.default:
        if ask.kind == "code" and not asks_default_of_kind(ask.question):
            return fit  # "Which variable sets the default width?" asks for the variable's name
        if not states_default_value(sentence, ask.question) or defaults_another(
            sentence, ask.weights.keys() | DEFAULT_TERMS
        ):
            return 0.0
        return fit if ask.kind in QUANTITY_KINDS else 1.0
    return fit


def _near_terms(
    sentences: Sequence[Prose],
    topic_terms: Sequence[frozenset[str]],
    pos: int,
    fit: float,
    antecedent_terms: frozenset[str] = frozenset(),
) -> frozenset[str]:
    """The topic terms of the neighbours in the same paragraph or list item, for a typed or
    pronoun-led sentence (neighbouring items are separate statements), with the topic terms of the
    sentence a pronoun-led one refers back to (`antecedent_terms`); empty otherwise."""
    p = sentences[pos]
    if fit < 1.0 and not ANAPHOR_RE.match(p.text):
        return frozenset()
    around = range(max(0, pos - NEIGHBOURS), min(len(sentences), pos + 1 + NEIGHBOURS))
    near = frozenset().union(*(topic_terms[i] for i in around if i != pos and sentences[i].unit == p.unit))
    return near | antecedent_terms


def _antecedent(sentences: Sequence[Prose], pos: int) -> str:
    """For a sentence that opens by referring back ("It is set to 10 by default."), the sentence
    before it under the same label: the one that names what "it" is. A list item or paragraph that
    opens so ("- It supports Windows.") refers to the last sentence before it that does not (the
    list's lead-in: "Waitress is a pure Python server."). A sentence continuing a field line's item
    refers to that field line. Else ""."""
    p = sentences[pos]
    if pos == 0:
        return ""
    prev = sentences[pos - 1]
    if _continues_field(prev, p):
        return prev.text  # the rest of a field's item (":param size: How many. Defaults to 5.")
    if not ANAPHOR_RE.match(p.text) or prev.label != p.label:
        return ""
    if prev.unit == p.unit:
        return prev.text
    return _lead_in(sentences, pos)


def _continues_field(prev: Prose, p: Prose) -> bool:
    """`p` continues the item of the field line `prev`: same unit and label, no field of its own."""
    return bool(prev.field) and prev.unit == p.unit and prev.label == p.label and not p.field


def _lead_in(sentences: Sequence[Prose], pos: int) -> str:
    """The last sentence before `pos` under its label that does not open by referring back (a list's
    lead-in); "" when another label comes first, or none."""
    label = sentences[pos].label
    for before in reversed(sentences[:pos]):
        if before.label != label:
            return ""
        if not ANAPHOR_RE.match(before.text):
            return before.text
    return ""


def collect(
    ask: Ask,
    read: Sequence[tuple[Block, Reading, float]],
    variants: Sequence[tuple[Ask, bool]],
    min_coverage: float,
) -> dict[str, Candidate]:
    """The eligible readings (`answerable.eligible` at `min_coverage`) as candidates by sentence key,
    each ranked with MEANING_WEIGHT times its similarity added; a sentence in several blocks cites
    them all."""
    found: dict[str, Candidate] = {}
    for block, reading, similarity in read:
        if not eligible(ask, reading, variants, min_coverage):
            continue
        candidate = score(ask, block, reading)
        if similarity:
            candidate = replace(candidate, rank=candidate.rank + MEANING_WEIGHT * similarity)
        prev = found.get(candidate.key)
        if prev is not None:
            # the same sentence in several blocks: cite them all, keep the better-ranked copy
            better = candidate if candidate.rank > prev.rank else prev
            candidate = replace(better, ns=tuple(sorted({*prev.ns, block.n})))
        found[candidate.key] = candidate
    return found


def score(ask: Ask, block: Block, r: Reading) -> Candidate:
    """The reading as a candidate: its coverage shares and its rank."""
    text = r.sentence.text
    covered = r.own | r.label | r.entry | r.near | r.broad
    coverage = share(ask.weights, covered, ask.total, r.via)
    own_coverage = share(ask.weights, r.own, ask.total, r.via)
    # a field line's entry says what it is about: it ranks as the line's own words
    bound_coverage = share(ask.weights, r.own | r.entry, ask.total, r.via)
    return Candidate(
        text=text,
        key=sentence_key(text),
        ns=(block.n,),
        own=r.own,
        own_coverage=own_coverage,
        coverage=coverage,
        rank=bound_coverage
        + CONTEXT_WEIGHT * (coverage - bound_coverage)
        + NUMBER_BONUS * r.fit
        + LABEL_WEIGHT * _label_match(ask, r)
        + PHRASE_BONUS * _phrase_share(ask.pairs, sentence_terms(text))
        + BLOCK_WEIGHT * block.score
        - (PROPOSAL_PENALTY if _proposes(text) else 0.0),
        order=(block.n, r.pos),
        said=_meaning_text(r.sentence, block.chunk.title),
        unbound=unbound_terms(ask, r),
    )


def unbound_terms(ask: Ask, r: Reading) -> frozenset[str]:
    """The question's subject words the reading leaves unsaid: topic terms that neither the sentence,
    its label, field entry, neighbours, nor its block's title and section say (by the word or a
    WordNet neighbour of it), leaving out words general English uses often (`Ask.generic`: "use",
    "include"), the words of a situation the asker describes and of the alternative they set aside
    ("instead of the whole workspace"). A sentence that leaves one unsaid
    may be about another subject that shares the rest of the words ("Free Wi-Fi is available at all
    branches" for "Is there free Wi-Fi on the buses?"): it is shown, never given as the answer. An
    asked identifier's own entry stating the asked kind of value (`answerable.named_entry`) leaves
    nothing unsaid: the identifier names the subject exactly."""
    if named_entry(ask, r):
        return frozenset()
    said = r.own | r.label | r.entry | r.near | r.title | r.broad
    return frozenset(ask.weights.keys() - ask.typed - ask.generic - ask.stated - ask.contrasted - said)


def _label_match(ask: Ask, r: Reading) -> float:
    """How well the sentence's label restates the question: the question mass it adds (beyond the
    sentence and the document title) times the share of the label's own terms that the question names."""
    label_terms = term_set(r.sentence.label)
    if not label_terms:
        return 0.0
    precision = len(label_terms & ask.weights.keys()) / len(label_terms)
    return share(ask.weights, r.label - r.own - r.title, ask.total) * precision


def _phrase_share(pairs: frozenset[tuple[str, str]], terms_in_order: Sequence[str]) -> float:
    """Share of the question's adjacent term pairs that also occur adjacent, in order, in the sentence."""
    if not pairs:
        return 0.0
    return len(pairs & set(zip(terms_in_order, terms_in_order[1:], strict=False))) / len(pairs)


@lru_cache(maxsize=50_000)
def _proposes(sentence: str) -> bool:
    return is_proposal(sentence)


def _meaning_text(p: Prose, title: str) -> str:
    """What the encoder reads of a sentence: its label first, as a reader sees it under its heading,
    or the document's title when it has none ("They stay in the bin for 45 days." in a page titled
    "Invoices" is about invoices)."""
    context = p.label or title
    return f"{context}: {p.text}" if context else p.text


def rank_key(c: Candidate) -> tuple[float, float, tuple[int, int]]:
    """The order candidates are chosen in: rank, then own coverage, then position."""
    return (-c.rank, -c.own_coverage, c.order)


def unsure(ranked: Sequence[Candidate]) -> bool:
    """True when the best sentence and a sentence from another block rank within UNSURE_MARGIN:
    two passages answer equally well, so neither is the answer."""
    if len(ranked) < 2:
        return False
    best = ranked[0]
    return any(
        best.rank - c.rank < UNSURE_MARGIN and not set(c.ns) & set(best.ns) and c.key != best.key
        for c in ranked[1:]
    )


def _similarities(meaning: Meaning | None, question: str, texts: Sequence[str]) -> Matrix | None:
    """The encoder's similarity of each text to the question; None without it."""
    return meaning.similarities(question, texts) if meaning is not None else None


def by_meaning(
    meaning: Meaning | None, ask: Ask, read: Sequence[tuple[Block, Reading]]
) -> list[tuple[Block, Reading, float]]:
    """The readings whose sentence (with its label) is within MEANING_MARGIN of the closest in meaning
    to the question and at least MIN_MEANING close, each with the topic words its context does not
    write counted as covered by paraphrase (`via`: ALIGN_WEIGHT, and never the subject itself, see
    `answerable._subject_in_own_words`); empty without the encoder. The binding rules then decide as
    for words."""
    texts = [_meaning_text(r.sentence, b.chunk.title) for b, r in read]
    sims = _similarities(meaning, ask.question, texts)
    if sims is None or not len(sims):
        return []
    best = float(sims.max())
    if best < MIN_MEANING:
        return []
    topic = ask.weights.keys() - ask.typed
    out = []
    for (block, r), similarity in zip(read, sims.tolist(), strict=True):
        if similarity < MIN_MEANING or similarity < best - MEANING_MARGIN:
            continue
        if not tells_something(ask, r.sentence, r.fit):
            continue
        covered = r.own | r.label | r.entry | r.near | r.broad
        meant = frozenset(topic - covered)
        out.append((block, replace(r, own=r.own | meant, via=r.via | meant), similarity))
    return out


def related(meaning: Meaning | None, ask: Ask, found: dict[str, Candidate]) -> dict[str, Candidate]:
    """`found`, or nothing when the question asks no kind of value and not whether something holds,
    and the best-ranked candidate is less than MIN_RELATED close to it in meaning: a description
    chosen because its words happen to be the question's ("support for measuring processes started
    by the multiprocessing module" for "how do I tell the command to use another config file")
    answers nothing, and the sentences ranked below it on words are no better. A typed answer
    ("Default: 2") says too little for its meaning to be judged; without the encoder `found` stays."""
    if not found or ask.kind or ask.required or ask.yes_no:
        return found
    best = min(found.values(), key=rank_key)
    sims = _similarities(meaning, ask.question, [best.said])
    if sims is None or float(sims[0]) >= MIN_RELATED:
        return found
    return {}


def meanings_tie(meaning: Meaning | None, question: str, found: Mapping[str, Candidate]) -> bool:
    """Two different sentences matched by meaning are within UNSURE_MARGIN of each other in meaning
    (two permits' prices for "the fine for parking without one"): neither is the answer."""
    if len(found) < 2:
        return False
    sims = _similarities(meaning, question, [c.said for c in found.values()])
    if sims is None:
        return False
    top = sorted((float(x) for x in sims), reverse=True)
    return top[0] - top[1] < UNSURE_MARGIN
