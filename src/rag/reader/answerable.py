"""Whether a sentence answers the question: the rules the offline reader applies to each reading.

A sentence may answer at all only when it is no pointer elsewhere, no words to an assistant, not the
question's words back, of the asked kind where a kind is required, and a field line only for its
field (`answer_worthy`). It answers when it covers enough of the question's weight with its context
(`eligible`, MIN_COVERAGE) and is bound to the asked subject: its local context covers the topic
(MIN_BINDING, MIN_TOPIC_COUNT), its figure is about the measured noun, it names the asked
identifiers and no other subject, and the value it states belongs to the asked subject
(`rag.reader.binding`). Matched by meaning, it must also state what the question lacks
(`tells_something`); written word for word under documents of different subjects, it answers for
none (`shared_across_subjects`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from functools import lru_cache

from rag.language.injection import is_addressed
from rag.language.lexicon import (
    ANSWER_TYPE_TERMS,
    BY_DEFAULT_RE,
    BYTE_AMOUNT_RE,
    COUNTED_RE,
    FIGURE_RE,
    INLINE_CODE_RE,
    NUMBER_OF_RE,
    OPTION_RE,
    PRONOUN_RE,
    QUESTION_FILLERS,
    SEE_ALSO_RE,
    SIZE_NOUNS,
    WORD_TOKEN_RE,
)
from rag.language.text import normalise, stem, term_set, terms
from rag.reader.answer_types import states_default
from rag.reader.binding import bound_values, named_things, names_only_asked
from rag.reader.defaults import default_mentions
from rag.reader.definition import describes
from rag.reader.procedure import asks_procedure, gives_procedure
from rag.reader.prose import Prose, prose
from rag.reader.question import EPS, Ask, share, written_figures
from rag.reader.words import (
    CODE_LITERAL_RE,
    block_key,
    code_literals,
    identifiers,
    proper_names,
    sentence_key,
    sentence_terms,
    spelled,
)
from rag.types import Block

# A sentence is used only when it (with its label, block title and section) covers at least this
# share of the question's IDF mass (IDF over the issued blocks, so a term no block contains weighs
# most). Tuned on the golden set: 0.4 answers more and refuses fewer near misses; 0.55+ refuses more.
MIN_COVERAGE = 0.5
# Subject binding: the sentence with its own label (heading, title line or term directly above it),
# its field entry and, for a typed or pronoun-led sentence, its neighbours, must cover this share of
# the question's topic mass (the terms that do not name the answer's kind). The document title counts
# (it names the whole document's subject); the section path above the label does not. 0.55 refuses
# correct golden answers (correctness 0.89 -> 0.84) without gaining precision on the dev set.
MIN_BINDING = 0.5
# ... and name at least this share of the topic terms, counted, not weighted. 0.34 and 0.5 refuse
# the same wrong answers on the held-out sets and no right one on any set.
MIN_TOPIC_COUNT = 0.5
# A field line whose value has at least this many terms is a labelled paragraph ("**Answer:** ..."):
# its label does not restrict what it answers.
MIN_PROSE_VALUE_TERMS = 6
# A question label (an FAQ heading) binds its sentences only when this share of its own terms are
# question terms (see `label_restates`).
MIN_LABEL_PRECISION = 0.5
# A sentence matched by meaning may state the asked value as a figure at most this many words after
# the noun a "what <noun> ...?" question asks for (see `_figure_after_noun`).
NOUN_REACH = 3
# a reST role that points elsewhere (":ref:`combine <cmd_combine>`"): a link, not a named thing
_POINTER_ROLE_RE = re.compile(r":(?:ref|doc|numref|any|download):`")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reading:
    """One sentence of one block, with the question terms each part of its context covers."""

    sentence: Prose
    pos: int
    own: frozenset[str]
    label: frozenset[str]
    entry: frozenset[str]
    near: frozenset[str]
    title: frozenset[str]
    broad: frozenset[str]
    fit: float
    names_missing: bool
    before: str = ""
    # the covered question terms its block and context never write, covered by paraphrase only
    via: frozenset[str] = frozenset()


def answer_worthy(ask: Ask, p: Prose, fit: float) -> bool:
    """Whether a sentence may answer at all: not a pointer or words to an assistant, not a lead-in
    to what follows it, not the question's words back, a means where a "how do I ...?" asks for
    one (`procedure.gives_procedure`), about X where "What does X do?" asks (`definition.describes`),
    of the asked kind when a kind is required, a field line only for its field."""
    if _never_an_answer(p.text):
        return False  # a pointer elsewhere or words to an assistant: never an answer on its own
    if leads_in(p.text) and not (ask.required and fit >= 1.0):
        return False  # "... can result in seven exit codes:" introduces what states the answer
    if term_set(p.text) <= ask.asked:
        return False  # it only repeats the question's words ("Worker types."): nothing is stated
    if asks_procedure(ask.question) and not gives_procedure(p.text, ask.question):
        return False  # "How can I ...?": a description of what happens gives no means
    if not describes(ask.question, p):
        return False  # "What does X do?": a sentence whose subject is not X says what else does
    return _of_asked_kind(ask, p, fit) and _answers_for_its_field(ask, p)


def _of_asked_kind(ask: Ask, p: Prose, fit: float) -> bool:
    """The sentence states the kind of fact a typed question requires, the name in code a "which
    option ...?" question asks for, and the noun a "what <noun> ...?" question asks for."""
    if ask.required and fit <= 0.0:
        return False  # no fact of the asked-for kind: at most a neighbour of the answer
    if ask.kind == "code" and fit < 1.0:
        return False  # "which option ...": only a sentence naming one answers
    # "What error does ...": a sentence naming no error and no name in code
    return not ask.noun or _names_asked_noun(ask, p)


def _answers_for_its_field(ask: Ask, p: Prose) -> bool:
    """A field line answers only for its field, and a stated default is no answer to a limit; an
    option line under an entry named in code (":default: 8" under ".. confval:: max_size") only for
    that entry (under a heading in words, ":Default: 300" is the heading's field list)."""
    if p.field and not ask.required and not term_set(p.field) & ask.weights.keys() and not _labelled_prose(p):
        return False  # a field line answers only for its field ("Command line: ..." for a flag)
    if p.field and OPTION_RE.match(p.text) and identifiers(p.label) and not _entry_asked(ask, p.label):
        return False  # ":default: utf-8" under doctest_encoding says nothing of the doctest flags
    # "Default: 4094" states a default: no answer to "the largest value accepted"; it is the value in
    # force, though, for "how many seconds does it wait before giving up"
    return not (p.field and not ask.default and states_default(p.field) and ask.typed & ANSWER_TYPE_TERMS)


def _entry_asked(ask: Ask, label: str) -> bool:
    """The question names the entry `label` ("linkcheck_timeout"), or writes every part of its name:
    an option line states nothing but a value, so its entry's name is all there is to bind it."""
    named = term_set(label)
    whole = {t for t in named if len(named) > 1 and all(t != u and u in t for u in named - {t})}
    return bool(named) and (bool(whole & ask.weights.keys()) or named - whole <= ask.weights.keys())


def _labelled_prose(p: Prose) -> bool:
    """A "field" whose value is a whole sentence ("**Answer:** You can use the ``purge`` command to
    ..."): a paragraph with a lead-in label, not a field's value."""
    value = p.text.split(":", 1)[1] if ":" in p.text else ""
    return len(sentence_terms(value)) >= MIN_PROSE_VALUE_TERMS


def _names_asked_noun(ask: Ask, p: Prose) -> bool:
    """The sentence (or its label or field) names the noun a "what <noun> ...?" question asks for, or
    states a figure or names in code something the question does not."""
    if ask.noun in term_set(f"{p.text} {p.label} {p.field}"):
        return True
    said = {w.lower() for w in WORD_TOKEN_RE.findall(ask.question)}
    if any(FIGURE_RE.search(w) and w.lower() not in said for w in WORD_TOKEN_RE.findall(p.text)):
        return True
    named = code_literals(p.text) | identifiers(p.text)
    return bool(named - code_literals(ask.question) - identifiers(ask.question))


def leads_in(sentence: str) -> bool:
    """A sentence ending in a colon introduces a list, table or code that follows it: by itself it
    states nothing ("The following options are available:") unless it states the asked kind of
    value itself ("As of version 2.1, it ships two packages:" for "since which version ...?"; see
    `answer_worthy`). A field line ("Default: 4") ends in its value, not in its colon."""
    return sentence.rstrip().rstrip("*_").endswith(":")


# A callable's signature as API references print it: a dotted name, its parameters in brackets, and
# at most a return type ("jinja-filters.indent(s: str, width: int = 4) → str", "Queue.get(block=True)").
_SIGNATURE_RE = re.compile(r"^[\w.:-]+\((?:[^()]|\([^()]*\))*\)(?:\s*(?:→|->)\s*[\w\[\]., |]+)?\.?$")


@lru_cache(maxsize=50_000)
def _never_an_answer(sentence: str) -> bool:
    """A pointer elsewhere ("See the documentation of X for details."), text addressing an assistant,
    or an API signature on its own ("filters.indent(s: str, width: int = 4) → str"): it names the
    parameters, it states nothing."""
    return bool(SEE_ALSO_RE.search(sentence) or _SIGNATURE_RE.match(sentence)) or is_addressed(sentence)


def names_figures(ask: Ask, context: str) -> bool:
    """Every figure the asking sentence writes is written in `context` (the sentence with its label,
    entry, the sentence before it and its block's title and section), as itself or as a release
    within it ("5.7.0" for "5.7"): "version 3 ... in 2003" is not "3.2.7", nor is a signature's
    "= 4" about "3**3**3"."""
    if not ask.figures:
        return True
    written = written_figures(context)
    return all(f in written or any(w.startswith(f"{f}.") for w in written) for f in ask.figures)


def label_restates(ask: Ask, label: str) -> bool:
    """A label that is a question (an FAQ entry's heading) binds its sentences to the asked subject
    only when at least half of its own terms are question terms: under "How can I raise the file
    descriptor limit?" a sentence answers that question, not "how do I change the number of workers".
    (A sentence carrying the asked kind of value is bound by its value's subject instead.)"""
    if not label.endswith("?"):
        return True
    own = term_set(label) - QUESTION_FILLERS
    return not own or len(own & ask.weights.keys()) / len(own) >= MIN_LABEL_PRECISION - EPS


def carries_kind(ask: Ask, r: Reading) -> bool:
    """The sentence states the asked kind of answer: a figure, date or default where one is asked, or
    a name in code for "which option / variable ..."; a question asking no kind, or whether
    something holds ("Can staff claim ...?"), never qualifies."""
    if ask.yes_no:
        return False  # "Can I ...?" asks whether all of it holds: no kind of answer shows that
    if states_default(r.sentence.text) and not ask.default:
        return False  # a default is not the asked limit or amount
    return r.fit >= 1.0 and (ask.required or ask.kind == "code")


def eligible(ask: Ask, r: Reading, variants: Sequence[tuple[Ask, bool]], min_coverage: float) -> bool:
    """Eligible on the question's weights, or on one of its `variants` (see `question.variants`); a
    variant marked True serves only a sentence that carries the asked kind of answer."""
    if _eligible_on(ask, r, min_coverage):
        return True
    return any(
        _eligible_on(variant, r, min_coverage)
        and (not _situation_discounted(ask, variant) or _says_situation(ask, r))
        for variant, kind_only in variants
        if not kind_only or carries_kind(ask, r)
    )


def _situation_discounted(ask: Ask, variant: Ask) -> bool:
    """`variant` weighs the words of the situation stated before the asking sentence down."""
    return bool(ask.stated) and ask.stated <= variant.uncounted


def _says_situation(ask: Ask, r: Reading) -> bool:
    """The sentence, its label, field entry or neighbours say a word of the asker's situation:
    discounting the situation lets a sentence answer the asking words alone ("If I rename a column,
    what does autogenerate produce?": what autogenerate produces), but one that says nothing of the
    situation answers them for another one. The block's title and section do not count: they name
    what the whole page is about ("Calling Tasks"), not the case the asker is in."""
    return bool((r.own | r.label | r.entry | r.near) & ask.stated)


def _eligible_on(ask: Ask, r: Reading, min_coverage: float) -> bool:
    if not _value_bound(ask, r):
        return False  # the asked kind of value is there, stated about something else
    if named_entry(ask, r):
        # the asked identifier names the subject exactly; the sentence states the asked fact
        return _counts_the_measured(ask, r) and not _other_subject(ask, r)
    covered = r.own | r.label | r.entry | r.near | r.broad
    if share(ask.weights, covered, ask.total, r.via) < min_coverage - EPS:
        return False
    return _bound(ask, r)


def _bound(ask: Ask, r: Reading) -> bool:
    """The sentence is about the asked subject (see the generator's doc): every binding check holds."""
    return (
        _covers_topic(ask, r)
        and _counts_the_measured(ask, r)
        and _names_asked_identifiers(ask, r)
        and not _other_subject(ask, r)
    )


def _value_bound(ask: Ask, r: Reading) -> bool:
    """Where an amount, duration, date or default is asked, some value of that kind in the sentence
    is stated about the asked subject (`rag.reader.binding`): for a question naming identifiers, the
    subject of the value's clause (inherited from the clause before, the sentence referred back to,
    or the label above) is one of them; otherwise the value's clause names nothing the question does
    not (``attr.ib``'s *metadata* argument is not "an attribute"). A field line is its entry's
    (see `_field_of_other`)."""
    p = r.sentence
    if not ask.required or r.fit <= 0.0 or p.field:
        return True
    positions = _value_positions(ask, p.text)
    if ask.bound_ids:
        return bound_values(
            p.text, positions, lambda names: _is_asked_id(ask, names), before=r.before, label=p.label
        )
    return bound_values(
        p.text,
        positions,
        lambda names: names_only_asked(names, ask.asked),
        names=named_things,
        inherit=False,
    )


def _value_positions(ask: Ask, text: str) -> list[tuple[int, bool]]:
    """Where the sentence states the asked kind of value, each with whether the names before it in
    its clause are for certain its subject: a default statement for a default question ("X defaults
    to V", "the default is V": certain; "X is V by default", "named ``V`` by default": the name may
    be the value), else the figures the question does not already contain (certain). Only the
    mentions of a default that state a value count (`defaults.default_mentions`)."""
    if ask.default:
        return [(at, not BY_DEFAULT_RE.search(text, 0, at)) for at in default_mentions(text, ask.question)]
    said = {w.lower() for w in WORD_TOKEN_RE.findall(ask.question)}
    return [
        (m.start(), True)
        for m in WORD_TOKEN_RE.finditer(text)
        if FIGURE_RE.search(m.group(0)) and m.group(0).lower() not in said
    ]


def _is_asked_id(ask: Ask, names: frozenset[str]) -> bool:
    """True when one of `names` is an asked identifier, or its last dotted part (``max_retries`` for
    `Task.max_retries`), or an asked one is its last part."""
    return any(n == i or i.endswith(f".{n}") or n.endswith(f".{i}") for n in names for i in ask.bound_ids)


def named_entry(ask: Ask, r: Reading) -> bool:
    """An amount, duration, date or default is asked about identifiers the question names, and the
    sentence states one in the entry of exactly those identifiers: it names them (or the sentence it
    refers back to does), or it sits under their entry's name (".. py:data:: NAME", a definition
    term, a heading) and names no other identifier itself. Other question words are then paraphrase
    ("turned on by default"), not another subject."""
    if not ask.bound_ids or not ask.required or r.fit < 1.0:
        return False
    p = r.sentence
    if states_default(p.text) and not ask.default:
        return False  # a default is not the asked limit or duration: the usual rules decide
    own = f"{r.before} {p.text}"
    if _field_of_other(ask, p):
        return False
    if identifiers(own) - ask.identifiers and not _names_all(own, ask.bound_ids):
        return False
    return _names_all(own, ask.bound_ids) or _names_all(p.label, ask.bound_ids)


def _covers_topic(ask: Ask, r: Reading) -> bool:
    """Its local context covers MIN_BINDING of the topic mass and MIN_TOPIC_COUNT of the topic terms,
    and it names something asked itself
    unless it is a field line, leans on a neighbour, or stands under a question heading."""
    local = _local_context(ask, r)
    return (
        _binds_topic_mass(ask, r, local)
        and _names_topic_terms(ask, r, local)
        and _names_the_condition(ask, r)
        and _names_something_asked(ask, r)
    )


def _local_context(ask: Ask, r: Reading) -> frozenset[str]:
    """The question terms of the sentence, its label, field entry, neighbours and document title."""
    local = r.own | r.label | r.entry | r.near | r.title
    if carries_kind(ask, r):
        # a value of the asked kind, bound to its clause's subject, may lean on the whole section
        # path for its topic: "Default is INFO." under "Init-script: celeryd > Available options"
        local |= r.broad
    return local


def _binds_topic_mass(ask: Ask, r: Reading, local: frozenset[str]) -> bool:
    """`local` covers MIN_BINDING of the topic mass, and the subject by its own words (see
    `_subject_in_own_words`) where paraphrase covers some of it."""
    if (
        ask.topic_total > 0
        and share(ask.weights, local - ask.typed, ask.topic_total, r.via) < MIN_BINDING - EPS
    ):
        return False
    return not r.via or _subject_in_own_words(ask, local - r.via)


def _names_topic_terms(ask: Ask, r: Reading, local: frozenset[str]) -> bool:
    """`local` names MIN_TOPIC_COUNT of the topic terms, and for a yes/no question more than that,
    the heaviest of them by its own word."""
    # and names at least MIN_TOPIC_COUNT of the topic terms, however little each weighs: the words
    # every retrieved block shares weigh almost nothing, yet they are the topic itself
    topic = (ask.weights.keys() - ask.typed - ask.uncounted) or (ask.weights.keys() - ask.typed)
    named = len(local & topic) / len(topic) if topic else 1.0
    if named < MIN_TOPIC_COUNT - EPS:
        return False
    # "Is X a good idea?" asks whether all of it holds: more than half must be named, and the
    # rarest of its terms, by its own word ("Does the library charge fines ...": a late charge
    # is not a fine, nor is a penalty a paraphrase certain enough for a yes)
    return not (
        ask.yes_no and (named <= MIN_TOPIC_COUNT + EPS or not (local - r.via) & _heaviest(ask, topic))
    )


def _names_the_condition(ask: Ask, r: Reading) -> bool:
    """A question with a trailing condition is answered by a sentence carrying the asked kind, or
    one whose context names the circumstance."""
    # "What happens ... once I graduate?": a sentence that never names the circumstance
    return not (
        ask.condition
        and not carries_kind(ask, r)
        and not ask.condition & (r.own | r.label | r.entry | r.near)
    )


def _names_something_asked(ask: Ask, r: Reading) -> bool:
    """The sentence names a topic term itself, or is a field line, stands under a question heading
    that names one, or leans on a neighbour that does."""
    p = r.sentence
    return bool(r.own - ask.typed) or bool(p.field) or bool(r.label and p.label.endswith("?")) or bool(r.near)


def _subject_in_own_words(ask: Ask, exact: Set[str]) -> bool:
    """Paraphrase covers what is said about the subject, never the subject itself: of the topic
    words the blocks do write, the `exact` context must cover MIN_BINDING of the mass by the words
    themselves ("How long until cuttings are thrown away?" is not answered by "Seedlings ... are
    discarded")."""
    written = ask.weights.keys() - ask.aligned.keys() - ask.typed
    total = sum(ask.weights[t] for t in written)
    return total <= 0 or share(ask.weights, exact & written, total) >= MIN_BINDING - EPS


def _heaviest(ask: Ask, topic: Set[str]) -> frozenset[str]:
    """The topic terms of the greatest weight (all of them when several tie)."""
    if not topic:
        return frozenset()
    top = max(ask.weights[t] for t in topic)
    return frozenset(t for t in topic if ask.weights[t] >= top - EPS)


def _counts_the_measured(ask: Ask, r: Reading) -> bool:
    """For "how many / how much <noun>", its figure is about that noun (an amount of bytes is about
    space, memory or storage)."""
    if not ask.measured or ask.measured & _measured_context(ask, r):
        return True
    return bool(ask.measured & SIZE_NOUNS) and BYTE_AMOUNT_RE.search(r.sentence.text) is not None


def _names_asked_identifiers(ask: Ask, r: Reading) -> bool:
    """It (or its label or field entry) names every asked identifier, and names no other identifier
    without an asked one: otherwise it states the fact for another option, setting or function."""
    if not ask.identifiers:
        return True
    p = r.sentence
    if _field_of_other(ask, p):
        return False
    # a pronoun-led sentence is about what the sentence before it names
    text = f"{r.before} {p.text}" if r.before else p.text
    if identifiers(text) - ask.identifiers and not any(
        _names_all(text, frozenset({i})) for i in ask.identifiers
    ):
        return False
    # a field line under an entry's name ("Default: 1" under ".. py:data:: MAX_SIZE") is about that
    # name, not about the other settings its description mentions
    entry = p.entry if p.field and not identifiers(p.label) else ""
    return _names_all(f"{text} {p.label} {entry}", ask.bound_ids)


def _field_of_other(ask: Ask, p: Prose) -> bool:
    """A field line or table row is about its field ("`max_size`: Default `10`; ..."): a field
    naming identifiers, none of them asked, makes it another entry's line, whatever it mentions."""
    in_field = identifiers(p.field) | code_literals(p.field)
    return bool(in_field) and not in_field & ask.identifiers


def _other_subject(ask: Ask, r: Reading) -> bool:
    """The block never mentions a name the question mentions, and the sentence (or its field entry)
    names another, or it is a field line stating its own entry's setting: another subject's fact
    ("Business" for "Team", "Earth" for "Saturn")."""
    if not r.names_missing:
        return False
    p = r.sentence
    return bool(p.field) or bool(
        proper_names(f"{p.text} {p.entry if p.field else ''}") - ask.weights.keys() - ask.names
    )


def _names_all(text: str, wanted: frozenset[str]) -> bool:
    """True when `text` names every identifier in `wanted`, as code or (when it has several parts)
    spelled out in words."""
    words = f" {normalise(text)} "
    named = identifiers(text) | code_literals(text)
    # a one-word identifier ("--workers") spelled as a plain word ("workers") is just that word;
    # as inline code ("an option called ``workers``") it names the identifier
    return all(i in named or ("_" in i and f" {spelled(i)} " in words) for i in wanted)


def _measured_context(ask: Ask, r: Reading) -> frozenset[str]:
    """Where the noun a figure is about may be named: a field line's entry; for a count question the
    words right after a figure ("50 members", "4 of them"); else the sentence, and its neighbours
    when it refers back with a pronoun."""
    p = r.sentence
    if p.field:
        return term_set(f"{p.text} {p.entry}")
    if ask.counts:
        # a count is a figure next to what it counts: "up to 50 members", "at most 4 of them";
        # or, in a sentence referring back ("It is set to 10."), what the sentence before counts
        counted = any(_counts(m.group(1), ask.measured) for m in COUNTED_RE.finditer(p.text))
        counted = counted or bool(ask.measured & term_set(r.before))
        # or the figure's own clause names what it counts: "the number of revoked tasks ... defaults
        # to 50000"
        counted = counted or any(_counts(m.group(1), ask.measured) for m in NUMBER_OF_RE.finditer(p.text))
        return ask.measured if counted else frozenset()
    found = term_set(p.text)
    return found | r.near if PRONOUN_RE.search(p.text) else found


def _counts(following: str, nouns: frozenset[str]) -> bool:
    """True when the words after a figure name the counted noun, or refer back to it."""
    return bool(nouns & set(terms(following))) or bool(PRONOUN_RE.search(following))


def tells_something(ask: Ask, p: Prose, fit: float) -> bool:
    """Closeness in meaning shows a sentence is about the question, not that it answers it: the
    sentence that restates the asker's problem ("individual data files are deleted after combining")
    is the closest of all. So a sentence matched by meaning must state what the question lacks: the
    asked kind of value, or else a name in code the question does not write (a command, option or
    setting; a cross-reference is a pointer, not a name), with the noun a "what <noun> ...?"
    question asks for ("the real id" beside a version number is no asked id). Whether something
    holds ("Can I ...?") is never read from meaning alone."""
    if ask.yes_no:
        return False
    if ask.required:
        # a default is not the asked limit or amount ("It is set to 40 by default." for "the largest")
        return fit >= 1.0 and (ask.default or not states_default(p.text))
    if ask.noun and ask.noun not in term_set(f"{p.text} {p.label} {p.field}"):
        return False
    return bool(_new_code_names(ask, p.text)) or (bool(ask.noun) and _figure_after_noun(ask, p.text))


def _figure_after_noun(ask: Ask, text: str) -> bool:
    """A figure the question does not write follows the asked noun within NOUN_REACH words ("exit
    with a status code of 2" for "what exit code ...?")."""
    said = {w.lower() for w in WORD_TOKEN_RE.findall(ask.question)}
    words = WORD_TOKEN_RE.findall(text)
    for i, word in enumerate(words):
        if stem(word.lower()) != ask.noun:
            continue
        if any(FIGURE_RE.search(w) and w.lower() not in said for w in words[i + 1 : i + 1 + NOUN_REACH]):
            return True
    return False


def _new_code_names(ask: Ask, text: str) -> frozenset[str]:
    """The inline code names of `text` that the question does not write, cross-references left out."""
    asked = ask.literals.replace("-", "_")
    out = set()
    for m in INLINE_CODE_RE.finditer(text):
        if _POINTER_ROLE_RE.match(m.group(0)):
            continue
        name = CODE_LITERAL_RE.sub("", m.group(0)).strip().lower().lstrip("-").replace("-", "_")
        name = name.removesuffix("()")
        if name and name not in asked:
            out.add(name)
    return frozenset(out)


def shared_across_subjects(ask: Ask, key: str, blocks: Sequence[Block], leads: Mapping[int, str]) -> bool:
    """The sentence whose key is `key` is written word for word, under the same label, in documents
    (or sections) about different asked subjects: their titles and sections name different question
    terms ("Releases in the 5.x series are codenamed after ..." under "Preface" on the 5.6 and the 5.7
    page, for "the codename of 5.7"). Boilerplate shared by both says nothing about either one. (A
    field line under two entries, "Default: 1", is two statements: its labels differ.) `leads`: the
    label open where each block starts (see `candidates.leads`)."""
    contexts: dict[str, set[frozenset[str]]] = {}
    for b in blocks:
        if key not in block_key(b.sent_text):
            continue
        place = frozenset(term_set(f"{b.chunk.title} {b.chunk.section}") & ask.weights.keys())
        for p in prose(b.sent_text, b.chunk.section, leads.get(b.n, "")):
            if sentence_key(p.text) == key:
                contexts.setdefault(p.label, set()).add(place)
    return any(len(places) > 1 for places in contexts.values())
