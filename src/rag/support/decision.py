"""The support check's decision: what `check.signals` measured, turned into a verdict.

`check.signals` measures one sentence against its cited spans (coverage, each rule's firing, the
alignment's substitutions, the parser's frame conflicts). Two deciders read those signals:
- `rules`: the hand-combined rules, in order: a lead-in naming another document, nothing to verify,
  coverage under the floor, then the first rule that fires (a new name, a new scope word, reversed
  opposites, a negation flip, a substituted word, swapped terms, a frame conflict) withholds;
- a calibrated `rag.calibration.Model` over `vector(signals)` (weights fitted on the support set's dev
  split by `rag.evals.support_fit`, stored in `weights.json`). A lead-in naming another document, a
  sentence with nothing to verify and coverage under the floor stay hard rules; the model keeps the
  sentence when its probability of being faithful reaches its threshold, else the first signal that
  fired names the reason.
A verdict withheld only for low coverage while no rule fired (no contradiction, no other subject,
every figure in its spans) is `undecided`: the rules cannot tell a paraphrase they do not reach, or a
reply in another language than its span, from a claim the span does not make; a small-model judge may
decide it (`rag.support.judge`). Every other verdict is the rules' own.
`decide` is given the model or None (the rules); `active_model` is the model the `RAG_SUPPORT_MODEL`
setting leaves in use: the stored one only when the weights file says it was adopted (`docs/eval.md`),
none with `off`, the stored one even when not adopted with `on`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag.calibration import Model, in_use, load
from rag.types import Issue

WEIGHTS_FILE = Path(__file__).with_name("weights.json")

# Substitutions of the alignment (a sentence word in a span word's place) and frame conflicts, by kind.
SUBSTITUTIONS = ("antonym", "name", "noun")
FRAME_KINDS = ("negation", "swap", "split", "subject", "narrowed")
_CONTRADICTING_FRAMES = frozenset({"negation", "swap", "split"})


@dataclass(frozen=True, slots=True)
class Decision:
    """The support verdict of one sentence against one block's cited spans; `issue` is None when supported.
    `contradicts`: the span says the opposite of the sentence (a negation flip, reversed opposites,
    swapped values), which no other citation can make right. `undecided`: withheld only for low
    coverage, no rule fired and every figure is in the spans (module docstring)."""

    issue: Issue | None
    coverage: float
    core: str
    contradicts: bool = False
    undecided: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Signals:
    """What the check measured of one sentence against its spans (`check.signals`); empty strings and
    None mean that a rule did not fire."""

    core: str  # the sentence as judged (a lead-in naming the cited document set aside)
    lead_in: bool = False  # such a lead-in was set aside
    misattributed: str = ""  # the other source a lead-in names
    empty: bool = False  # no content term to judge
    coverage: float = 0.0  # the larger of the two below
    stem_coverage: float = 0.0  # share of the sentence's terms in the span, its title or section
    aligned_share: float = 0.0  # share of its content words aligned to the span (WordNet)
    span_coverage: float = 0.0  # share of the span's terms the sentence names
    terms: int = 0
    unfound: int = 0  # the sentence's terms neither in the span, its title nor its section
    unaligned: int = 0  # the sentence's content words aligned to no span word (with WordNet; else 0)
    new_name: str = ""
    new_scope: str = ""
    opposite: tuple[str, str] | None = None
    negation_flip: str = ""  # "negates" / "drops the negation of"
    substituted: tuple[str, str, str] | None = None  # (sentence word, span word, kind in SUBSTITUTIONS)
    substitution_vetoed: bool = False  # the parser tagged the two words as different kinds
    swapped: tuple[str, str] | None = None
    frames: tuple[tuple[str, str, str], ...] = ()  # (kind in FRAME_KINDS, sentence's, span's), in order
    missing_figures: int = 0  # figures of the sentence its spans do not state (verify withholds those)
    unstated_figures: int = 0  # those its blocks' titles and dates do not state either
    foreign: bool = False  # the sentence is in another language than its spans (`lexical.foreign`)
    # with the sentence encoder (`Tools.meaning`; else these defaults): the cosine of the sentence's
    # and its spans' sentence vectors, and the lowest best contextual similarity of a sentence word
    # left unaligned by stem and WordNet to any span word (1.0 when every word aligned)
    meaning: float = 0.0
    word_meaning: float = 1.0


FEATURES = (
    "coverage",
    "stem_coverage",
    "aligned_share",
    "span_coverage",
    "low_coverage",
    "lead_in",
    "terms",
    "unfound",
    "unaligned",
    "new_name",
    "new_scope",
    "opposite",
    "negation_flip",
    *(f"substituted_{k}" for k in SUBSTITUTIONS),
    "substitution_vetoed",
    "swapped",
    *(f"frame_{k}" for k in FRAME_KINDS),
    "missing_figures",
    "meaning",
    "word_meaning",
)
MAX_TERMS = 20
MAX_NEW = 5


def vector(s: Signals, *, min_coverage: float) -> list[float]:
    """The signals as numbers, in `FEATURES` order: shares in [0, 1], each rule's firing as 0/1, counts
    scaled to [0, 1] (capped at `MAX_TERMS` terms, `MAX_NEW` unfound or unaligned words)."""
    kinds = {k for k, _, _ in s.frames}
    values = {
        "coverage": s.coverage,
        "stem_coverage": s.stem_coverage,
        "aligned_share": s.aligned_share,
        "span_coverage": s.span_coverage,
        "low_coverage": float(s.coverage < min_coverage),
        "lead_in": float(s.lead_in),
        "terms": min(s.terms, MAX_TERMS) / MAX_TERMS,
        "unfound": min(s.unfound, MAX_NEW) / MAX_NEW,
        "unaligned": min(s.unaligned, MAX_NEW) / MAX_NEW,
        "new_name": float(bool(s.new_name)),
        "new_scope": float(bool(s.new_scope)),
        "opposite": float(s.opposite is not None),
        "negation_flip": float(bool(s.negation_flip)),
        **{
            f"substituted_{k}": float(s.substituted is not None and s.substituted[2] == k)
            for k in SUBSTITUTIONS
        },
        "substitution_vetoed": float(s.substitution_vetoed),
        "swapped": float(s.swapped is not None),
        **{f"frame_{k}": float(k in kinds) for k in FRAME_KINDS},
        "missing_figures": float(s.missing_figures > 0),
        "meaning": s.meaning,
        "word_meaning": s.word_meaning,
    }
    return [values[name] for name in FEATURES]


def _hard(s: Signals, n: int) -> Decision | None:
    """The verdicts no weight changes: a lead-in naming another document, nothing to verify."""
    if s.misattributed:
        issue = Issue(
            "other_subject", f"[{n}] is attributed to {s.misattributed!r}, not to the cited document"
        )
        return Decision(issue, 0.0, s.core)
    if s.empty:
        return Decision(Issue("nothing_to_verify", "nothing substantive to verify"), 0.0, s.core)
    return None


def _reasons(s: Signals, n: int) -> list[tuple[Issue, bool]]:
    """(issue, contradicts) for every rule that fired, in the rules' order."""
    out: list[tuple[Issue, bool]] = []
    if s.new_name:
        out.append(
            (Issue("other_subject", f"[{n}] names {s.new_name!r}, which its cited span does not"), False)
        )
    if s.new_scope:
        text = f"[{n}] adds {s.new_scope!r}, which changes the scope of its cited span"
        out.append((Issue("other_subject", text), False))
    if s.opposite:
        said, source = s.opposite
        out.append(
            (Issue("contradiction", f"[{n}] says {said!r} where its cited span says {source!r}"), True)
        )
    if s.negation_flip:
        out.append((Issue("contradiction", f"[{n}] {s.negation_flip} its cited span"), True))
    if s.substituted:
        out.append(_substitution_reason(s.substituted, n))
    if s.swapped:
        text = f"[{n}] swaps {s.swapped[0]!r} and {s.swapped[1]!r} against its cited span"
        out.append((Issue("contradiction", text), True))
    if s.frames:
        out.append(_frame_reason(s.frames[0], n))
    return out


def _substitution_reason(substituted: tuple[str, str, str], n: int) -> tuple[Issue, bool]:
    """A word in another's place: an antonym contradicts; another name or noun is another subject."""
    said, source, kind = substituted
    text = f"[{n}] says {said!r} where its cited span says {source!r}"
    opposite = kind == "antonym"
    return Issue("contradiction" if opposite else "other_subject", text), opposite


def _frame_reason(conflict: tuple[str, str, str], n: int) -> tuple[Issue, bool]:
    """The first frame conflict: a negation, swap or split contradicts; the others are another subject."""
    kind, said, source = conflict
    if kind == "negation":
        text = f"[{n}] {said} {source!r} where its cited span does the opposite"
    elif kind in _CONTRADICTING_FRAMES:
        text = f"[{n}] gives {said!r} the role its cited span gives {source!r}"
    else:
        text = f"[{n}] says {said!r} where its cited span says {source!r}"
    contradicts = kind in _CONTRADICTING_FRAMES
    return Issue("contradiction" if contradicts else "other_subject", text), contradicts


def _low(s: Signals, n: int) -> Issue:
    return Issue("low_overlap", f"[{n}] has only {s.coverage:.2f} overlap with its cited span")


def _under_floor(s: Signals, n: int) -> Decision:
    """Withheld for coverage under the floor; undecided when that is all that holds it back: no rule
    fired and every figure is stated by the spans or the blocks' titles and dates. In a sentence written
    in another language than its spans the rules on English words that name another subject read
    nothing true (German capitalises every noun), so only a contradiction holds it back."""
    reasons = _reasons(s, n)
    blocking = [r for r in reasons if r[1]] if s.foreign else reasons
    undecided = not blocking and s.unstated_figures == 0
    return Decision(_low(s, n), s.coverage, s.core, undecided=undecided)


def rules(s: Signals, n: int, *, min_coverage: float) -> Decision:
    """The hand-combined rules: hard verdicts, the coverage floor, then the first rule that fires."""
    hard = _hard(s, n)
    if hard is not None:
        return hard
    if s.coverage < min_coverage:
        return _under_floor(s, n)
    reasons = _reasons(s, n)
    if reasons:
        issue, contradicts = reasons[0]
        return Decision(issue, s.coverage, s.core, contradicts)
    return Decision(None, s.coverage, s.core)


def _by_model(model: Model, s: Signals, n: int, *, min_coverage: float) -> Decision:
    """Hard verdicts and the coverage floor first; then kept when the model's probability reaches its
    threshold, else withheld for the first rule that fired (low coverage when none did)."""
    hard = _hard(s, n)
    if hard is not None:
        return hard
    if s.coverage < min_coverage:
        return _under_floor(s, n)
    if model.keeps(dict(zip(FEATURES, vector(s, min_coverage=min_coverage), strict=True))):
        return Decision(None, s.coverage, s.core)
    reasons = _reasons(s, n)
    issue, contradicts = reasons[0] if reasons else (_low(s, n), False)
    return Decision(issue, s.coverage, s.core, contradicts)


def stored_model() -> Model | None:
    """The model in `weights.json` (its weights in `FEATURES` order), None when the file is absent."""
    return load(WEIGHTS_FILE, features=FEATURES)


def active_model(setting: str = "") -> Model | None:
    """The model `decide` is given for the `RAG_SUPPORT_MODEL` setting (`Settings.support_model`): the
    stored one when it was adopted; none with "off"; with "on", the stored one even when not adopted
    (for measuring)."""
    return in_use(stored_model(), setting)


def decide(s: Signals, n: int, *, min_coverage: float, model: Model | None) -> Decision:
    """The verdict: the model's when one is given, else the rules'."""
    if model is not None:
        return _by_model(model, s, n, min_coverage=min_coverage)
    return rules(s, n, min_coverage=min_coverage)
