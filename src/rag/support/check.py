"""Support: does a sentence say what its cited span says? (native citations, whose span is verbatim)

The API guarantees that `cited_text` is in the document; what is left to judge is the sentence:
1. an attribution lead-in that names the cited document ("According to the Lumio User Manual (updated
   2026-03-18), ...", "The policy states that ...", "..., per the admin guide.") is set aside, so its
   title words and date are not judged as claims; one that names another document stays, and fails
   (`leadins`);
2. coverage: the share of the sentence's content terms (stemmed, stop words out, topic words kept) found
   in its own span or the block's title and section must reach `MIN_COVERAGE`; a word also counts as
   found when it aligns to a span word through a WordNet sense ("rejected" / "refused", see below);
3. harmful edits are withheld even when coverage is high: a negation the span does not have, or one it
   has and the sentence drops ("must" / "must not", "no longer", "cannot"); the entities of the span
   in swapped roles ("admins invite members" / "members invite admins"); a subject the span does not
   name (`lexical`). Changed figures are judged by `figures.missing_figures` on the same span.
4. alignment (`alignment`; with WordNet's data installed, the `lexical` extra; `Tools.wordnet`): each content
   word of the sentence is aligned to the span by stem, by a shared WordNet sense, or as an acronym of
   a run of words. A sentence word left unaligned that stands where an unaligned span word stood (next
   to the same aligned word) replaces it: when the two are WordNet antonyms ("downloads" / "uploads")
   the sentence contradicts its span; when both name things (usually nouns or adjectives, or
   capitalised names) it says something about another subject or role ("the workspace owner is
   notified" / "its creator is notified"). A capitalised name the span lacks, while the span has a
   name the sentence lacks, is another subject wherever it stands. Verbs are left to paraphrase:
   WordNet's verb senses are too narrow to tell a paraphrase ("switched on" / "enabled") from a change.
5. frames (`frames`; with a dependency parser installed, the `parse` extra; `Tools.parser`): each predicate of
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
from functools import lru_cache

from rag.calibration import Model
from rag.language.text import term_set
from rag.language.tools import Tools, installed
from rag.support.alignment import aligned_share, substituted, word_meaning
from rag.support.decision import Decision, Signals, active_model, decide
from rag.support.figures import missing_figures
from rag.support.frames import frame_conflicts, other_kinds
from rag.support.leadins import misattribution, strip_attribution, strip_attributions
from rag.support.lexical import foreign, negation_flip, new_name, new_scope, opposite, swapped
from rag.types import Block

__all__ = [
    "CheckOptions",
    "Decision",
    "Signals",
    "check",
    "contradicted_alone",
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
# Where a sentence joins clauses of its own ("..., and ...", "...; ...", "..., but ..."): a sentence that
# cites several spans usually cites one for each such clause.
_JOINED_RE = re.compile(r"\s*(?:;|,\s*(?:and|but|while|whereas|so|or)\b|\s[—–]\s)\s*", re.IGNORECASE)


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


def contradicted_alone(
    sentence: str,
    spans: Sequence[str],
    blocks: Sequence[Block],
    *,
    common: frozenset[str] = frozenset(),
    options: CheckOptions | None = None,
) -> Decision | None:
    """The verdict of the first of several `spans` that, judged alone, contradicts a clause of `sentence`
    whose closest cited span it is (most content terms in common); None when none does. Each span alone
    may contradict the clause it is cited for, which the other spans hide ("Guests use a paid seat, and
    ..." citing "Guests do not use a paid seat." beside a span that restates the rest); a span says nothing
    against a clause another span states more closely ("Laptops are not bought through the allowance"
    against "..., and equipment you buy with the allowance belongs to you", cited to a span of its own)."""
    if len(spans) <= 1:
        return None
    options = _or_default(options)
    parts = clauses(sentence)
    for span in spans:
        alone = check(sentence, [span], blocks, common=common, options=options)
        if not alone.contradicts:
            continue
        own = [p for p in parts if span in _closest(p, spans)] if len(parts) > 1 else parts
        if any(check(p, [span], blocks, common=common, options=options).contradicts for p in own):
            return alone
    return None


def clauses(sentence: str) -> list[str]:
    """The clauses `sentence` joins with a comma and a conjunction, a semicolon or a dash, in order (the
    whole sentence when it joins none)."""
    return [p for p in _JOINED_RE.split(sentence) if term_set(p)] or [sentence]


def _closest(part: str, spans: Sequence[str]) -> list[str]:
    """The spans sharing most content terms with `part` (every span tied for most; none when no span
    shares one)."""
    wanted = term_set(part)
    shared = [len(wanted & term_set(s)) for s in spans]
    most = max(shared, default=0)
    return [s for s, n in zip(spans, shared, strict=True) if most and n == most]


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
    core = strip_attributions(sentence, blocks)
    evidence = " ".join(spans)
    other = _misattributed(core, blocks) if core == sentence else ""
    if other:
        return Signals(core=core, misattributed=other)
    wanted = term_set(core)
    if not wanted:
        return Signals(core=core, lead_in=core != sentence, empty=True)
    context = term_set(" ".join(f"{b.chunk.title} {b.chunk.section}" for b in blocks))
    span_terms = term_set(evidence)
    found = span_terms | context
    stem_coverage = len(wanted & found) / len(wanted)
    aligned, unaligned = aligned_share(
        options.tools.wordnet,
        core,
        evidence,
        context,
        meaning=options.tools.meaning,
        min_similarity=options.min_word_similarity,
    )
    replaced, vetoed = _substitution(core, evidence, context, options)
    wanted_meaning = options.model is not None if with_meaning is None else with_meaning
    measured_meaning = _meaning_signals(core, evidence, context, options) if wanted_meaning else (0.0, 1.0)
    missing = missing_figures(core, [evidence])
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
        new_name=new_name(core, found | common),
        new_scope=new_scope(core, evidence),
        opposite=opposite(core, evidence),
        negation_flip=negation_flip(core, evidence),
        substituted=replaced,
        substitution_vetoed=vetoed,
        swapped=swapped(core, evidence),
        frames=frame_conflicts(options.tools.parser, options.tools.wordnet, core, evidence, context),
        missing_figures=len(missing),
        unstated_figures=len(missing_figures(core, [evidence, _provenance(blocks)])) if missing else 0,
        foreign=foreign(core) and not foreign(evidence),
        meaning=measured_meaning[0],
        word_meaning=measured_meaning[1],
    )


def _provenance(blocks: Sequence[Block]) -> str:
    """The blocks' titles and dates, as text a figure may come from ("(updated 2025-12-01)")."""
    return " ".join(
        f"{b.chunk.title} {b.chunk.updated_at.isoformat() if b.chunk.updated_at else ''}" for b in blocks
    )


def _misattributed(sentence: str, blocks: Sequence[Block]) -> str:
    """The first other source a lead-in of `sentence` names against the blocks; "" when none does."""
    return next((m for m in (misattribution(sentence, b) for b in blocks) if m), "")


def _substitution(
    sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> tuple[tuple[str, str, str] | None, bool]:
    """The alignment's substitution (`alignment.substituted`) and whether the parser vetoed it: it tags
    the two words as different kinds, or both as verbs (an antonym is never vetoed)."""
    found = substituted(
        options.tools.wordnet,
        sentence,
        evidence,
        context,
        meaning=options.tools.meaning,
        min_similarity=options.min_word_similarity,
    )
    if (
        found
        and found[2] != "antonym"
        and other_kinds(options.tools.parser, found[0], sentence, found[1], evidence)
    ):
        return None, True
    return found, False


def _meaning_signals(
    sentence: str, evidence: str, context: frozenset[str], options: CheckOptions
) -> tuple[float, float]:
    """`meaning` and `word_meaning` of `Signals` (their defaults, 0.0 and 1.0, without the encoder; the
    second also without WordNet, which decides the words left unaligned)."""
    meaning = options.tools.meaning
    whole = meaning.similarity(sentence, evidence) if meaning is not None else None
    if meaning is None or whole is None:
        return 0.0, 1.0
    closest = word_meaning(
        meaning,
        options.tools.wordnet,
        sentence,
        evidence,
        context,
        min_similarity=options.min_word_similarity,
    )
    return whole, closest
