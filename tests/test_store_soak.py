"""No false "database disk image is malformed" (issue 31 item 5): a header read for readiness must not
drop this process's SQLite locks, and a re-ingest in another process, in a loop, while threads read
and readiness is polled, gives no store error."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import rag
from rag.config import load_settings
from rag.errors import Gone, NotFound, StoreUnavailable
from rag.ingest.indexer import ingest_paths
from rag.language.text import terms
from rag.store.sqlite import SqliteStore

CORPUS = Path(__file__).resolve().parent.parent / "fixtures" / "corpus"
SRC = str(Path(rag.__file__).resolve().parent.parent)
QUESTIONS = (
    "How long do deleted projects stay in the trash?",
    "What is the maximum file upload size?",
    "edit quartz zebra",
    "How do I reset my password?",
)
# Another process writes a table of its own and closes: its close checkpoints, and deletes the WAL
# when it takes itself for the file's last user.
_WRITE_AND_CLOSE = """
import os, sqlite3, sys
w = sqlite3.connect(sys.argv[1], isolation_level=None)
w.execute("CREATE TABLE IF NOT EXISTS soak (x BLOB)")
w.execute("DELETE FROM soak WHERE rowid % 3 = 0")
w.executemany("INSERT INTO soak VALUES (?)", [(os.urandom(700),) for _ in range(1500)])
w.close()
"""
# `rag ingest` run after run in another process: each edits some files, ingests, closes the store.
_REINGEST = """
import sys, time
from pathlib import Path
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
db, docs, seconds = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3])
settings = load_settings(db=db, mock=True, dense="off")
files = sorted(docs.glob("*.md"))
originals = {p: p.read_text() for p in files}
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    for p in files[n % 4 :: 4]:
        p.write_text(originals[p] + f"\\n\\nEdit {n} adds quartz and zebra{n % 5}.\\n")
    store = SqliteStore(db)
    ingest_paths(store, [docs], settings=settings)
    store.close()
    n += 1
print(n)
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, check=True, capture_output=True, text=True
    )


def test_readiness_header_read_keeps_the_locks_another_process_checks(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    store = SqliteStore(db)
    try:
        _run(_WRITE_AND_CLOSE, db)
        with store._connection() as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM soak").fetchone()
            store.stats()  # reads the file's header while a request holds a read transaction
            _run(_WRITE_AND_CLOSE, db)
            # the other process saw this one's SHARED lock: it did not delete the WAL under it
            assert os.path.exists(db + "-wal")
            reader.execute("COMMIT")
        _run(_WRITE_AND_CLOSE, db)
        with store._connection() as conn:
            assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
            fresh = sqlite3.connect(db)
            try:
                expected = fresh.execute("SELECT count(*), sum(length(x)) FROM soak").fetchone()
            finally:
                fresh.close()
            assert conn.execute("SELECT count(*), sum(length(x)) FROM soak").fetchone() == expected
    finally:
        store.close()


def test_reingest_in_a_loop_while_threads_read_gives_no_store_error(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(CORPUS, docs)
    db = str(tmp_path / "rag.db")
    store = SqliteStore(db)
    ingest_paths(store, [docs], settings=load_settings(db=db, mock=True, dense="off"))
    errors: Counter[str] = Counter()
    reads = [0]
    done = threading.Event()

    def read(i: int) -> None:
        while not done.is_set():
            query = terms(QUESTIONS[(i + reads[0]) % len(QUESTIONS)])
            try:
                found = store.search(query, 40)
                store.term_frequencies(query)
                ids = [chunk.chunk_id for chunk, _ in found[:5]]
                store.get_chunks(ids)
                if found:
                    store.document_chunks(found[0][0].doc_id, limit=50)
                    store.get_chunk(found[0][0].chunk_id)
                store.stats()
            except (NotFound, Gone):
                pass  # an id read a moment ago may have been retired by the re-ingest since
            except StoreUnavailable as exc:
                errors[str(exc)] += 1
            reads[0] += 1

    def poll_readiness() -> None:
        while not done.is_set():
            try:
                store.stats()
            except StoreUnavailable as exc:
                errors[str(exc)] += 1
            time.sleep(0.002)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    threads.append(threading.Thread(target=poll_readiness))
    for thread in threads:
        thread.start()
    try:
        runs = int(_run(_REINGEST, db, str(docs), "8").stdout)
    finally:
        done.set()
        for thread in threads:
            thread.join()
        store.close()
    assert runs >= 3 and reads[0] > 100, (runs, reads[0])
    assert not errors, errors.most_common(3)
