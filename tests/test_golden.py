"""The golden set is well formed and every chunk it names exists in the bundled corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag.config import Settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "fixtures" / "eval" / "golden.jsonl"
CORPUS = ROOT / "fixtures" / "corpus"
LABELS = {"answer", "abstain", "conflict"}


def _items() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus_chunks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Chunk id -> chunk text after ingesting the bundled corpus into a private store."""
    db = str(tmp_path_factory.mktemp("golden") / "golden.db")
    store = SqliteStore(db)
    try:
        ingest_paths(store, [CORPUS], settings=Settings(db=db))
        return {
            chunk.chunk_id: chunk.text
            for doc_id in store.document_hashes()
            for chunk in store.document_chunks(doc_id)
        }
    finally:
        store.close()


def test_golden_lines_are_json_objects_with_known_labels() -> None:
    lines = [line for line in GOLDEN.read_text(encoding="utf-8").splitlines() if line.strip()]
    for line in lines:
        item = json.loads(line)
        assert isinstance(item, dict)
        assert item["label"] in LABELS, item
        assert item["question"].strip(), item
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids))


def test_golden_size_and_unanswerable_share_meet_floor() -> None:
    items = _items()
    hard = sum(1 for i in items if i["label"] in ("abstain", "conflict"))
    assert len(items) >= 80
    assert hard / len(items) >= 0.40


def test_golden_abstain_items_have_kind_and_no_chunks() -> None:
    for item in _items():
        if item["label"] == "abstain":
            assert item["kind"] in ("far", "near"), item
            assert not item.get("chunks"), item


def test_golden_answer_and_conflict_items_name_existing_chunks(corpus_chunks: dict[str, str]) -> None:
    for item in _items():
        if item["label"] in ("answer", "conflict"):
            assert item["chunks"], item
            missing = [c for c in item["chunks"] if c not in corpus_chunks]
            assert not missing, (item["id"], missing)


def test_golden_conflict_items_span_two_documents() -> None:
    for item in _items():
        if item["label"] == "conflict":
            assert len({c.split("#")[0] for c in item["chunks"]}) >= 2, item


def test_golden_expect_occurs_in_a_supporting_chunk(corpus_chunks: dict[str, str]) -> None:
    for item in _items():
        if item["label"] == "answer":
            assert item["expect"], item
            assert any(item["expect"] in corpus_chunks[c] for c in item["chunks"]), item["id"]
