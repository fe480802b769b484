"""Irregular verbs: the forms the stemmer leaves apart are one term group for retrieval."""

from __future__ import annotations

from pathlib import Path

from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve, search_terms
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.language.inflection import IRREGULAR_VERBS, forms
from rag.language.text import STOP_WORDS, stem, terms
from rag.store import SqliteStore


def test_forms_of_an_irregular_verb_are_one_group_and_other_terms_stand_alone() -> None:
    assert forms("wrote") == forms("written") == forms(stem("writes")) == {"write", "wrote", "written"}
    assert forms(stem("taken")) >= {stem("take"), stem("took"), stem("taken")}
    assert forms("origin") == {"origin"}


def test_ambiguous_forms_and_short_names_are_not_in_the_table() -> None:
    words = {w for verb in IRREGULAR_VERBS for w in verb}
    assert not words & {"found", "left", "saw", "bit", "bound", "sat", "lead", "mean", "go", "rose"}
    assert all(len(verb) >= 2 for verb in IRREGULAR_VERBS)
    assert not {verb[0] for verb in IRREGULAR_VERBS} & {"be", "have", "do"} & STOP_WORDS


def test_search_terms_follow_each_question_term_with_its_other_forms() -> None:
    assert search_terms("Who wrote the parser?") == ["wrote", "write", "written", "parser"]


def _top(tmp_path: Path, files: dict[str, str], question: str) -> tuple[str, float]:
    """The document and score of `question`'s top chunk over `files` (name -> Markdown), ingested."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in files.items():
        (docs / name).write_text(text)
    store = SqliteStore(str(tmp_path / "rag.db"))
    ingest_paths(store, [docs], settings=load_settings(mock=True))
    [top, *_] = retrieve(question, store=store, reranker=LexicalReranker())
    store.close()
    return top.chunk.doc_id, top.score


def test_a_question_in_the_past_tense_finds_the_participle(tmp_path: Path) -> None:
    files = {
        "history.md": "# History\n\nThe first parser was written by Ada in 1990.\n",
        "parking.md": "# Parking\n\nVisitors park at the west entrance of the building.\n",
    }
    doc, score = _top(tmp_path, files, "Who wrote the first parser?")
    assert doc == "history" and score > 0.9


def test_the_s_and_ing_forms_are_spelled_so_they_stem_to_the_verb_not_to_another_word() -> None:
    for base, others in (("run", "rune"), ("spin", "spine"), ("win", "wine"), ("get", "gete")):
        assert stem(base + base[-1] + "ing") in forms(base) and others not in forms(base)
    assert stem("flies") in forms("flew") and stem("flying") in forms("flew") and "flys" not in forms("flew")
    assert stem("writing") in forms("wrote") and stem("catches") in forms("caught")
    assert stem("seeing") in forms("seen")


def test_a_one_letter_name_is_a_term_in_the_question_and_the_document(tmp_path: Path) -> None:
    files = {
        "r.md": "# Languages\n\nR was initially written by Ross Ihaka and Robert Gentleman.\n",
        "python.md": "# Languages\n\nPython was initially written by Guido van Rossum.\n",
    }
    assert _top(tmp_path, files, "Who originally wrote R?")[0] == "r"


def test_a_capital_standing_alone_and_a_one_letter_flag_are_terms_other_single_letters_are_not() -> None:
    assert "r" in terms("Who originally wrote R?") and "c" in terms("Which C++ standard is the default?")
    assert "c" in terms("What does Black's -C flag do?") and "n" in terms("Pass -n to dry-run.")
    assert all(len(t) > 1 for t in terms("See the U.S. office in item a of the X-Protocol list."))
    assert "c" not in terms(r"The cache lives in C:\Users\me\AppData or D:/cache.")
