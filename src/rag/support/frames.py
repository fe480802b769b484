"""Predicate frames (with the dependency parser, `Tools.parser`): each predicate of the sentence against
the span's instances of the same predicate (by lemma or WordNet sense). `frame_conflicts` names what
changed: the other polarity, a subject or object given to another word (swapped, or one the span lacks),
two arguments the span gives to two instances, an argument narrowed by another word. `other_kinds` is
the parser's veto on an alignment substitution between a verb and a word of another part of speech.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rag.language.quantities import find_quantities
from rag.language.syntax import EMPTY, Analysis, Frame, Parser
from rag.language.text import stem, term_set
from rag.language.wordnet import WordNet
from rag.support.alignment import sense_stems

__all__ = ["frame_conflicts", "other_kinds"]


def frame_conflicts(
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
        changed = _role_change(
            wn, frame, matching, (said, source), sentence, said_stems, source_stems | context
        )
        if changed is not None:
            out.append(changed)
        split = _split_pair(wn, frame, matching)
        if split is not None:
            out.append(("split", split[0], split[1]))
        narrowed = _narrowed(wn, frame, matching, said_stems, source_stems)
        if narrowed is not None:
            out.append(("narrowed", narrowed[0], narrowed[1]))
    return tuple(out)


def other_kinds(parser: Parser | None, word: str, sentence: str, other: str, evidence: str) -> bool:
    """Whether the parser tags `word` (in the sentence) and `other` (in the span) as a verb and a word of
    another part of speech ("in a row" / "is disabled"), or both as verbs (verbs are left to paraphrase);
    a noun against an adjective is not told apart (the tagger is unsure of capitalised words)."""
    mine, theirs = _analyse(parser, sentence).kinds_of(word), _analyse(parser, evidence).kinds_of(other)
    if not mine or not theirs:
        return False
    return "verb" in mine | theirs and (not mine & theirs or mine | theirs == {"verb"})


def _analyse(parser: Parser | None, text: str) -> Analysis:
    return parser.analyse(text) if parser is not None else EMPTY


def _same_word(wn: WordNet | None, a: str, b: str) -> bool:
    """Same stem, or a WordNet sense shared (the lemmas of two frames' words)."""
    sa, sb = stem(a), stem(b)
    return sa == sb or sb in sense_stems(wn, a) or sa in sense_stems(wn, b)


def _in_text(wn: WordNet | None, word: str, stems: frozenset[str]) -> bool:
    return stem(word) in stems or bool(sense_stems(wn, word) & stems)


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


# --- polarity ---


def _polarity_flip(wn: WordNet | None, frame: Frame, matching: list[Frame]) -> str:
    """ "negates" / "drops the negation of" when every span counterpart about the same thing (sharing an
    argument and the subject; when none does, those whose subject and object are pronouns) has the other
    polarity ("carried-over days do not expire" / "after which they expire"); "" otherwise. A claim
    restricted by "only" is not compared ("only A can X" says that others cannot)."""
    if frame.restricted:
        return ""
    related = _related(wn, frame, [f for f in matching if not f.restricted])
    if related and all(f.negated != frame.negated for f in related):
        return "drops the negation of" if related[0].negated else "negates"
    return ""


def _related(wn: WordNet | None, frame: Frame, matching: list[Frame]) -> list[Frame]:
    """The counterparts about the same thing as `frame`: those sharing the subject and an argument; when
    none does, those sharing the subject (for a frame without subject or object), else those sharing the
    subject that have no subject or object."""
    alike = [f for f in matching if _same_subject(wn, frame, f)]
    related = [f for f in alike if _shares(wn, frame, f)]
    if related:
        return related
    if alike and not _has_core(frame):
        return alike
    return [f for f in alike if not _has_core(f)]


# --- roles ---


def _role_change(
    wn: WordNet | None,
    frame: Frame,
    matching: list[Frame],
    analyses: tuple[Analysis, Analysis],
    sentence: str,
    said_stems: frozenset[str],
    source_stems: frozenset[str],
) -> tuple[str, str, str] | None:
    """("swap", word, other) when the sentence gives the subject or object of a predicate to a noun that
    the span names in no such role, while the span gives it to a noun the sentence names in no such role
    ("Finance approves the claim" / "Your manager approves the claim ... approval from finance");
    ("subject", word, other) when neither word is in the other text at all, or when the span has the
    sentence's subject in another role and the sentence lacks the span's; then `_added_filler`."""
    said, source = analyses

    def moved_from(word: str) -> bool:
        """The span has the sentence's subject in another role of the same predicate ("the owner can
        transfer ownership to an admin" / "an admin can transfer ownership")."""
        return any(r != "subj" and _same_word(wn, a, word) for f in matching for r, a in f.args)

    for role in ("subj", "obj"):
        if _role_agrees(wn, frame, matching, role):
            continue
        for word, other in _role_fillers(wn, frame, matching, role):
            moved = other in said.nouns - _in_role(wn, said.frames, frame.head, role)
            if moved and word in source.nouns - _in_role(wn, source.frames, frame.head, role):
                return "swap", word, other
            if role != "subj":
                continue
            if not _in_text(wn, other, said_stems) and not _in_text(wn, word, source_stems):
                return "subject", word, other
            if (
                moved_from(word)
                and not _same_word(wn, word, other)
                and _absent(wn, other, said, said_stems, source_stems)
            ):
                return "subject", word, other
    return _added_filler(wn, frame, matching, said, sentence, source_stems)


def _absent(
    wn: WordNet | None, word: str, said: Analysis, said_stems: frozenset[str], source_stems: frozenset[str]
) -> bool:
    """Whether the sentence lacks `word` (by stem, as a word or a noun's lemma) and every synonym of it
    the span does not write itself (the span's "owner" is not in "transfer ownership", which the span
    also writes)."""
    own = stem(word)
    if own in said_stems or any(stem(n) == own for n in said.nouns):
        return False
    return not (sense_stems(wn, word) - source_stems) & said_stems


def _added_filler(
    wn: WordNet | None,
    frame: Frame,
    matching: list[Frame],
    said: Analysis,
    sentence: str,
    source_stems: frozenset[str],
) -> tuple[str, str, str] | None:
    """("subject", word, other) when the sentence lists one more filler of a role beside the span's own,
    a noun the span does not write at all ("applies to employees and contractors" / "applies to
    employees"): the claim now covers something the span says nothing about."""
    # a quantity's unit is the figure's, not a new thing ("one thousand dollars" / "$1,000")
    units = term_set(" ".join(q.text for q in find_quantities(sentence)))
    for role in sorted({r for r, _ in frame.args}):
        mine = frame.fillers(role)
        if len(mine) < 2:
            continue
        for f in matching:
            theirs = f.fillers(role)
            kept = {w for w in mine if any(_same_word(wn, w, x) for x in theirs)}
            added = [
                w
                for w in sorted(mine - kept)
                if w in said.nouns and not _in_text(wn, w, source_stems) and stem(w) not in units
            ]
            if kept and added:
                return "subject", added[0], sorted(kept)[0]
    return None


def _role_agrees(wn: WordNet | None, frame: Frame, matching: list[Frame], role: str) -> bool:
    """Whether a counterpart gives `role` a word the sentence gives it."""
    mine = frame.fillers(role)
    return any(_same_word(wn, a, x) for a in mine for f in matching for x in f.fillers(role))


def _role_fillers(
    wn: WordNet | None, frame: Frame, matching: list[Frame], role: str
) -> Iterator[tuple[str, str]]:
    """(the sentence's filler of `role`, a counterpart's) for each counterpart sharing another argument
    with the sentence's frame, in sorted order, lazily."""
    for word in sorted(frame.fillers(role)):
        for f in matching:
            if not _shares(wn, frame, f, (role, word)):
                continue
            for other in sorted(f.fillers(role)):
                yield word, other


def _in_role(wn: WordNet | None, frames: Sequence[Frame], head: str, role: str) -> frozenset[str]:
    """The words that fill `role` of the predicate `head` (or a synonym) in `frames`."""
    return frozenset(w for f in frames if _same_word(wn, f.head, head) for w in f.fillers(role))


# --- split pairs ---


def _split_pair(wn: WordNet | None, frame: Frame, matching: list[Frame]) -> tuple[str, str] | None:
    """Two arguments of one sentence predicate that the span gives to two different instances of it,
    one of which has the other role filled by another word ("downgrades take effect immediately" /
    "upgrades take effect immediately ... downgrades take effect at renewal")."""
    args = sorted(frame.args)
    for i, first in enumerate(args):
        for second in args[i + 1 :]:
            found = _split(wn, first, second, matching)
            if found is not None:
                return found
    return None


def _split(
    wn: WordNet | None, first: tuple[str, str], second: tuple[str, str], matching: list[Frame]
) -> tuple[str, str] | None:
    """(the argument, the other word) when the two (role, argument) pairs, of different roles, are given
    to disjoint counterparts, one of which fills the other role (not a modifier) with another word."""
    (r1, a1), (r2, a2) = first, second
    if r1 == r2:
        return None
    with_1, with_2 = _giving(wn, matching, r1, a1), _giving(wn, matching, r2, a2)
    if not with_1 or not with_2 or set(map(id, with_1)) & set(map(id, with_2)):
        return None
    other = _first_filler(with_2, r1)
    if other is not None:
        return a1, other
    other = _first_filler(with_1, r2)
    return None if other is None else (a2, other)


def _giving(wn: WordNet | None, matching: list[Frame], role: str, word: str) -> list[Frame]:
    """The counterparts that give `role` the word `word` (or a synonym)."""
    return [f for f in matching if any(r == role and _same_word(wn, word, x) for r, x in f.args)]


def _first_filler(frames: list[Frame], role: str) -> str | None:
    """The first filler (sorted) of `role` in the first of `frames` that has one; None for a modifier."""
    if role == "mod":
        return None
    for f in frames:
        other = sorted(f.fillers(role))
        if other:
            return other[0]
    return None


# --- narrowing ---


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
    for mine, theirs in _modified_alike(wn, frame, matching):
        new = _unmatched(wn, mine, theirs, source_stems)
        lost = _unmatched(wn, theirs, mine, said_stems)
        if new and lost:
            return sorted(new)[0], sorted(lost)[0]
    return None


def _modified_alike(
    wn: WordNet | None, frame: Frame, matching: list[Frame]
) -> Iterator[tuple[frozenset[str], frozenset[str]]]:
    """(the sentence's modifiers, a counterpart's) of each argument both give the same role, lazily."""
    for role, lemma, mine in frame.modifiers:
        for f in matching:
            for r, other, theirs in f.modifiers:
                if r == role and _same_word(wn, lemma, other):
                    yield mine, theirs


def _unmatched(
    wn: WordNet | None, words: frozenset[str], others: frozenset[str], stems: frozenset[str]
) -> list[str]:
    """The `words` that match none of `others` and are not in the text of `stems`."""
    return [m for m in words if not any(_same_word(wn, m, t) for t in others) and not _in_text(wn, m, stems)]
