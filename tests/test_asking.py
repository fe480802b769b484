"""Retrieval skips the words of asking for a default ("unless I tell it otherwise") and of hedging an
amount, and searches for "default" instead (`rag.language.asking`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answer.rerank import LexicalReranker, term_weights
from rag.answer.retrieve import retrieve, search_terms
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.language.asking import query_words
from rag.language.text import content_words
from rag.store.sqlite import SqliteStore


@pytest.mark.parametrize(
    ("question", "skipped", "kept"),
    [
        (
            "Where does the tool keep its cache unless I tell it otherwise?",
            {"unless", "otherwise"},
            {"cache"},
        ),
        ("Which port does the server use if I don't pass --bind-port?", {"pass"}, {"bind", "port"}),
        ("If I never pick a folder, where do the reports end up?", {"never", "pick"}, {"folder", "reports"}),
        ("How wide is a line if I leave the setting alone?", {"leave", "alone"}, {"setting", "line"}),
        ("Where is the file if XDG_CONFIG_HOME isn't set?", {"set"}, {"xdgconfighome"}),
        ("Which mode is used unless configured otherwise?", {"unless", "configured", "otherwise"}, {"mode"}),
        ("What does it print if I don't configure anything?", {"configure", "anything"}, {"print"}),
        (
            "How big is a segment unless I pick a different size when creating it?",
            {"pick"},
            {"size", "creating"},
        ),
    ],
)
def test_a_default_clause_loses_its_asking_words_and_asks_for_a_default(question, skipped, kept):
    words = query_words(question)
    assert skipped <= set(content_words(question))  # the words were there to skip
    assert not skipped & set(words)
    assert kept <= set(words)
    assert words[-1] == "default"


@pytest.mark.parametrize(
    "question",
    [
        "What happens if I don't return a library book?",  # not a verb of choosing: a circumstance
        "How does the tool change a table when the database can't alter it?",  # another's doing
        "When I set a password, which hashing method is used?",  # done, not left undone
        "Which precision does the library use by default?",  # asks in words retrieval keeps
        "How do I rotate the certificate without downtime?",
    ],
)
def test_a_circumstance_keeps_every_word(question):
    assert list(query_words(question)) == content_words(question)


def test_a_hedge_on_the_amount_is_skipped_and_the_amount_kept():
    assert query_words("Roughly how many printer models are supported?") == (
        "many",
        "printer",
        "models",
        "supported",
    )
    assert "roughly" in query_words("Which paint dries roughly?")  # a manner, not a hedge on an amount


def test_the_searched_and_weighed_terms_are_the_query_words():
    question = "Where does the tool keep its cache unless I tell it otherwise?"
    assert search_terms(question) == ["tool", "keep", "kept", "cach", "default"]  # "kept": keep's forms
    assert list(term_weights(question, {}, 100)) == ["tool", "keep", "cach", "default"]


def test_the_passage_stating_the_default_outranks_one_repeating_the_asking_words(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cache.md").write_text("# Cache\n\nThe tool keeps its cache in .cache by default.\n")
    (docs / "flags.md").write_text(
        "# Flags\n\nTell the tool otherwise with a flag, unless you keep the cache in the shared folder.\n"
    )
    (docs / "other.md").write_text("# Other\n\nNothing about storage here; the default colour is blue.\n")
    store = SqliteStore(str(tmp_path / "rag.db"))
    ingest_paths(store, [docs], settings=load_settings(db=str(tmp_path / "rag.db"), mock=True))
    found = retrieve(
        "Where does the tool keep its cache unless I tell it otherwise?",
        store=store,
        reranker=LexicalReranker(),
    )
    assert found[0].chunk.doc_id.startswith("cache")
    store.close()
