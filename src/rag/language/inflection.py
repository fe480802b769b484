"""Irregular English verbs: the forms of one verb that the Snowball stemmer leaves apart.

"Who wrote R?" and "R was written by ..." share the verb, yet "wrote", "written" and "write" stem
to three different terms, so neither BM25 nor the lexical reranker sees it. `forms(term)` gives the
terms of every form of the verb a term belongs to (itself included), for retrieval to match a
question's verb in any of its forms. The table is the common irregular verbs of English grammars
(base, past, past participle); forms that are as often another word ("found" a company, "left" the
direction, "saw" the tool, "bit" of data, "bound" of a range, "sat" for Saturday, "rose") are left
out, and so are verbs whose base is as often a noun or a name of its own ("lead", "mean", "tear",
"bear", "go") or whose forms are stop words already (be, have, do).
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag.language.text import stem

__all__ = ["IRREGULAR_VERBS", "forms"]

IRREGULAR_VERBS: tuple[tuple[str, ...], ...] = tuple(
    tuple(line.split())
    for line in """
    arise arose arisen
    bite bitten
    awake awoke awoken
    beat beat beaten
    become became
    begin began begun
    bend bent
    bleed bled
    blow blew blown
    break broke broken
    breed bred
    bring brought
    build built
    buy bought
    catch caught
    choose chose chosen
    creep crept
    deal dealt
    dig dug
    draw drew drawn
    drink drank drunk
    drive drove driven
    eat ate eaten
    feed fed
    feel felt
    fight fought
    flee fled
    fly flew flown
    forbid forbade forbidden
    forget forgot forgotten
    forgive forgave forgiven
    freeze froze frozen
    get got gotten
    give gave given
    grow grew grown
    hang hung
    hear heard
    hide hid hidden
    hold held
    keep kept
    know knew known
    lend lent
    lose lost
    make made
    meet met
    pay paid
    ride rode ridden
    rise risen
    ring rang rung
    run ran
    say said
    see seen
    seek sought
    sell sold
    send sent
    shake shook shaken
    shine shone
    shoot shot
    show showed shown
    shrink shrank shrunk
    sing sang sung
    sink sank sunk
    sleep slept
    slide slid
    speak spoke spoken
    spend spent
    spin spun
    stand stood
    steal stole stolen
    stick stuck
    sting stung
    strike struck stricken
    swear swore sworn
    sweep swept
    swim swam swum
    swing swung
    take took taken
    teach taught
    tell told
    think thought
    throw threw thrown
    understand understood
    undertake undertook undertaken
    wake woke woken
    wear wore worn
    weave wove woven
    win won
    withdraw withdrew withdrawn
    write wrote written
    """.strip().splitlines()
)


_VOWELS = frozenset("aeiou")


def _third_person(base: str) -> str:
    """The -s form of a verb as English spells it: "flies", "catches", "writes"."""
    if base.endswith("y") and len(base) > 1 and base[-2] not in _VOWELS:
        return base[:-1] + "ies"
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        return base + "es"
    return base + "s"


def _present_participle(base: str) -> str:
    """The -ing form of a verb as English spells it: "running", "writing", "seeing", "flying".

    A one-syllable base ending consonant-vowel-consonant doubles its last letter ("spin" →
    "spinning"), except after w, x or y ("show" → "showing"); a silent final e is dropped
    ("write" → "writing") but not a doubled one ("see" → "seeing"); "ie" becomes "y" ("lie" →
    "lying"). Longer verbs stressed on the last syllable keep one letter ("begining"): their stem
    is the same either way, which is all retrieval uses."""
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith("ee") and len(base) > 2:
        return base[:-1] + "ing"
    vowel_groups = re.findall(r"[aeiou]+", base)
    if (
        len(base) >= 3
        and len(vowel_groups) == 1
        and base[-1] not in _VOWELS | {"w", "x", "y"}
        and base[-2] in _VOWELS
        and base[-3] not in _VOWELS
    ):
        return base + base[-1] + "ing"
    return base + "ing"


@lru_cache(maxsize=1)
def _groups() -> dict[str, frozenset[str]]:
    """Each form's term -> the terms of all forms of its verb (the base's -s and -ing forms too)."""
    groups: dict[str, frozenset[str]] = {}
    for verb in IRREGULAR_VERBS:
        words = (*verb, _third_person(verb[0]), _present_participle(verb[0]))
        group = frozenset(stem(w) for w in words)
        for term in group:
            groups[term] = groups.get(term, frozenset()) | group
    return groups


def forms(term: str) -> frozenset[str]:
    """The terms (stemmed, as `rag.language.text.terms` gives them) of every form of the irregular verb
    `term` is a form of, `term` itself included; just `term` for any other term."""
    return _groups().get(term, frozenset((term,)))
