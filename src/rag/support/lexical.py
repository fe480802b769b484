"""The lexical rules: what the words and clauses of a sentence change against its span, without
WordNet or the parser. A capitalised name the span lacks (`new_name`), a scope word it lacks
(`new_scope`), a pair of opposites reversed (`opposite`), a clause restated with the other polarity
(`negation_flip`), two terms that trade places (`swapped`).
"""

from __future__ import annotations

import re

from rag.language.lexicon import (
    BOUND_BEFORE_RE,
    DEFINITION_RE,
    EXCLUSIVE_RE,
    ONLY_BEFORE_FIGURE_RE,
    ONLY_CONDITION_RE,
    ONLY_PAIRED_RE,
    OPPOSITES,
    SCOPE_EQUIVALENTS_ONLY,
    SCOPE_GROUPS,
)
from rag.language.numbers import Number, find_numbers
from rag.language.text import STOP_WORDS, english_frequency, stem, term_set, terms

__all__ = ["negation_flip", "new_name", "new_scope", "only_restated", "opposite", "swapped"]

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
# Prefixes that negate the word they start ("unavoidable", "non-refundable" once hyphens are gone).
_NEGATIVE_PREFIXES = ("un", "non")
MIN_CLAUSE_TERMS = 3
# How many content terms after a negation cue make up what it negates.
CUE_SCOPE = 3
# How many terms either side count as a term's neighbours when looking for swapped roles.
SWAP_REACH = 2

_SCOPE_WORDS = frozenset().union(*SCOPE_GROUPS) - SCOPE_EQUIVALENTS_ONLY
# Quantifiers that say a claim holds for each instance of a noun, and how many words after one may
# hold the noun it quantifies ("every full-time employee").
_DISTRIBUTIVE = frozenset({"each", "every", "all"})
_QUANTIFIED_REACH = 3
# Words before a plural that restrict it to some of its instances ("some absences", "the two files").
_RESTRICTING = frozenset(
    """the this that these those some certain most many few several such its their our your his her my
    other both either a an one two three four five six seven eight nine ten of""".split()
)
# Words after a plural that restrict it: a relative clause or a qualifying phrase ("fields of type text").
_RESTRICTING_AFTER = frozenset("that which who whom whose where of with".split())
_NAME_RE = re.compile(r"(?<=[\s(\"'“‘/])[A-Z][A-Za-z]+")
_PLAIN_WORD_RE = re.compile(r"[A-Za-z]+")
# Any word in any alphabet ("Gelöschte", "übertragenen"), for telling the language a sentence is in.
_ANY_WORD_RE = re.compile(r"[^\W\d_]+")
# A sentence is in another language than English when it has at least `FOREIGN_MIN_WORDS` words and
# looks foreign both ways: under `FOREIGN_MAX_FUNCTION_SHARE` of them English function words (English
# prose has about 40 %, a terse list item 7-10 %) and under `FOREIGN_MAX_KNOWN_SHARE` of them words of
# general English (`english_frequency` at least `FOREIGN_KNOWN_FREQUENCY`; English lists of product names
# and acronyms reach 60 %, German replies 22-50 %), measured on the realistic replies and the support set.
FOREIGN_MIN_WORDS = 5
FOREIGN_MAX_FUNCTION_SHARE = 0.15
FOREIGN_MAX_KNOWN_SHARE = 0.55
FOREIGN_KNOWN_FREQUENCY = 1e-6
_NUMBER_GLUE_RE = re.compile(r"\d{1,3}(?:,\d{3})+|\d{1,2}:\d{2}|\d{4}-\d{2}-\d{2}")
_ONLY_RE = re.compile(r"(?<![\w-])only(?![\w-])", re.IGNORECASE)

# A clause: its content terms and how many negation cues it has.
_Clause = tuple[frozenset[str], int]


def foreign(text: str) -> bool:
    """Whether `text` is written in another language than English (see `FOREIGN_MAX_FUNCTION_SHARE`):
    the word rules here read English words, and read nothing true in another language."""
    words = [w.lower() for w in _ANY_WORD_RE.findall(text)]
    if len(words) < FOREIGN_MIN_WORDS:
        return False
    function = sum(w in STOP_WORDS for w in words) / len(words)
    known = sum(english_frequency(w) >= FOREIGN_KNOWN_FREQUENCY for w in words) / len(words)
    return function < FOREIGN_MAX_FUNCTION_SHARE and known < FOREIGN_MAX_KNOWN_SHARE


def new_name(sentence: str, known: frozenset[str]) -> str:
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


def opposite(sentence: str, evidence: str) -> tuple[str, str] | None:
    """(what the sentence says, what the span says) for a pair of opposites the sentence reverses."""
    said, source = f" {' '.join(_words(sentence))} ", f" {' '.join(_words(evidence))} "
    for a, b in OPPOSITES:
        for x, y in ((a, b), (b, a)):
            if f" {x} " in said and f" {y} " in source and f" {x} " not in source and f" {y} " not in said:
                return x, y
    return None


def _words(text: str) -> list[str]:
    return [w.lower() for w in _PLAIN_WORD_RE.findall(text)]


def new_scope(sentence: str, evidence: str) -> str:
    """A scope word of the sentence that neither the span nor an equivalent in it has; "" if none.
    A distributive quantifier ("each", "every", "all") restates a span that already speaks of every
    instance of its noun: "per N" or an unrestricted plural ("10 days per calendar year" -> "each
    calendar year", "on Sundays" -> "every Sunday", "for absences longer than" -> "every absence ...");
    a trailing "each" ("100 MB each") restates any "per" of the span."""
    said_words = _words(sentence)
    said = set(said_words)
    source_words = _words(evidence)
    source = set(source_words)
    for word in sorted(said & _SCOPE_WORDS):
        if word in source or (word == "only" and only_restated(sentence, evidence)):
            continue
        if any(word in group and group & source for group in SCOPE_GROUPS):
            continue
        if word in _DISTRIBUTIVE and _distributive_in_span(said_words, word, source_words):
            continue
        return str(word)
    return ""


def only_restated(sentence: str, evidence: str) -> bool:
    """Whether every "only" of the sentence restates its span instead of adding a claim: the span says
    itself that the thing is exclusive or limited ("just", "no other", "limited to", "a single"), or this
    "only" stands before a figure the span bounds ("up to 5 guests" / "only 5 guests"), or before the
    condition of a definition the span states by its condition ("counts as successful when C" / "only
    counts as successful when C": a criterion is all the conditions there are). Anywhere else, "only" says
    that nothing else holds, which the span does not say ("Admins can export" / "Only admins can export")."""
    found = list(_ONLY_RE.finditer(sentence))
    if not found or EXCLUSIVE_RE.search(evidence):
        return bool(found)
    bounded = {n.value for n in find_numbers(evidence) if BOUND_BEFORE_RE.search(evidence, 0, n.start)}
    defines = DEFINITION_RE.search(evidence) is not None
    figures = find_numbers(sentence)
    for match in found:
        if _limited_figure(sentence, match.start(), figures) in bounded:
            continue
        if defines and ONLY_CONDITION_RE.match(sentence, match.start()):
            continue
        return False
    return True


def _limited_figure(sentence: str, at: int, figures: list[Number]) -> float | None:
    """The value of the figure the "only" at `at` stands before ("only 5", "can only have five"); else
    None."""
    after = next((n for n in figures if n.start > at), None)
    if after is None or not ONLY_BEFORE_FIGURE_RE.fullmatch(sentence, at, after.start):
        return None
    return after.value


def _distributive_in_span(said: list[str], word: str, source: list[str]) -> bool:
    """Whether the span already speaks of every instance of what `word` quantifies in the sentence: the
    noun after each of its uses stands in the span after "per" or as an unrestricted plural (no
    determiner or number before it); a quantifier with no content word after it needs a "per"."""
    for i, w in enumerate(said):
        if w != word:
            continue
        after = [x for x in said[i + 1 : i + 1 + _QUANTIFIED_REACH] if x not in STOP_WORDS]
        if not after:
            if "per" not in source:
                return False
            continue
        if not _stated_for_all([stem(x) for x in after], source):
            return False
    return True


def _stated_for_all(phrase: list[str], source: list[str]) -> bool:
    """Whether the span has the quantified phrase (`phrase`: stems, its first word where the span's
    phrase starts) after "per" or a distributive word, or unrestricted (no determiner or number before
    it) with a plural in its words ("to workspace admins" for "all workspace admins")."""
    for j, w in enumerate(source):
        if stem(w) != phrase[0]:
            continue
        before = source[j - 1] if j else ""
        if before == "per" or before in _DISTRIBUTIVE:
            return True
        if before in _RESTRICTING:
            continue  # "6% of requests", "the two files": some of them
        if _bare_plural(phrase, source, j):
            return True  # every instance, generically
    return False


def _bare_plural(phrase: list[str], source: list[str], at: int) -> bool:
    """Whether the span's words from `at` hold a plural of the phrase not restricted by what follows it
    (a relative clause or a qualifying phrase: "messages that mention a key", "fields of type text")."""
    for k in range(at, min(at + len(phrase), len(source))):
        word = source[k]
        if word.endswith("s") and word != stem(word) and stem(word) in phrase:
            after = source[k + 1] if k + 1 < len(source) else ""
            return after not in _RESTRICTING_AFTER
    return False


def _clauses(
    text: str, free: frozenset[str] = frozenset(), other: frozenset[str] | None = None
) -> list[_Clause]:
    """(content terms, negation cues) per clause with at least one content term; cue words in `free`
    are not counted, nor, when `other` (the other text's terms) is given, a "without" whose phrase the
    other text leaves out altogether ("... per year without a doctor's note" / "... per year")."""
    out = []
    for part in _CLAUSE_RE.split(_BOUND_RE.sub("at most", text)):
        found = _content(part)
        if found:
            cues = [m for m in _NEGATION_RE.finditer(part) if m.group().lower() not in free]
            out.append((found, sum(1 for m in cues if other is None or _counted(part, m, other))))
    return out


def _counted(clause: str, cue: re.Match[str], other: frozenset[str]) -> bool:
    """Whether a cue is compared: "without" negates only the phrase after it ("without a doctor's
    note"), so a text that leaves that phrase out says nothing of it; every other cue negates its clause."""
    return cue.group().lower() != "without" or _scope_named(clause, cue.end(), other)


def _scope_named(clause: str, after: int, other: frozenset[str]) -> bool:
    """Whether the other text names a term of what the cue ending at `after` negates: the first
    `CUE_SCOPE` content terms after it in its clause (a cue with none after it negates what precedes)."""
    scope = [t for t in terms(clause[after:]) if not _NEGATION_RE.fullmatch(t)][:CUE_SCOPE]
    return not scope or bool(set(scope) & other)


def _content(clause: str) -> frozenset[str]:
    """A clause's content terms, without its negation cues ("nothing" negates; it names nothing)."""
    cues = term_set(" ".join(_NEGATION_RE.findall(clause)))
    return frozenset(term_set(clause) - cues)


def _free_cues(text: str) -> frozenset[str]:
    """The negation cues of the clauses with no content term of their own ("if you do nothing"): the
    other text may say the same in a clause that holds more words, so they are not compared."""
    return frozenset(
        c.lower()
        for part in _CLAUSE_RE.split(_BOUND_RE.sub("at most", text))
        if not _content(part)
        for c in _NEGATION_RE.findall(part)
    )


def negation_flip(sentence: str, evidence: str) -> str:
    """ "negates" / "drops the negation of" when a sentence clause and the span clause it restates
    (sharing most of its terms) differ in polarity ("is not recorded" / "is recorded"); "" otherwise.
    A cue the other text states in a clause of no content terms is not counted ("if you do nothing,
    ..." / "if you do nothing at the end of the trial, ...")."""
    free = _free_cues(sentence) | _free_cues(evidence) | _restated_cues(sentence, evidence)
    # a "without" phrase of the span the sentence leaves out is an omission; one the sentence adds is not
    said, source = _clauses(sentence, free), _clauses(evidence, free, term_set(sentence))
    for terms_e, cues_e in source:
        if _flips((terms_e, cues_e), said, source):
            return "negates" if cues_e % 2 == 0 else "drops the negation of"
    return ""


def _restated_cues(sentence: str, evidence: str) -> frozenset[str]:
    """ "only" when each of the sentence's restates the span (`only_restated`) and the span has no word
    the rule pairs it with (`ONLY_PAIRED_RE`): it is then not compared as a negation. Where the span
    says "cannot X unless Y", "only X if Y" restates it through that very negation."""
    if ONLY_PAIRED_RE.search(evidence) or not only_restated(sentence, evidence):
        return frozenset()
    return frozenset({"only"})


def _restates(found: frozenset[str], other: frozenset[str]) -> bool:
    """Whether a clause with the terms `found` restates one with the terms `other`."""
    shared = len(found & other)
    return shared >= 2 and shared >= MIN_CLAUSE_SHARE * len(found)


def _flips(clause: _Clause, said: list[_Clause], source: list[_Clause]) -> bool:
    """Whether the sentence's clauses (`said`) restate the span clause `clause` with the other polarity,
    and none of them says what another clause of the span (`source`) says."""
    terms_e, cues_e = clause
    if len(terms_e) < MIN_CLAUSE_TERMS:
        return False
    restating = [(found, cues) for found, cues in said if _restates(found, terms_e)]
    covered = frozenset().union(*(found for found, _ in restating)) & terms_e
    if len(covered) < MIN_CLAUSE_SHARE * len(terms_e):
        return False  # the sentence does not restate this clause of the span (a partial answer)
    if _same_polarity(restating, cues_e):
        return False
    if any(_negative_affix(found, terms_e) or _negative_affix(terms_e, found) for found, _ in restating):
        return False  # "can't be avoided" restates "is unavoidable": the prefix is the span's negation
    # each restating clause of the sentence may still say what another clause of the span says
    return not all(_said_elsewhere(found, cues, source) for found, cues in restating)


def _negative_affix(plain: frozenset[str], prefixed: frozenset[str]) -> bool:
    """Whether a term of `prefixed` is a term of `plain` with a negative prefix ("unavoid" / "avoid",
    "nonrefund" / "refund"): the word carries the negation a cue carries in the other text."""
    return any(t.startswith(p) and t[len(p) :] in plain for t in prefixed for p in _NEGATIVE_PREFIXES)


def _same_polarity(restating: list[_Clause], cues: int) -> bool:
    """Whether the restating clauses together, or any one of them, have the polarity of `cues`."""
    return sum(c for _, c in restating) % 2 == cues % 2 or any(c % 2 == cues % 2 for _, c in restating)


def _said_elsewhere(found: frozenset[str], cues: int, source: list[_Clause]) -> bool:
    return any(_restates(found, t) and cues % 2 == ce % 2 for t, ce in source)


def swapped(sentence: str, evidence: str) -> tuple[str, str] | None:
    """Two terms that trade places: each in both texts once, and each sits, in the sentence, next to a
    term that sits next to the other one in the span ("$75 for domestic, $110 for international" /
    "$110 for domestic, $75 for international"); None when there are none."""
    said, source = _figure_terms(sentence), _figure_terms(evidence)
    once = [t for t in dict.fromkeys(said) if said.count(t) == 1 and source.count(t) == 1]
    if len(once) < 4:
        return None
    named = _anchors(sentence) | _anchors(evidence)
    for reach, anchors in ((SWAP_REACH, [t for t in once if t in named]), (1, once)):
        found = _swap_within(said, source, once, anchors, reach)
        if found is not None:
            return found
    return None


def _swap_within(
    said: list[str], source: list[str], once: list[str], anchors: list[str], reach: int
) -> tuple[str, str] | None:
    """The first pair of `anchors` that trade their neighbours within `reach` terms (neighbours among
    `once`, the terms in each text once); None when no pair does."""
    near_said = _near(said, once, reach)
    near_source = _near(source, once, reach)
    for i, a in enumerate(anchors):
        for b in anchors[i + 1 :]:
            if _trade(a, b, near_said, near_source, reach):
                return a, b
    return None


def _near(seq: list[str], once: list[str], reach: int) -> dict[str, set[str]]:
    """Each term of `once` -> its neighbours in `seq` (within `reach`) that are also in `once`."""
    return {t: _neighbours(seq, seq.index(t), reach) & set(once) for t in once}


def _trade(
    a: str, b: str, near_said: dict[str, set[str]], near_source: dict[str, set[str]], reach: int
) -> bool:
    """Whether `a` and `b`, apart in the span, each sit in the sentence by a neighbour the other has there."""
    if a in near_source[b] or b in near_source[a]:
        return False
    a_takes = (near_said[a] & near_source[b]) - near_source[a] - {a, b}
    b_takes = (near_said[b] & near_source[a]) - near_source[b] - {a, b}
    # names and values may keep a neighbour; other words must have traded all of theirs
    kept = reach == 1 and bool(near_said[a] & near_source[a] or near_said[b] & near_source[b])
    return bool(a_takes and b_takes and not kept)


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
