from hypothesis import given, settings
from hypothesis import strategies as st

from rag.answer.gates import GATE_THRESHOLDS
from rag.answer.rerank import (
    LexicalReranker,
    _term_set,
    english_idf,
    idf,
    term_weights,
)
from rag.language.text import terms
from rag.types import Chunk, Scored


def _cand(chunk_id: str, text: str, lexical: float, *, section: str = "", title: str = "Doc") -> Scored:
    chunk = Chunk(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], title=title, section=section, text=text)
    return Scored(chunk=chunk, score=0.0, lexical=lexical)


def _df(texts: list[str]) -> dict[str, int]:
    df: dict[str, int] = {}
    for text in texts:
        for term in set(terms(text)):
            df[term] = df.get(term, 0) + 1
    return df


CORPUS = [
    "Deleted projects stay in the trash for 30 days before removal.",
    "Projects list every task; projects have owners and projects have members.",
    "The free trial lasts 90 days for every new workspace.",
    "Projects can be archived by owners.",
    "Members can comment on tasks in projects.",
]


def test_idf_absent_term_weighs_most_and_common_term_least() -> None:
    assert idf(0, 100) > idf(1, 100) > idf(50, 100) > idf(100, 100) > 0


def test_lexical_rerank_answering_chunk_beats_chunk_sharing_only_common_words() -> None:
    question = "How long do deleted projects stay in the trash?"
    answer = _cand("a#c00", CORPUS[0], lexical=5.0)
    common = _cand("b#c00", CORPUS[1], lexical=6.0)  # more BM25 from repeating "projects"
    ranked = LexicalReranker().rerank(question, [common, answer], df=_df(CORPUS), n_chunks=len(CORPUS))
    assert [s.chunk.chunk_id for s in ranked] == ["a#c00", "b#c00"]
    assert ranked[0].score >= GATE_THRESHOLDS[("lexical", "offline")] > ranked[1].score


def test_lexical_rerank_question_with_key_terms_absent_from_corpus_scores_low() -> None:
    question = "What is the capital of Australia for projects?"
    cand = _cand("b#c00", CORPUS[1], lexical=3.0)
    (scored,) = LexicalReranker().rerank(question, [cand], df=_df(CORPUS), n_chunks=len(CORPUS))
    assert scored.score < GATE_THRESHOLDS[("lexical", "offline")]


def test_lexical_rerank_title_and_section_terms_count_as_covered() -> None:
    cand = _cand("a#c00", "Click the button.", lexical=1.0, section="Password reset")
    (scored,) = LexicalReranker().rerank("password reset", [cand], df={"password": 1, "reset": 1}, n_chunks=5)
    assert scored.score == 1.0


def test_lexical_rerank_scores_stay_in_unit_interval_and_sort_ties_by_chunk_id() -> None:
    cands = [_cand("b#c00", "trial days", 2.0), _cand("a#c00", "trial days", 2.0), _cand("c#c00", "", -1.0)]
    ranked = LexicalReranker().rerank("trial days", cands, df=_df(CORPUS), n_chunks=5)
    assert [s.chunk.chunk_id for s in ranked] == ["a#c00", "b#c00", "c#c00"]
    assert all(0.0 <= s.score <= 1.0 for s in ranked)


def test_lexical_rerank_question_without_content_terms_scores_zero() -> None:
    (scored,) = LexicalReranker().rerank("what is it?", [_cand("a#c00", "It is.", 1.0)], df={}, n_chunks=1)
    assert scored.score == 0.0


def test_lexical_rerank_keeps_bm25_in_lexical_field_and_does_not_mutate_input() -> None:
    cand = _cand("a#c00", CORPUS[2], lexical=4.2)
    (scored,) = LexicalReranker().rerank("free trial", [cand], df=_df(CORPUS), n_chunks=5)
    assert scored.lexical == 4.2 and cand.score == 0.0 and scored.score == 1.0


def test_english_idf_everyday_word_weighs_less_than_rare_word_and_unknown_word_most() -> None:
    assert english_idf("think", 100) < english_idf("wonder", 100) < english_idf("fahrenheit", 100)
    assert english_idf("qzxvwlumiobrand", 100) == idf(0, 100)


def test_term_weights_never_exceed_corpus_idf_and_discount_everyday_absent_words() -> None:
    df = {"trial": 3, "project": 90}
    weights = term_weights("Could I really extend the trial for Kubernetes projects?", df, 100)
    assert all(w <= idf(df.get(t, 0), 100) for t, w in weights.items())
    assert weights["realli"] < 0.5 * idf(0, 100) < 0.99 * idf(0, 100) < weights["kubernet"]
    assert weights["project"] == idf(90, 100)  # common in the corpus: cheap however rare in English


def test_lexical_rerank_everyday_words_absent_from_corpus_do_not_sink_answering_chunk() -> None:
    df = {"free": 5, "trial": 3, "last": 4}
    cand = _cand("t#c00", "The free trial lasts 90 days.", lexical=2.0)
    rerank = LexicalReranker().rerank
    (everyday,) = rerank("How long does the free trial really last?", [cand], df=df, n_chunks=100)
    (specific,) = rerank("How long does the free trial last on Kubernetes?", [cand], df=df, n_chunks=100)
    assert everyday.score >= GATE_THRESHOLDS[("lexical", "offline")]
    assert specific.score < everyday.score


def test_lexical_rerank_off_topic_question_sharing_only_everyday_words_scores_low() -> None:
    df = {"water": 2, "point": 1, "project": 90}
    cand = _cand("w#c00", "Point the hose at the water tank of the project.", lexical=2.0)
    question = "What is the boiling point of water in Fahrenheit?"
    (scored,) = LexicalReranker().rerank(question, [cand], df=df, n_chunks=100)
    assert scored.score < GATE_THRESHOLDS[("lexical", "offline")]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab c'’\n\t.Dé1-")), max_size=60) | st.text(max_size=60))
def test_term_set_equals_set_of_terms_for_any_text(text: str) -> None:
    assert _term_set(text) == frozenset(terms(text))
