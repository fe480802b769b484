from __future__ import annotations

from datetime import date

from rag.answer.gates import (
    LOW_RETRIEVAL_MESSAGE,
    NO_CITATIONS_MESSAGE,
    closest_refs,
    conflict_message,
    grounding_gate,
    retrieval_gate,
)
from rag.types import Chunk, Citation, Conflict, Scored, Sentence, Statement


def scored(cid: str, score: float) -> Scored:
    return Scored(
        chunk=Chunk(chunk_id=cid, doc_id=cid.split("#")[0], title=cid, section="", text="t"), score=score
    )


def statement(n: int, title: str, when: date | None, quantity: str) -> Statement:
    return Statement(
        n=n,
        chunk_id=f"d{n}#c01",
        doc_id=f"d{n}",
        title=title,
        url="",
        updated_at=when,
        text=f"The limit is {quantity}.",
        quantity=quantity,
        value=1.0,
        unit="MB",
        start=0,
        end=10,
    )


def test_retrieval_gate_top_score_below_min_refuses():
    assert not retrieval_gate([scored("a#c01", 0.2), scored("b#c01", 0.1)], 0.3)


def test_retrieval_gate_top_score_at_min_passes():
    assert retrieval_gate([scored("a#c01", 0.1), scored("b#c01", 0.3)], 0.3)


def test_retrieval_gate_nothing_retrieved_refuses():
    assert not retrieval_gate([], 0.0)


def test_grounding_gate_no_verified_sentence_refuses():
    assert not grounding_gate([])
    assert not grounding_gate([Sentence(text="x", citations=())])
    cite = Citation(n=1, chunk_id="a#c01", title="a", url="", cited_text="x", start=0, end=1)
    assert grounding_gate([Sentence(text="x", citations=()), Sentence(text="y", citations=(cite,))])


def test_closest_refs_returns_k_best_distinct_by_score():
    refs = closest_refs(
        [
            scored("a#c01", 0.2),
            scored("b#c01", 0.9),
            scored("b#c01", 0.9),
            scored("c#c01", 0.5),
            scored("d#c01", 0.1),
        ],
        k=3,
    )
    assert [r.chunk_id for r in refs] == ["b#c01", "c#c01", "a#c01"]


def test_conflict_message_names_both_sources_and_dates_newest_first():
    conflict = Conflict(
        dimension="bytes",
        context=("upload", "size"),
        statements=(
            statement(1, "API reference", date(2025, 10, 3), "100 MB"),
            statement(2, "Admin guide", date(2026, 5, 12), "250 MB"),
        ),
    )
    message = conflict_message(conflict)
    assert message.startswith(
        "The sources disagree: Admin guide (updated 2026-05-12) says 250 MB; "
        "API reference (updated 2025-10-03) says 100 MB."
    )


def test_refusal_wordings_match_design():
    assert LOW_RETRIEVAL_MESSAGE.startswith("I couldn't find this in the knowledge base.")
    assert "may not be indexed yet" in LOW_RETRIEVAL_MESSAGE
    assert (
        NO_CITATIONS_MESSAGE
        == "Relevant documents were found, but none of them directly answers this question."
    )


def test_far_off_topic_floor_lets_a_near_dense_neighbour_through() -> None:
    from rag.answer.gates import NEAR_NEIGHBOUR, retrieval_gate

    chunk = Chunk(chunk_id="a#c01", doc_id="a", title="Leave", section="", text="Annual leave is 25 days.")
    question = "How much vacation do I get?"  # no word in common with the chunk
    far = Scored(chunk=chunk, score=0.9, dense=NEAR_NEIGHBOUR - 0.1)
    near = Scored(chunk=chunk, score=0.9, dense=NEAR_NEIGHBOUR)
    assert not retrieval_gate([far], 0.2, question)
    assert retrieval_gate([near], 0.2, question)


def test_near_neighbour_cosine_is_the_scorers_own() -> None:
    from rag.answer.gates import NEAR_NEIGHBOUR, near_neighbour, retrieval_gate

    chunk = Chunk(chunk_id="a#c01", doc_id="a", title="Leave", section="", text="Annual leave is 25 days.")
    question = "How much vacation do I get?"
    local = near_neighbour("hybrid")
    assert local < NEAR_NEIGHBOUR == near_neighbour("voyage") == near_neighbour("lexical")
    between = (local + NEAR_NEIGHBOUR) / 2
    assert retrieval_gate([Scored(chunk=chunk, score=0.9, dense=between, scorer="hybrid")], 0.2, question)
    assert not retrieval_gate([Scored(chunk=chunk, score=0.9, dense=between, scorer="voyage")], 0.2, question)


def test_retrieval_gate_under_a_hybrid_score_passes_on_words_alone() -> None:
    chunk = Chunk(
        chunk_id="a#c01", doc_id="a", title="Trash", section="", text="Deleted projects stay 30 days."
    )
    question = "How long do deleted projects stay?"
    mixed_low = Scored(chunk=chunk, score=0.40, dense=0.2, scorer="hybrid", words=0.60)
    # the mix is under its threshold, but the words alone reach the lexical one
    assert retrieval_gate([mixed_low], 0.55, question, words_min=0.47)
    assert not retrieval_gate([mixed_low], 0.55, question)
    weak_words = Scored(chunk=chunk, score=0.40, dense=0.2, scorer="hybrid", words=0.30)
    assert not retrieval_gate([weak_words], 0.55, question, words_min=0.47)
