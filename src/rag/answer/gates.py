"""Refusal lines: the retrieval gate (line 1), the grounding gate (line 3), and the wording of all three.

Line 2 (conflicting sources) is judged by `rag.answer.conflicts`; its wording lives here so the
three messages the user can read are defined in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from rag.language.inflection import forms
from rag.language.text import content_words, english_frequency, stem, term_set
from rag.types import ChunkRef, Conflict, RefusalReason, Scored, Sentence, Statement

# Who reads the blocks the gate lets through: the offline extractive generator, or Claude.
Reader = Literal["offline", "claude"]

# The retrieval gate's threshold per (reranker that scored, reader), all recorded in docs/eval.md.
# - lexical x offline: the extractive generator can answer only when the question's words are in a
#   passage; the middle of the best plateau of `rag eval --sweep min_score` on the golden set.
# - lexical x claude: Claude reads paraphrase, so the gate only has to keep far-off questions from
#   costing a call; chosen by the offline reader simulation (`rag eval --gate-sim`), which counts
#   answerable questions that reach the model against calls spent on unanswerable ones.
# - hybrid x *: the lexical score mixed with the local encoder's cosine (offline dense retrieval),
#   chosen the same two ways on the seven development sets pooled (golden, holdout..holdout5, devdocs;
#   444 questions, `python -m benchmarks.dense_eval sweep`): offline, the best balanced accuracy of
#   `rag eval --sweep min_score`'s objective; in front of Claude, the highest threshold whose
#   simulated answered share is within 0.01 of the best (259 of 281 answerable reach it).
# - voyage x *: a placeholder, not calibrated (no Voyage access offline); rerank-2.5 scores are
#   relevance probabilities, and 0.35 is below every supporting passage we have seen scored.
GATE_THRESHOLDS: dict[tuple[str, Reader], float] = {
    ("lexical", "offline"): 0.47,
    ("lexical", "claude"): 0.24,  # 118 of 122 answerable reach it; docs/gate_claude.md
    ("hybrid", "offline"): 0.55,
    ("hybrid", "claude"): 0.34,  # docs/eval.md, "Dense retrieval offline"
    ("voyage", "offline"): 0.35,
    ("voyage", "claude"): 0.35,
}

LOW_RETRIEVAL_MESSAGE = (
    "I couldn't find this in the knowledge base. If it should exist, it may not be indexed yet."
)
NO_CITATIONS_MESSAGE = "Relevant documents were found, but none of them directly answers this question."
# A model reply that ended before any sentence could be checked: the documents are not to blame.
REPLY_CUT_MESSAGE = (
    "The model's reply was cut short before any of it could be checked against the documents, so"
    " nothing is shown. Asking again may work."
)
REPLY_DECLINED_MESSAGE = "The model declined to answer this question, so nothing is shown."
# An answer whose reply was cut after some verified sentences.
CUT_NOTE = (
    "The model's reply was cut short: every sentence shown is verified, but the answer may be incomplete."
)
CONFLICT_INTRO = "The sources disagree"
CONFLICT_OUTRO = "Check which one applies before relying on either."

MESSAGES: dict[RefusalReason, str] = {
    "low_retrieval_score": LOW_RETRIEVAL_MESSAGE,
    "no_citations": NO_CITATIONS_MESSAGE,
    "conflicting_sources": f"{CONFLICT_INTRO}.",
    "reply_cut": REPLY_CUT_MESSAGE,
    "reply_declined": REPLY_DECLINED_MESSAGE,
}


def top_score(scored: Sequence[Scored]) -> float:
    """The highest relevance in `scored`, 0.0 when nothing was retrieved."""
    return max((s.score for s in scored), default=0.0)


def gate_threshold(scorer: str, reader: Reader) -> float:
    """The calibrated threshold for `scorer` scores read by `reader` (lexical's for an unknown scorer)."""
    return GATE_THRESHOLDS.get((scorer, reader), GATE_THRESHOLDS[("lexical", reader)])


# With embeddings, a chunk this similar to the question (cosine) is a near neighbour: it keeps a
# paraphrase that shares no word with the documents above the floor. Cosines differ by model, so the
# value is per scorer (which names the embedding model with it):
# - hybrid (the local encoder, all-MiniLM-L6-v2): above the top cosine of every far-off-topic
#   question of the development sets (docs/eval.md, "Dense retrieval offline");
# - any other (Voyage's vectors): a placeholder like Voyage's gate threshold (no Voyage access offline).
NEAR_NEIGHBOUR = 0.5
NEAR_NEIGHBOURS: dict[str, float] = {"hybrid": 0.35}


def near_neighbour(scorer: str) -> float:
    """The cosine at which a chunk is a near neighbour of the question, for scores from `scorer`."""
    return NEAR_NEIGHBOURS.get(scorer, NEAR_NEIGHBOUR)


def shares_content_term(question: str, scored: Sequence[Scored]) -> bool:
    """The far-off-topic floor: some retrieved chunk (text, title or section) shares a content term
    with the question, or (with embeddings) is a near neighbour of it. A question that fails it
    never costs a model call, whatever the threshold."""
    near = near_neighbour(scored[0].scorer) if scored else NEAR_NEIGHBOUR
    if any(s.dense >= near for s in scored):
        return True
    wanted = term_set(question)
    return any(
        wanted & (term_set(s.chunk.text) | term_set(s.chunk.title) | term_set(s.chunk.section))
        for s in scored
    )


def retrieval_gate(
    scored: Sequence[Scored], min_score: float, question: str | None = None, *, words_min: float | None = None
) -> bool:
    """Line 1: True when the best retrieved chunk scores at least `min_score` (or, under a hybrid
    score, its words alone score at least `words_min`: the lexical threshold) and, when `question`
    is given, passes the far-off-topic floor (the request may go on).

    Words and meaning are two signals that something relevant is indexed; the gate refuses only
    when neither says so. Mixed, a passage that states the question's words but whose sentence
    vector sits far from the question's falls under the hybrid threshold although the lexical
    gate, calibrated on its own, lets it through: with dense retrieval on, 3 of the golden set's
    answerable questions were refused that way (docs/eval.md, "Gates")."""
    if not scored:
        return False
    words = words_min is not None and max(s.words for s in scored) >= words_min
    if top_score(scored) < min_score and not words:
        return False
    return question is None or shares_content_term(question, scored)


# A rare content word: rarer in general English than about one word in 65,000 (the Zipf scale's 4.2;
# "password" and "rubbish" are rarer, "offer", "visit", "water" and "usage" are not) and held by at
# most this share of the store's chunks. With Claude reading, a question whose top chunk holds such a
# word of it is about what that chunk is about, whatever its score: "What is the minimum password
# length?" against "Passwords must be at least 14 characters long" scores below the gate because
# two of its three words are not in the chunk, yet Claude reads the answer in it. Off-topic questions
# share everyday words with a corpus, not rare ones: on the development sets' 24 far-off questions
# under the Claude threshold none shares such a word with its top chunk (docs/eval.md, "Gates").
RARE_ENGLISH_FREQUENCY = 1.6e-5
RARE_CORPUS_SHARE = 0.05


def rare_shared_terms(question: str, top: Scored, df: Mapping[str, int], n_chunks: int) -> frozenset[str]:
    """The question's rare content words (see RARE_ENGLISH_FREQUENCY) the `top` chunk holds, in text,
    title or section, in any inflected form; `df`: chunks per stemmed term, of `n_chunks`."""
    if n_chunks <= 0:
        return frozenset()
    chunk = top.chunk
    held = term_set(chunk.text) | term_set(chunk.title) | term_set(chunk.section)
    found = set()
    for word in content_words(question):
        term = stem(word)
        # an inflected form is rarer than its word ("recommending"): the commoner of the two decides
        if word.isdigit() or max(english_frequency(word), english_frequency(term)) > RARE_ENGLISH_FREQUENCY:
            continue
        if df.get(term, 0) > RARE_CORPUS_SHARE * n_chunks or forms(term).isdisjoint(held):
            continue
        found.add(term)
    return frozenset(found)


def grounding_gate(sentences: Sequence[Sentence]) -> bool:
    """Line 3: True when at least one sentence kept a verified citation."""
    return any(s.citations for s in sentences)


# Closest passages a refusal shows: the offline reader's five blocks and the next three, so a refusal
# hands over every passage the reader looked at and the ones ranked just below. Swept over 5, 6, 8 and
# 10 on the eleven development sets (lexical ranking): the answerable questions whose passage is read
# or shown go 0.864 -> 0.881 -> 0.900 -> 0.900 of 462; past eight nothing more is found, while each
# passage is one more for the asker to read (docs/eval.md, "Closest passages: a sweep"). The reader
# itself keeps five: reading eight answers three more right and four more wrong.
CLOSEST_SHOWN = 8


def closest_refs(scored: Sequence[Scored], k: int = CLOSEST_SHOWN) -> tuple[ChunkRef, ...]:
    """The `k` best distinct chunks as references, best first (ties by chunk id)."""
    refs: list[ChunkRef] = []
    seen: set[str] = set()
    for s in sorted(scored, key=lambda s: (-s.score, s.chunk.chunk_id)):
        if len(refs) >= k:
            break
        if s.chunk.chunk_id in seen:
            continue
        seen.add(s.chunk.chunk_id)
        c = s.chunk
        refs.append(
            ChunkRef(
                chunk_id=c.chunk_id,
                title=c.title,
                section=c.section,
                url=c.url,
                score=round(s.score, 4),
                updated_at=c.updated_at,
            )
        )
    return tuple(refs)


def describe_statement(statement: Statement) -> str:
    """`Title (updated YYYY-MM-DD) says 250 MB`: one side of a conflict in words."""
    when = statement.updated_at.isoformat() if statement.updated_at else "date unknown"
    return f"{statement.title} (updated {when}) says {statement.quantity}"


def conflict_message(conflict: Conflict) -> str:
    """Line 2 wording: every side with its source and date, newest first; the person decides."""
    sides = sorted(
        conflict.statements,
        key=lambda s: (s.updated_at is None, -(s.updated_at.toordinal() if s.updated_at else 0), s.n),
    )
    return f"{CONFLICT_INTRO}: " + "; ".join(describe_statement(s) for s in sides) + f". {CONFLICT_OUTRO}"
