"""The walk of an ingest resolves each given path once, not every file (issue 29: two `Path.resolve`
calls per file, an lstat per path component each, were a tenth of an unchanged re-ingest), and the
resolved paths it hands the indexer are still exactly `Path.resolve`'s, symlinks included."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.ingest.walk import discover
from rag.store import SqliteStore


def tree(root: Path, files: int) -> None:
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    for i in range(files):
        (root / f"top-{i}.md").write_text(f"# Top {i}\n\nText {i}.\n")
        (deep / f"deep-{i}.md").write_text(f"# Deep {i}\n\nText {i}.\n")


def count_resolves(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = Path.resolve

    def counting(self: Path, strict: bool = False) -> Path:
        calls.append(self)
        return real(self, strict)

    monkeypatch.setattr(Path, "resolve", counting)
    return calls


def test_discover_resolves_the_folder_once_not_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(tmp_path / "docs", 25)
    expected = {str(p.resolve()) for p in (tmp_path / "docs").rglob("*.md")}
    calls = count_resolves(monkeypatch)
    found = discover([tmp_path / "docs"])
    assert len(found.files) == 50
    assert len(calls) == 1  # the folder given; before: two per file and folder
    assert {real for _, _, real in found.files} == expected


def test_symlinks_inside_the_folder_still_resolve_to_their_targets(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    tree(docs, 2)
    (docs / "alias.md").symlink_to(docs / "a" / "b" / "deep-0.md")
    (docs / "linked").symlink_to(docs / "a")
    via = tmp_path / "via"
    via.symlink_to(docs)  # the folder given through a link
    found = discover([via])
    for file, _, real in found.files:
        assert real == str(file.resolve()), file
    assert any(file.name == "alias.md" for file, _, _ in found.files)


def test_an_unchanged_folder_given_through_a_link_is_all_unchanged(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    tree(docs, 5)
    via = tmp_path / "via"
    via.symlink_to(docs)
    store = SqliteStore(str(tmp_path / "s.db"))
    settings = load_settings(db=str(tmp_path / "s.db"), mock=True)
    try:
        first = ingest_paths(store, [docs], settings=settings)
        again = ingest_paths(store, [via], settings=settings)
        sources = {source for _, source in store.document_hashes().values()}
    finally:
        store.close()
    assert len(first.added) == 10
    assert again.unchanged == 10 and not again.added and not again.updated
    assert sources == {str(p.resolve()) for p in docs.rglob("*.md")}
