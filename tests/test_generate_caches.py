"""The offline generator's text-keyed caches: bounded, keyed by the whole text they analyse, never
stale (a sentence met again in another chunk, title or question is analysed in its new context)."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from rag.language import wordnet
from rag.language.text import content_words, normalise, terms, tokens
from rag.reader import answer_types, answerable, candidates, offline, prose, question, words
from rag.reader.answer_types import type_match
from rag.reader.offline import OfflineGenerator
from rag.types import Block, Chunk

SHARED = "They stay in the bin for 45 days before they are purged."
QUESTION = "How long do deleted boards stay in the bin?"
OTHER = ("Invoices are issued monthly in euros.", "Billing")


def block(n: int, text: str, title: str = "Guide", section: str = "") -> Block:
    chunk = Chunk(chunk_id=f"doc-{n:03d}#c01", doc_id=f"doc-{n:03d}", title=title, section=section, text=text)
    return Block(n=n, chunk=chunk, score=0.5, sent_text=text)


def _caches() -> list[Any]:
    """Every lru cache of the modules the generator reads sentences with."""
    found = []
    for module in (offline, question, candidates, answerable, words, answer_types, prose, wordnet):
        assert isinstance(module, types.ModuleType)
        for value in vars(module).values():
            if callable(value) and hasattr(value, "cache_info") and value.__module__ == module.__name__:
                found.append(value)
    return found


def _clear() -> None:
    for cached in _caches():
        cached.cache_clear()


# The same sentence under different titles and in different chunk texts: its answer changes with
# its context, so a cache keyed by less than the whole context would carry the first answer over.
CONTEXTS = [
    [block(1, SHARED, "Boards"), block(2, *OTHER)],
    [block(1, SHARED, "Invoices"), block(2, *OTHER)],
    [block(1, f"Deleted boards are moved to the bin. {SHARED}"), block(2, *OTHER)],
    [block(1, f"{SHARED} Deleted invoices are moved to the bin."), block(2, *OTHER)],
    [block(1, SHARED, "Boards"), block(2, f"Invoices are issued monthly. {SHARED}", "Billing")],
]
QUESTIONS = [
    QUESTION,
    "How long do deleted invoices stay in the bin?",
    "How many days do items stay in the bin?",
]


def test_warm_caches_give_the_answers_a_cold_start_gives():
    warm = [OfflineGenerator().generate(q, blocks).text for blocks in CONTEXTS for q in QUESTIONS]
    cold = []
    for blocks in CONTEXTS:
        for q in QUESTIONS:
            _clear()
            cold.append(OfflineGenerator().generate(q, blocks).text)
    assert warm == cold
    # the contexts do change the answer: a cache that ignored them would be caught above
    assert len(set(warm)) > 1


def test_same_sentence_in_two_chunks_follows_each_chunk():
    _clear()
    boards = OfflineGenerator().generate(QUESTION, CONTEXTS[0]).text
    invoices = OfflineGenerator().generate(QUESTION, CONTEXTS[1]).text
    assert boards.startswith(SHARED[:-1])
    assert invoices == ""
    # and back: the first context's answer again, not the second's
    assert OfflineGenerator().generate(QUESTION, CONTEXTS[0]).text == boards


def test_same_sentence_in_chunks_of_different_texts_cites_each_chunk_that_writes_it():
    sentence = "Deleted boards stay in the bin for 45 days."
    alone = OfflineGenerator().generate(QUESTION, [block(1, sentence), block(2, *OTHER)])
    assert [c.n for c in alone.drafts[0].claims] == [1]
    both = [block(1, sentence), block(2, *OTHER), block(3, f"{sentence} Owners can empty the bin.")]
    assert [c.n for c in OfflineGenerator().generate(QUESTION, both).drafts[0].claims] == [1, 3]
    # a chunk whose text merely contains the words elsewhere is not cited
    other = [block(1, sentence), block(3, "The bin for boards stays for 45 days unless it is emptied.")]
    assert [c.n for c in OfflineGenerator().generate(QUESTION, other).drafts[0].claims] == [1]


TEXTS = [
    SHARED,
    SHARED.upper(),
    f"{SHARED} Owners can empty the bin.",
    "The MAX_SIZE limit is 10 MB.",
    "",
    "Set ``--max-requests`` to 1000.",
    SHARED,
]
PAIRS: list[tuple[Callable[[str], Any], Callable[[str], Any]]] = [
    (words.sentence_key, normalise),
    (words.block_key, normalise),
    (words.sentence_terms, lambda t: tuple(terms(t))),
    (question._tokens, lambda t: tuple(tokens(t))),
    (question._content_words, lambda t: tuple(content_words(t))),
]


@pytest.mark.parametrize(("cached", "plain"), PAIRS)
def test_cached_analysis_equals_the_uncached_one(cached: Callable[[str], Any], plain: Callable[[str], Any]):
    for text in TEXTS * 2:
        assert cached(text) == plain(text)


def test_joined_terms_keyed_by_every_part():
    assert words.joined_terms("Boards", "", SHARED) != words.joined_terms("Invoices", "", SHARED)
    assert words.joined_terms("Boards", "", SHARED) == words.joined_terms("Boards", "", SHARED)
    assert "board" in words.joined_terms("Boards", "", SHARED)


def test_figure_question_words_filter_per_question():
    sentence = "Uploads are limited to 250 MB per file."
    assert type_match(sentence, "number", "What is the largest upload?") == 1.0
    # the same sentence, cached, for a question that already states the figure: no new figure
    assert type_match(sentence, "number", "Is 250 the largest upload?") == 0.0
    assert type_match(sentence, "number", "What is the largest upload?") == 1.0


def test_caches_are_bounded_and_hold_immutable_values():
    caches = _caches()
    assert words.sentence_key in caches and answer_types._figure_words in caches
    for cached in caches:
        assert cached.cache_info().maxsize is not None, cached.__name__
    for value in (
        words.sentence_terms(SHARED),
        question._tokens(SHARED),
        question._content_words(SHARED),
        words.joined_terms("Boards", SHARED),
        answer_types._figure_words(SHARED),
        answer_types._asked_words(QUESTION),
    ):
        assert isinstance(value, tuple | frozenset)


def test_sentence_key_cache_evicts_beyond_its_bound():
    maxsize = words.sentence_key.cache_info().maxsize
    assert maxsize is not None
    words.sentence_key.cache_clear()
    for i in range(maxsize + 10):
        words.sentence_key(f"sentence {i}")
    assert words.sentence_key.cache_info().currsize == maxsize
    assert words.sentence_key("Sentence 3!") == "sentence 3"
