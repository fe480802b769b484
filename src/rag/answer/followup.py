"""The standalone question of a follow-up: what retrieval searches for on a later turn of a conversation.

Offline and general (English function words only, no list of subjects): a follow-up is elliptical when
it opens with a connective ("and", "what about", "how about"), refers back with a pronoun that names
nothing in it ("does it carry over?"), has no content word of its own ("how long?"), or is a bare
phrase with no question frame ("part-time staff?"). An elliptical follow-up keeps the earlier
question's content; a phrase of the follow-up replaces the earlier phrase of the same kind ("part-time
staff" replaces "full-time employees": a shared word part, the same head word, a code-shaped token of
the same shape ("and -E?" replaces "-A"), or, with the local encoder, the closest earlier phrase by
meaning; else the earlier possessor or subject); a bare condition ("and if it fails?") replaces the
earlier condition; of overlapping replacements the longer phrase wins.

An opening remark before a question frame ("Thanks! what about ...", "ok, and does it ...", "Hi!
Different question: what is ...", "unrelated - how does ...": discourse words only, then a comma,
colon, full stop, dash or "!") is left out of the search, on a first question too: it is talk, not
subject.

A follow-up with its own question frame and no reference back is left as it is. A frame opens with a
wh-word or an auxiliary ("what's": a clitic is read off; "whats", typed without it, too), or with a
wh-word after a leading preposition or a clause ended by a comma or colon when a predicate follows
("Above what amount does ...", "If I don't set it, what does ...", "Different question: what is
..."); "that" after a noun is a relative pronoun, which refers to nothing earlier.

Only earlier *questions* are read: an earlier answer is never a source of search terms (nor of
evidence). `follow_up_focus` names the words an elliptical follow-up adds ("premium customers" in "and
for premium customers?"), which the offline reader's answer must say; `lost_words` those of them the
standalone question left out (the offline reader then refuses rather than answer another question).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rag.language.lexicon import QUESTION_FILLERS, STOP_WORDS
from rag.language.meaning import Meaning
from rag.language.text import stem, word_parts

# Openings that hand the earlier question on to the rest ("And part-time staff?", "What about X?").
_CONNECTIVE_RE = re.compile(
    r"^\W*(?:and\s+what\s+about|and\s+how\s+about|what\s+about|how\s+about|what\s+of|and\s+for|"
    r"and\s+also|and|also|or|but|plus|then|same\s+for)\b[\s,]*",
    re.IGNORECASE,
)
# Words of an opening remark: acknowledgements, and words that announce a new or another question
# ("thanks, ...", "ok so: ...", "different question: ...", "one more thing - ...").
_REMARK_WORDS = frozenset(
    """ok okay oh ah right great thanks thank you cheers cool nice good perfect sure yes yeah no nope got
    it understood alright well so now next another different other new unrelated separate question
    topic thing one more last quick also then hmm hi hello hey morning afternoon evening""".split()
)
# At most six words, then the mark that ends the remark; a bounded word class, no nested repetition.
_REMARK_RE = re.compile(r"^\s*((?:[A-Za-z']{1,12}[ \t]+){0,5}[A-Za-z']{1,12})[ \t]*(?:[,:!.]|\s[-–—])\s*")
# Greetings and thanks: a remark of these alone is read off whatever follows ("Hi! I deleted ...").
_GREETINGS = frozenset("hi hello hey thanks thank you cheers ok okay oh ah hmm".split())
# A sentence of thanks or greeting before the question ("Thanks for the help earlier. How ..."), read
# off when a question frame follows it.
_GREETING_SENTENCE_RE = re.compile(
    r"^\s*(?:hi|hello|hey|thanks|thank\s+you|cheers|good\s+(?:morning|afternoon|evening))\b[^.!?\n]{0,80}[.!]\s+",
    re.IGNORECASE,
)
# Thanks after the question ("... in the trash? Thanks in advance."), read off when a mark ends the
# question before it.
_CLOSING_RE = re.compile(
    r"(?<=[?.!,])\s*(?:many\s+)?(?:thanks|thank\s+you|thx|cheers)\b[^.!?\n]{0,60}[.!]*\s*$", re.IGNORECASE
)
# A question of this many words or more typed all in capitals is read in lower case.
_SHOUTED_WORDS = 3
# A remark is read off before these too: a request in the imperative ("Hi, please tell me ...").
_REQUEST_WORDS = frozenset("please tell explain show list describe give".split())
# Remarks read off one after another ("Ok, thanks. Another question: ..."), at most this many.
_MOST_REMARKS = 3
# The first words of a question with a frame of its own (a wh-word or an auxiliary).
_FRAME_WORDS = frozenset(
    """what which who whom whose when where why how is are was were am do does did can could will would
    should shall may might must has have had""".split()
)
# Pronouns that refer back; "it" before "is/'s ADJ to" is a dummy subject ("is it possible to ...").
_REFERRING = frozenset("it its they them their theirs".split())
_DEMONSTRATIVES = frozenset("this that these those".split())
# Words standing in for a phrase said earlier ("it", "that", "the deleted *ones*"): never a word of
# the follow-up's own.
_PRO_FORMS = _REFERRING | _DEMONSTRATIVES | frozenset({"one", "ones"})
_DUMMY_IT_RE = re.compile(r"\bit(?:\s+is|'s|\s+was)?\s+\w+\s+to\b|\bis\s+it\s+\w+\s+to\b", re.IGNORECASE)
# A clitic on a frame word or pronoun ("what's", "it's", "they're"): the word is read without it.
_CLAUSE_END_RE = re.compile(r"[,:;]")
# Words opening a condition or a time clause ("if something goes wrong", "when it is full").
_SUBORDINATORS = frozenset("if when whenever unless once while".split())
_CLITIC_RE = re.compile(r"['’](?:s|re|ll|d|ve|m)$")
# Wh-words that open a question after a leading preposition ("Above what amount does ...").
_WH_WORDS = frozenset("what which who whom whose when where how".split())
# A word, or a code-shaped token: an option ("-E", "--unified") or a shell variable ("$RANDOM").
_WORD_RE = re.compile(r"(?:(?<![\w-])--?(?=[A-Za-z])|\$)?[A-Za-z0-9]+(?:[-'’][A-Za-z0-9]+)*")
# Contractions typed without their apostrophe ("whats", "isnt"): read as the word they contract.
_BARE_CONTRACTIONS = {
    "whats": "what",
    "thats": "that",
    "whos": "who",
    "hows": "how",
    "wheres": "where",
    "whens": "when",
    "isnt": "is",
    "arent": "are",
    "wasnt": "was",
    "werent": "were",
    "doesnt": "does",
    "dont": "do",
    "didnt": "did",
    "cant": "can",
    "couldnt": "could",
    "wont": "will",
    "wouldnt": "would",
    "shouldnt": "should",
    "hasnt": "has",
    "havent": "have",
    "hadnt": "had",
}
Number = Literal["singular", "plural"]
_SINGULAR = frozenset("it its this that".split())
_PLURAL = frozenset("they them their theirs these those".split())
_PLURAL_RE = re.compile(r"[^su's]s$|[^s]es$")
_DETERMINERS = frozenset("a an the my your our their his her its this that these those each every".split())
# Prepositions and subordinators: after do-support's subject and verb ("does Pillow save *with*",
# "do reminders arrive *before* ..."), one of them shows the run before it ends with the verb.
_PREPOSITIONS = frozenset(
    """with without to for from in into on onto at by of about after before over under through if when
    while unless until""".split()
)
# Relative pronouns: after a noun, they open a clause that restricts it ("the hunks that patch ...").
_RELATIVES = frozenset("that which who whom".split())
_AUXILIARIES = frozenset("do does did can could will would should may might must".split())
_COPULAS = frozenset("is are was were has have had".split())
# Encoder cosine at which an earlier phrase counts as the same kind as a follow-up phrase, and its lead
# over the next closest earlier phrase (set by hand on general word pairs, not on any eval set:
# "contractors" is 0.37 from "full-time employees" and 0.17 from "annual leave").
SAME_KIND_SIMILARITY = 0.3
SAME_KIND_MARGIN = 0.1


@dataclass(frozen=True, slots=True)
class _Word:
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower()

    @property
    def base(self) -> str:
        """The lower-cased word without a clitic ("what's" -> what, "it's" -> it; "whats" -> what)."""
        lower = _CLITIC_RE.sub("", self.lower)
        return _BARE_CONTRACTIONS.get(lower, lower)

    @property
    def content(self) -> bool:
        """Not a function word, nor a question-frame filler ("how *many*", "how *long*")."""
        if self.lower in STOP_WORDS or self.base in STOP_WORDS or stem(self.lower) in QUESTION_FILLERS:
            return False
        return len(self.text) > 1 or self.text.isdigit()


def standalone_question(question: str, earlier: Sequence[str], *, meaning: Meaning | None = None) -> str:
    """`question` made self-contained from the earlier questions of its conversation (oldest first):
    each earlier turn is resolved against the one before it, then `question` against the last. A
    self-contained `question`, or one with no earlier turn, is returned as it is, but for an opening
    remark (`without_remark`: "Hi! ...", "Thanks. Another question: ...")."""
    previous = ""
    for text in earlier:
        previous = resolve(text, previous, meaning=meaning) if previous else without_remark(text)
    return resolve(question, previous, meaning=meaning) if previous else without_remark(question)


def without_remark(question: str) -> str:
    """`question` as searched: without its opening remarks (`_without_opening`) and a closing
    "thanks" after it ("... in the trash? Thanks in advance." -> "... in the trash?"), and in lower
    case when it was typed all in capitals ("HOW LONG DO DELETED PROJECTS STAY IN THE TRASH?": no
    word of it is a constant's name or an acronym then)."""
    if question.isupper() and len(_words(question)) >= _SHOUTED_WORDS:
        question = question.lower()
    opened = _without_opening(question)
    closing = _CLOSING_RE.search(opened)
    if closing is None or len(_words(opened[: closing.start()])) < 2:
        return opened
    return opened[: closing.start()].rstrip(" ,")


def _without_opening(question: str) -> str:
    """`question` without its opening remarks (`_REMARK_WORDS` only, each ended by a comma, colon,
    full stop, "!" or a spaced dash) when a question frame, a connective or a request follows them:
    "Thanks! And part-timers?" -> "And part-timers?", "Ok, thanks. Another question: what is X?" ->
    "what is X?", "Hi, please tell me X" -> "please tell me X"; greetings and thanks alone whatever
    follows ("Hi! I deleted ..."), and a sentence of them before a question frame ("Thanks for the
    help earlier. How ..."). Unchanged otherwise ("In bash, what ..." keeps its phrase; "No, I mean
    X" is not followed by a frame)."""
    rest, greeted = question, question
    for _ in range(_MOST_REMARKS):
        match = _REMARK_RE.match(rest)
        said = match.group(1).lower().split() if match else []
        if match is None or not all(w in _REMARK_WORDS for w in said):
            break
        rest = rest[match.end() :]
        if greeted is not question or all(w in _GREETINGS for w in said):
            greeted = rest  # once a greeting is read off, the remarks after it go too
    sentence = _GREETING_SENTENCE_RE.match(rest)
    if sentence and _opens_question(rest[sentence.end() :]):
        return rest[sentence.end() :]
    if rest is question or len(_words(rest)) < 2:
        return question
    return rest if _opens_question(rest) else greeted


def _opens_question(text: str) -> bool:
    """`text` opens with a question frame, a connective or a request ("please tell me ...")."""
    words = _words(text)
    if len(words) < 2:
        return False
    return (
        words[0].base in _FRAME_WORDS or words[0].lower in _REQUEST_WORDS or bool(_CONNECTIVE_RE.match(text))
    )


def resolve(question: str, previous: str, *, meaning: Meaning | None = None) -> str:
    """One follow-up against the (already standalone) question before it (an opening remark left out:
    `without_remark`)."""
    question = without_remark(question)
    connective = _CONNECTIVE_RE.match(question)
    rest = question[connective.end() :] if connective else question
    words = _words(rest)
    framed = _framed(rest, words)
    refers = _refers_back(rest, words)
    own = _phrases(words)
    complete = framed and own and not refers and not _counts_nothing(words)
    # a connective before a question complete in itself only joins it on ("And how do I cancel my
    # subscription?"): the connective alone does not make it elliptical
    if complete:
        return question
    if not framed and words and words[0].lower in _SUBORDINATORS:
        return _conditioned(previous, rest)
    before = _words(previous)
    # a bare phrase stands in for a constituent of the earlier question (its subject when nothing else
    # is of its kind); a follow-up with its own predicate replaces only a phrase of the same kind
    # (a phrase that refers back itself, "and its capital?", stands beside the earlier one)
    replaced = [_replaced_span(phrase, before, meaning, loose=not framed and not refers) for phrase in own]
    if not framed:
        return _substituted(previous, rest, own, replaced)
    return _with_topic(question, previous, before, replaced, _pronoun_number(words))


def follow_up_focus(question: str, standalone: str) -> tuple[str, ...]:
    """The words a follow-up adds to its conversation (its content words: "enterprise customers" in
    "and for enterprise customers?"), given the standalone question `standalone_question` made of
    it: what its answer must be about. Empty when the follow-up stands alone (its standalone question
    is itself) or adds no word of its own ("does it carry over?" adds "carry"; "how long?" adds
    nothing). An opening remark is not the follow-up's own ("different question: ..." adds nothing
    by "different question")."""
    question = without_remark(question)
    if standalone == question:
        return ()
    connective = _CONNECTIVE_RE.match(question)
    rest = question[connective.end() :] if connective else question
    return tuple(w.text for w in _words(rest) if w.content and w.base not in _PRO_FORMS)


def lost_words(question: str, standalone: str) -> tuple[str, ...]:
    """The follow-up's own words (`follow_up_focus`) that its standalone question does not hold: a
    rewrite that dropped part of what was asked ("what about an interactive shell that's not a login
    one?" searched without "login"), so a passage it finds may answer another question. Empty when
    every one of them is searched for."""
    searched = {stem(w.base) for w in _words(standalone)}  # "patch's" holds "patch"
    return tuple(w for w in follow_up_focus(question, standalone) if stem(_words(w)[0].base) not in searched)


def _conditioned(previous: str, clause: str) -> str:
    """A follow-up that is a bare condition ("and if something goes wrong?") in place of the earlier
    question's condition ("... give *when the files are different*?"), or after it when it has none."""
    fragment = _bare(clause)
    for word in _words(previous)[1:]:
        if word.lower in _SUBORDINATORS:
            end = _CLAUSE_END_RE.search(previous, word.end)
            tail = previous[end.start() :] if end else ""
            return f"{previous[: word.start]}{fragment}{_bare(tail) if tail else ''}?"
    return f"{_bare(previous)} {fragment}?"


def _framed(text: str, words: list[_Word]) -> bool:
    """The follow-up opens with a question frame of its own: a wh-word or an auxiliary first (a
    clitic read off: "what's"), or a wh-word after a leading preposition or a leading clause ended by a
    comma or a colon ("Above what amount does ...", "If I don't set it, what does ... use?",
    "Different question: what is ...") when an auxiliary or copula follows it or is contracted onto it
    ("..., whats that default to"; a predicate: "since which version?" has none, and stays a bare
    phrase)."""
    if not words:
        return False
    if words[0].base in _FRAME_WORDS:
        return True
    starts = [1] if words[0].lower in STOP_WORDS else []
    starts += [
        i for i, w in enumerate(words) if i > 0 and _CLAUSE_END_RE.search(text[words[i - 1].end : w.start])
    ][:1]
    for i in starts:
        if i < len(words) and words[i].base in _WH_WORDS:
            later = words[i + 1 :]
            if words[i].base != words[i].lower or any(
                w.base in _AUXILIARIES or w.base in _COPULAS for w in later
            ):
                return True
    return False


def _words(text: str) -> list[_Word]:
    return [_Word(m.group(), m.start(), m.end()) for m in _WORD_RE.finditer(text)]


def _counts_nothing(words: list[_Word]) -> bool:
    """A "how many / how much" frame whose counted noun is left out ("and how many do contractors
    get?"): the thing counted is the earlier question's."""
    return (
        len(words) > 2
        and words[0].lower == "how"
        and words[1].lower in ("many", "much")
        and words[2].lower in _AUXILIARIES | {"is", "are", "was", "were", "has", "have"}
    )


def _has_antecedent(words: list[_Word], i: int) -> bool:
    """The pronoun at `i` refers to a noun phrase before it in the same question that agrees with it
    in number ("what happens to my files when they expire?"), not back to an earlier turn."""
    number: Number = "plural" if words[i].base in _PLURAL else "singular"
    before = [w for w in words[:i] if w.base not in _FRAME_WORDS]
    if number == "plural" and any(w.content and _number_of([w]) == "plural" for w in before[1:]):
        return True  # a plural noun before a plural pronoun needs no determiner ("keep backups ... they")
    for j, word in enumerate(before):
        if j > 0 and before[j - 1].lower in _DETERMINERS - _DEMONSTRATIVES and word.content:
            run = [w for w in before[j:] if w.content][:3]
            if _number_of(run[:1] if number == "singular" else run) == number:
                return True
    return False


def _refers_back(text: str, words: list[_Word]) -> bool:
    """A referring pronoun with no antecedent in the question, or a demonstrative standing alone
    ("does that apply"), not a dummy "it"."""
    if _DUMMY_IT_RE.search(text):
        words = [w for w in words if w.lower != "it"]
    for i, word in enumerate(words):
        if word.base in _REFERRING and not _has_antecedent(words, i):
            return True
        if word.base == "that" and i > 0 and words[i - 1].content and not _object_pronoun(words, i):
            continue  # "that" after a noun opens a relative clause ("the changes that don't overlap")
        if _such_reference(words, i):
            return True
        if word.base in _DEMONSTRATIVES:
            following = words[i + 1] if i + 1 < len(words) else None
            if following is None or not following.content or (i == 1 and words[0].base in _FRAME_WORDS):
                return True
    return False


def _object_pronoun(words: list[_Word], i: int) -> bool:
    """The "that" at `i` ends its clause (the question ends, or a preposition follows it: "the flag
    to change *that* in sdiff"): a pronoun standing for something said earlier, not a relative
    pronoun, which a clause follows ("the changes that *don't overlap*", "the file that *I* edit")."""
    return i + 1 == len(words) or words[i + 1].lower in _PREPOSITIONS


def _such_reference(words: list[_Word], i: int) -> bool:
    """ "such" before a noun phrase of the question ("such a patch", "such files") refers back to what
    an earlier turn described; "such as" (examples) and "such a ... as" (a comparison) do not."""
    if words[i].lower != "such" or i + 1 == len(words):
        return False
    following = words[i + 1]
    if not (following.content or following.lower in ("a", "an")):
        return False
    return all(w.lower != "as" for w in words[i + 1 : i + 4])


def _phrases(words: list[_Word]) -> list[list[_Word]]:
    """Runs of adjacent content words (a question's noun phrases, with the odd verb among them)."""
    runs: list[list[_Word]] = []
    current: list[_Word] = []
    for word in words:
        if word.content:
            current.append(word)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs


def _replaced_span(
    phrase: list[_Word], before: list[_Word], meaning: Meaning | None, *, loose: bool
) -> tuple[int, int] | None:
    """The character span of the earlier phrase that `phrase` replaces, None when none is of its kind.

    The same kind: a word shares a stem or a compound part with an earlier content word (the earlier
    phrase's words around it, as far as `phrase` reaches on each side, are replaced with it), else
    only for a bare phrase (`loose`; a follow-up with a predicate of its own would be compared verb to
    noun): the earlier phrase closest in meaning, when the encoder finds one at SAME_KIND_SIMILARITY,
    else (a phrase with a word of letters) the earlier question's subject where do-support marks it."""
    runs = _phrases(before)
    for i, word in enumerate(phrase):
        for run in runs:
            for j, other in enumerate(run):
                if word_parts(word.text) & word_parts(other.text):
                    head = i == len(phrase) - 1
                    first = 0 if head else max(0, j - i)
                    last = min(len(run) - 1, j + (len(phrase) - 1 - i))
                    return run[first].start, run[last].end
    shaped = _same_shape(phrase, runs)
    if shaped is not None or not loose:
        return shaped
    found = _closest_by_meaning(phrase, runs, meaning)
    if found is None and any(w.text[0].isalpha() for w in phrase):
        return _possessor_span(before) or _subject_span(before)
    return found


def _shape(word: _Word) -> str:
    """The shape of a code-like token: an option ("-E", "--unified"), a variable ("$RANDOM"), a
    constant written in capitals ("HISTSIZE", "PS4"); "" for a word."""
    if word.text.startswith("-"):
        return "option"
    if word.text.startswith("$"):
        return "variable"
    if len(word.text) > 1 and word.text.isupper():
        return "constant"
    return ""


def _same_shape(phrase: list[_Word], runs: list[list[_Word]]) -> tuple[int, int] | None:
    """The one earlier token of the shape of a one-token phrase ("and -E?" after "what does diff3 -A
    do?": -A); None when the phrase has no shape, or no single earlier token shares it."""
    if len(phrase) != 1 or not _shape(phrase[0]):
        return None
    same = [w for run in runs for w in run if _shape(w) == _shape(phrase[0])]
    return (same[0].start, same[0].end) if len(same) == 1 else None


def _possessor_span(words: list[_Word]) -> tuple[int, int] | None:
    """The possessor of the earlier question ("what does *diff3*'s exit code 1 mean?"): the entity
    whose attribute is asked, which a bare phrase stands in for ("what about patch?")."""
    for word in words:
        if re.search(r"['’]s$", word.lower) and word.base not in _FRAME_WORDS | _PRO_FORMS and word.content:
            return word.start, word.end - 2
    return None


def _subject_span(words: list[_Word]) -> tuple[int, int] | None:
    """The subject of a do-support question ("how many days ... do *full-time employees* get?"): the
    content words right after a non-initial auxiliary, when a word follows them (the main verb)."""
    for i, word in enumerate(words):
        if i == 0 or word.lower not in _AUXILIARIES:
            continue
        subject: list[_Word] = []
        for other in words[i + 1 :]:
            if not other.content:
                if not subject and other.lower in _DETERMINERS:
                    continue
                break
            subject.append(other)
        after = words.index(subject[-1]) + 1 if subject else len(words)
        if after < len(words) and words[after].lower in _PREPOSITIONS and len(subject) > 1:
            subject.pop()  # "does Pillow save with ...": the run's last word is the main verb
        if subject and after < len(words):
            return subject[0].start, subject[-1].end
    return None


def _closest_by_meaning(
    phrase: list[_Word], runs: list[list[_Word]], meaning: Meaning | None
) -> tuple[int, int] | None:
    if meaning is None or not meaning.available() or not runs:
        return None
    scores = meaning.similarities(
        " ".join(w.text for w in phrase), [" ".join(w.text for w in r) for r in runs]
    )
    if scores is None:
        return None
    ranked = sorted(zip((float(x) for x in scores), runs, strict=True), key=lambda p: -p[0])
    best, run = ranked[0]
    second = ranked[1][0] if len(ranked) > 1 else 0.0
    if best < SAME_KIND_SIMILARITY or best - second < SAME_KIND_MARGIN:
        return None
    return run[0].start, run[-1].end


def _substituted(
    previous: str, rest: str, own: list[list[_Word]], replaced: list[tuple[int, int] | None]
) -> str:
    """A bare follow-up phrase put into the earlier question: in place of the phrase of its kind, or
    after the earlier question when none is (the follow-up's words kept as they are)."""
    fragment = rest.strip().rstrip("?.!").strip()
    spans = [(span, phrase) for span, phrase in zip(replaced, own, strict=True) if span is not None]
    if not spans:
        return f"{_bare(previous)}, {fragment}?" if fragment else previous
    # the longest phrase first; a span overlapping one already taken is left ("interactive shell"
    # replaces "login shell"; "login" then has nothing left of its own to replace)
    taken: list[tuple[tuple[int, int], list[_Word]]] = []
    for span, phrase in sorted(spans, key=lambda s: -len(s[1])):
        if all(span[1] <= other[0] or span[0] >= other[1] for other, _ in taken):
            taken.append((span, phrase))
    out = previous
    for (start, end), phrase in sorted(taken, key=lambda s: s[0][0], reverse=True):
        out = out[:start] + " ".join(w.text for w in phrase) + out[end:]
    return out


def _with_topic(
    question: str,
    previous: str,
    before: list[_Word],
    replaced: list[tuple[int, int] | None],
    number: Number | None,
) -> str:
    """A framed follow-up that refers back ("does it carry over?"): the earlier question's phrases,
    without those the follow-up replaces and its question frame, added in parentheses; a pronoun of a
    grammatical number (`number`: "it" singular, "they" plural) keeps the phrases that agree with it,
    when any does ("does *it* carry over" after "how many days of annual leave do full-time employees
    get": annual leave)."""
    gone = [span for span in replaced if span is not None]
    runs = [
        [w for w in run if not any(start <= w.start < end for start, end in gone)]
        for run in _phrases(_without_final_verb(previous, before))
    ]
    runs = [run for run in runs if run]
    subject = _subject_span(before)
    agreeing = _with_relative_clause(_agreeing(runs, number, subject), runs, before, subject)
    kept = [w.text for run in (agreeing or runs) for w in run]
    if not kept:
        return question
    return f"{_bare(question)} ({' '.join(kept)})?"


def _agreeing(
    runs: list[list[_Word]], number: Number | None, subject: tuple[int, int] | None
) -> list[list[_Word]]:
    """The earlier phrases a pronoun of `number` can refer to. When an agreeing phrase is fronted
    before do-support's subject (the asked thing: "how many days of annual leave does an employee
    get?"), the phrases other than the subject (who asks about it); with none fronted, the subject is
    the topic too ("what does pipefail do in bash?" -> pipefail, bash)."""
    if number is None:
        return []
    agreeing = [run for run in runs if _number_of(run) == number]
    if subject is not None and any(run[0].start < subject[0] for run in agreeing):
        return [run for run in agreeing if run[0].start != subject[0]]
    return agreeing


def _with_relative_clause(
    agreeing: list[list[_Word]],
    runs: list[list[_Word]],
    before: list[_Word],
    subject: tuple[int, int] | None,
) -> list[list[_Word]]:
    """The agreeing phrases with the relative clause that follows one of them, which restricts what
    the pronoun refers to ("them" after "where do the hunks *that patch couldn't apply* end up?" is
    the hunks patch could not apply, not every hunk): the later phrases to the question's end, but
    for do-support's subject, which `_agreeing` left out (who asks, not what is asked about)."""
    starts = {w.start: i for i, w in enumerate(before)}
    for run in agreeing:
        after = starts.get(run[-1].start, len(before)) + 1
        if after < len(before) and before[after].lower in _RELATIVES and not _object_pronoun(before, after):
            clause = [
                r
                for r in runs
                if r[0].start > before[after].start
                and r not in agreeing
                and (subject is None or r[0].start != subject[0])
            ]
            return [*agreeing, *clause]
    return agreeing


def _pronoun_number(words: list[_Word]) -> Number | None:
    """The grammatical number of the first pronoun referring back; None when there is none, or when it
    is a demonstrative before a noun of its own ("that limit": the noun, not the earlier question's
    number, says what it refers to, so every earlier phrase is kept)."""
    for i, word in enumerate(words):
        if word.base in _DEMONSTRATIVES and i + 1 < len(words) and words[i + 1].content:
            return None
        if _such_reference(words, i):
            return None  # "such a patch": the noun, as after a demonstrative, says what it refers to
        if word.base in _SINGULAR:
            return "singular"
        if word.base in _PLURAL:
            return "plural"
    return None


def _number_of(run: list[_Word]) -> Number:
    """A phrase is plural when a word of it has a regular plural ending ("projects", "employees")."""
    plural = any(_PLURAL_RE.search(w.lower) for w in run)
    return "plural" if plural else "singular"


def _without_final_verb(previous: str, words: list[_Word]) -> list[_Word]:
    """The earlier question's words without its main verb when do-support puts it last ("how many days
    do full-time employees get?"): the verb belongs to the earlier question's frame, not its subject."""
    aux = [i for i, w in enumerate(words) if i > 0 and w.lower in _AUXILIARIES]
    if not aux or not previous.rstrip().endswith("?"):
        return words
    subject = words[aux[-1] + 1 : -1]
    if subject and all(w.content for w in subject):
        return words[:-1]
    return words


def _bare(text: str) -> str:
    return text.strip().rstrip("?.!").strip()
