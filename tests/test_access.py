"""Document audiences and principals: no route shows a caller a trace of what it may not read.

The corpus has public, HR-only and security-only documents (one HR file without front matter,
ingested with `--access hr`). The central property: a caller's results on the full store equal its
results on a store holding only the documents it may read, for every route, question and refusal
line, on SQLite and PostgreSQL. That covers answers, citations, closest matches, conflict cards,
counts and 404s at once, and shows that scoring statistics leak nothing.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_examples import ready_examples

from rag.access import Principal, audience_text, group_names, load_principals, visible_sql
from rag.answer.pipeline import build_pipeline
from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.api.app import create_app
from rag.cli import main
from rag.config import Settings, load_settings
from rag.errors import ConfigError, Gone, NotFound
from rag.ingest.indexer import ingest_paths
from rag.store import SqliteStore, Store
from rag.types import Document

# name -> (front matter access, title, paragraphs)
CORPUS: dict[str, tuple[str, str, list[str]]] = {
    "travel-policy.md": (
        "",
        "Travel policy",
        [
            "Employees book flights through the travel portal. Economy class is required for flights "
            "under six hours.",
            "Hotel stays are reimbursed up to 150 dollars per night. Taxis to the airport are "
            "reimbursed with a receipt.",
        ],
    ),
    "expenses.md": (
        "",
        "Expense reports",
        [
            "Submit expense reports within 30 days of purchase. Receipts are required for any expense "
            "above 25 dollars.",
            "Approved expenses are paid with the next salary run. Mobile phones are provided by the IT desk.",
        ],
    ),
    "overtime.md": (
        "",
        "Overtime",
        [
            "Overtime must be approved by your manager in advance. The overtime limit is 10 hours per week.",
        ],
    ),
    "salary-bands.md": (
        "[hr]",
        "Salary bands",
        [
            "Salary bands are reviewed every April by the compensation committee. Band four engineers "
            "earn between 92000 and 118000 euros.",
            "Bonuses are capped at 15 percent of base salary. The compensation committee meets in the "
            "Quillfeather room.",
        ],
    ),
    "disciplinary.md": (
        "[hr]",
        "Disciplinary hearings",
        [
            "Disciplinary hearings are scheduled within ten working days of a complaint. The employee "
            "may bring a colleague to the hearing.",
            "Outcomes of a disciplinary hearing are recorded in the personnel file for two years.",
        ],
    ),
    "overtime-warehouse.md": (
        "[hr]",
        "Warehouse overtime",
        [
            "For warehouse staff the overtime limit is 12 hours per week. Overtime must be approved by "
            "your manager in advance.",
        ],
    ),
    "incident-2025.md": (
        "[security]",
        "Phishing incident review",
        [
            "The phishing incident in March affected the payroll mailbox. Attackers used a forged "
            "invoice from Zentrox Logistics.",
            "All staff passwords were rotated within 48 hours of the phishing incident.",
        ],
    ),
    "pentest.md": (
        "[security, HR]",
        "Penetration test",
        [
            "The penetration test found an exposed Grafana dashboard on port 3000. The firewall rule "
            "was fixed on the same day.",
        ],
    ),
}
# ingested with `access=("hr",)`: no front matter
LOOSE = {
    "parental-leave.txt": "Parental leave requests are handled by Ingrid Vasquez in the people team."
    " Requests need eight weeks notice.\n"
}
AUDIENCE = {
    **{name.rsplit(".", 1)[0]: frozenset(group_names(a.strip("[]"))) for name, (a, _, _) in CORPUS.items()},
    "parental-leave": frozenset({"hr"}),
}
PRINCIPALS = {
    "k-alice": {"name": "alice", "groups": ["hr"]},
    "k-sam": {"name": "sam", "groups": ["security"]},
    "k-ann": {"name": "ann", "groups": ["admin"]},
}
PLAIN_KEY = "k-plain"
CALLERS = {PLAIN_KEY: frozenset(), "k-alice": frozenset({"hr"}), "k-sam": frozenset({"security"})}
RESTRICTED_SENTENCES = [
    s.strip() + "."
    for name, (access, _, paras) in CORPUS.items()
    if access
    for para in paras
    for s in para.split(". ")
    if s.strip()
] + [LOOSE["parental-leave.txt"].split(".")[0] + "."]
# one question per refusal line, and answers, for callers with and without access
LINE_QUESTIONS = [
    "What is the overtime limit?",  # conflict for HR (their document disagrees); an answer for others
    "How much do band four engineers earn?",
    "Can I bring a lawyer to a disciplinary hearing?",  # no_citations for HR
    "Is business class allowed on flights over six hours?",  # no_citations for everyone
    "What happened in the phishing incident?",
    "Who handles parental leave requests?",
    "What is the capital of Australia?",  # low_retrieval_score
]
VOLATILE = {"trace_id", "timings", "total", "source_path"}  # differ between two stores


def readable(doc_id: str, groups: frozenset[str] | None) -> bool:
    audience = AUDIENCE[doc_id]
    return groups is None or not audience or bool(audience & groups)


def write_corpus(root: Path, groups: frozenset[str] | None = None) -> tuple[Path, Path]:
    """The corpus files `groups` may read (None: all) under root/docs and root/loose."""
    docs, loose = root / "docs", root / "loose"
    docs.mkdir(parents=True)
    loose.mkdir(parents=True)
    for name, (access, title, paras) in CORPUS.items():
        if not readable(name.rsplit(".", 1)[0], groups):
            continue
        front = f"---\ntitle: {title}\nupdated: 2026-0{1 + len(name) % 8}-01\n"
        front += f"access: {access}\n" if access else ""
        (docs / name).write_text(front + "---\n" + f"# {title}\n\n" + "\n\n".join(paras) + "\n")
    for name, text in LOOSE.items():
        if readable(name.rsplit(".", 1)[0], groups):
            (loose / name).write_text(text)
    return docs, loose


def fill(store: Store, root: Path, groups: frozenset[str] | None) -> Store:
    docs, loose = write_corpus(root, groups)
    settings = load_settings(db=":memory:", mock=True)
    report = ingest_paths(store, [docs], settings=settings)
    assert not report.skipped
    assert not ingest_paths(store, [loose], settings=settings, access=("hr",)).skipped
    return store


@pytest.fixture(scope="module")
def sqlite_full(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    """A SQLite store with the whole corpus."""
    root = tmp_path_factory.mktemp("sqlite-full")
    store = SqliteStore(str(root / "full.db"))
    fill(store, root / "corpus", None)
    yield store
    store.close()


VIEWS: dict[str, frozenset[str] | None] = {
    "full": None,
    "public": frozenset(),
    "hr": frozenset({"hr"}),
    "security": frozenset({"security"}),
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Store]]:
    """One store per view: the full corpus, and the documents each caller may read (nothing else)."""
    made: dict[str, Store] = {}
    schemas: list[str] = []
    if request.param == "postgres":
        from tests.test_store_backends import schema_url

        # PostgreSQL with pgvector (tests/pg_server.py); skips with the reason when there is none
        pg_root: str = request.getfixturevalue("pg_server_url")
        import psycopg

        from rag.store.postgres import PgStore

        for view in VIEWS:
            schema = f"acc_{uuid.uuid4().hex[:10]}"
            with psycopg.connect(pg_root, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}")
            schemas.append(schema)
            made[view] = PgStore(schema_url(pg_root, schema), max_size=4)
    else:
        for view in VIEWS:
            made[view] = SqliteStore(str(tmp_path_factory.mktemp("access") / f"{view}.db"))
    try:
        for view, groups in VIEWS.items():
            fill(made[view], tmp_path_factory.mktemp(f"corpus-{view}"), groups)
        yield made
    finally:
        for store in made.values():
            store.close()
        if schemas:
            import psycopg

            with psycopg.connect(pg_root, autocommit=True) as conn:
                for schema in schemas:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")


def view_of(groups: frozenset[str]) -> str:
    return {frozenset(): "public", frozenset({"hr"}): "hr", frozenset({"security"}): "security"}[groups]


def app_settings() -> Settings:
    return load_settings(db=":memory:", mock=True, api_keys=PLAIN_KEY, principals=json.dumps(PRINCIPALS))


@pytest.fixture(scope="module")
def clients(stores: dict[str, Store]) -> Iterator[dict[str, TestClient]]:
    settings = app_settings()
    out: dict[str, TestClient] = {}
    for view, store in stores.items():
        app = create_app(settings, pipeline=build_pipeline(settings, store=store))
        out[view] = TestClient(app, raise_server_exceptions=False)
        out[view].__enter__()
    yield out
    for client in out.values():
        client.__exit__(None, None, None)


def stable(value: Any) -> Any:
    """`value` without what differs between two runs of the same request (trace ids, timings), floats
    to 9 decimals (PostgreSQL may sum a BM25 score's terms in another order: the last bits differ)."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def sse_events(text: str) -> list[tuple[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        name = re.search(r"^event: (.+)$", block, re.MULTILINE)
        data = re.search(r"^data: (.+)$", block, re.MULTILINE)
        if name and data:
            events.append((name.group(1), stable(json.loads(data.group(1)))))
    return events


def responses(client: TestClient, key: str, question: str) -> dict[str, Any]:
    """What one caller sees for one question on every route that can show documents."""
    auth = {"Authorization": f"Bearer {key}"}
    ask = client.post("/ask", json={"question": question}, headers=auth)
    stream = client.post("/ask/stream", json={"question": question}, headers=auth)
    stream_get = client.get("/ask/stream", params={"q": question, "key": key})
    ready = client.get("/readyz", headers=auth)
    ids = {}
    for doc_id in AUDIENCE:
        doc = client.get(f"/documents/{quote(doc_id)}", headers=auth)
        chunk = client.get(f"/chunks/{quote(doc_id + '#c00')}", headers=auth)
        ids[doc_id] = (doc.status_code, stable(doc.json()), chunk.status_code, stable(chunk.json()))
    return {
        "ask": (ask.status_code, stable(ask.json())),
        "stream": (stream.status_code, sse_events(stream.text)),
        "stream_get": (stream_get.status_code, sse_events(stream_get.text)),
        "readyz": (ready.status_code, stable(ready.json())),
        "ids": ids,
    }


def hidden_marks(groups: frozenset[str]) -> list[str]:
    """Doc ids, titles and chunk ids of the documents `groups` may not read."""
    marks = []
    for name, (_, title, _) in CORPUS.items():
        doc_id = name.rsplit(".", 1)[0]
        if not readable(doc_id, groups):
            marks += [f'"{doc_id}"', f'"{doc_id}#', title]
    if not readable("parental-leave", groups):
        marks += ['"parental-leave"', '"parental-leave#', "Ingrid"]
    return marks


questions = st.builds(
    lambda sentence, start, size, lead: (
        (lead + " ".join(sentence.split()[start : start + size])).strip("., ") + "?"
    ),
    st.sampled_from(RESTRICTED_SENTENCES),
    st.integers(0, 6),
    st.integers(3, 12),
    st.sampled_from(["", "What about ", "Tell me: ", "Is it true that "]),
)


# --- the model ------------------------------------------------------------------------------------


def test_group_names_normalise_and_reject_bad_names() -> None:
    assert group_names(" HR, security ") == {"hr", "security"}
    assert group_names(["Admin"]) == {"admin"}
    assert group_names(None) == frozenset()
    with pytest.raises(ValueError, match="not a group name"):
        group_names(["hr team"])
    with pytest.raises(ValueError, match="list of group names"):
        group_names({"hr": 1})


def test_principal_reads_public_and_shared_groups_only() -> None:
    alice = Principal(name="alice", groups=frozenset({"hr"}))
    assert alice.may_read("") and alice.may_read(audience_text(["hr", "security"]))
    assert not alice.may_read(audience_text(["security"]))
    assert not alice.admin and Principal(name="a", groups=frozenset({"admin"})).admin
    assert Principal.operator().may_read(audience_text(["x"])) and Principal.operator().reads is None


def test_visible_sql_escapes_like_wildcards_in_group_names() -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (access TEXT)")
    conn.executemany("INSERT INTO t VALUES (?)", [("",), (",hr,",), (",hrxteam,",), (",hr_team,",)])
    condition, params = visible_sql(frozenset({"hr_team"}), "access")
    rows = {r[0] for r in conn.execute(f"SELECT access FROM t WHERE {condition}", params)}
    assert rows == {"", ",hr_team,"}


def test_principals_config_maps_keys_and_keeps_plain_keys(tmp_path: Path) -> None:
    path = tmp_path / "principals.json"
    path.write_text(json.dumps({"k2": {"name": "bob", "groups": ["security"]}}))
    principals = load_principals(json.dumps(PRINCIPALS), str(path), ["k0"])
    assert principals["k0"] == Principal(name="key-1")
    assert principals["k2"].groups == {"security"}
    assert principals["k-alice"] == Principal(name="alice", groups=frozenset({"hr"}))
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_principals("{", "", [])
    with pytest.raises(ConfigError, match="name"):
        load_principals(json.dumps({"k": {"groups": ["hr"]}}), "", [])
    with pytest.raises(ConfigError, match="not a group name"):
        load_principals(json.dumps({"k": {"name": "x", "groups": ["a b"]}}), "", [])


# --- ingest ---------------------------------------------------------------------------------------


def test_ingest_reads_access_from_front_matter_and_the_option(tmp_path: Path) -> None:
    store = fill(SqliteStore(str(tmp_path / "a.db")), tmp_path / "c", None)
    try:
        assert store.get_document("salary-bands").access == ("hr",)
        assert store.get_document("pentest").access == ("hr", "security")
        assert store.get_document("parental-leave").access == ("hr",)
        assert store.get_document("travel-policy").access == ()
    finally:
        store.close()


def test_ingest_skips_a_file_with_a_bad_access_list_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "bad.md").write_text("---\naccess: [hr team]\n---\n# Bad\n\nSome text here.\n")
    store = SqliteStore(str(tmp_path / "a.db"))
    try:
        report = ingest_paths(store, [tmp_path / "bad.md"], settings=load_settings(db=":memory:", mock=True))
    finally:
        store.close()
    assert report.added == () and "not a group name" in report.skipped[0].reason


def test_reingest_with_another_access_option_changes_the_audience(tmp_path: Path) -> None:
    _, loose = write_corpus(tmp_path / "c", None)
    store = SqliteStore(str(tmp_path / "a.db"))
    settings = load_settings(db=":memory:", mock=True)
    try:
        ingest_paths(store, [loose], settings=settings, access=("hr",))
        report = ingest_paths(store, [loose], settings=settings, access=("security",))
        assert report.updated == ("parental-leave",)
        with pytest.raises(NotFound):
            store.get_chunk("parental-leave#c00", groups=frozenset({"hr"}))
        assert (
            store.get_chunk("parental-leave#c00", groups=frozenset({"security"})).doc_id == "parental-leave"
        )
        assert store.term_frequencies(["ingrid"], groups=frozenset({"hr"})) == {"ingrid": 0}
        assert store.term_frequencies(["ingrid"], groups=frozenset({"security"})) == {"ingrid": 1}
        store.delete_document("parental-leave")
        assert store.term_frequencies(["ingrid"]) == {"ingrid": 0}
    finally:
        store.close()


# --- the store, on both backends -----------------------------------------------------------------


def test_store_hides_documents_and_chunks_as_unknown(stores: dict[str, Store]) -> None:
    full = stores["full"]
    for groups in CALLERS.values():
        for doc_id in AUDIENCE:
            if readable(doc_id, groups):
                assert full.get_document(doc_id, groups=groups).doc_id == doc_id
                assert full.document_chunks(doc_id, groups=groups)
                continue
            for read in (full.get_document, full.document_chunks):
                with pytest.raises(NotFound, match="unknown document"):
                    read(doc_id, groups=groups)
            with pytest.raises(NotFound, match="unknown chunk"):
                full.get_chunk(f"{doc_id}#c00", groups=groups)
            assert full.get_chunks([f"{doc_id}#c00"], groups=groups) == []


def test_store_counts_only_readable_documents(stores: dict[str, Store]) -> None:
    for groups in CALLERS.values():
        seen, alone = stores["full"].stats(groups=groups), stores[view_of(groups)].stats()
        assert (seen.documents, seen.chunks) == (alone.documents, alone.chunks)
    assert stores["full"].stats().documents == len(AUDIENCE)


def test_store_frequencies_cover_only_readable_chunks(stores: dict[str, Store]) -> None:
    words = ["zentrox", "overtim", "salari", "grafana", "travel"]
    for groups in CALLERS.values():
        seen = stores["full"].term_frequencies(words, groups=groups)
        assert seen == stores[view_of(groups)].term_frequencies(words, groups=None)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=questions)
def test_retrieval_is_identical_whether_or_not_hidden_documents_exist(
    stores: dict[str, Store], question: str
) -> None:
    """Scores (BM25 and the reranker's) use no statistic of a hidden document: a question made of
    a hidden document's own words scores exactly as if that document had never been ingested."""
    reranker = LexicalReranker()

    def ranked(store: Store, groups: frozenset[str] | None) -> list[tuple[Any, ...]]:
        found = retrieve(question, store=store, reranker=reranker, groups=groups)
        return [(s.chunk, stable(s.score), stable(s.lexical), s.scorer) for s in found]

    for groups in CALLERS.values():
        seen = ranked(stores["full"], groups)
        assert seen == ranked(stores[view_of(groups)], groups)
        assert all(readable(chunk.doc_id, groups) for chunk, *_ in seen)
        # a caller with access gets what retrieval without any filter gives over what it may read
        assert seen == ranked(stores[view_of(groups)], None)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=questions)
def test_sqlite_search_for_every_caller_equals_the_exhaustive_reference(
    sqlite_full: SqliteStore, question: str
) -> None:
    """Public and restricted chunks are ranked by one BM25 over the public statistics: for every
    caller, the store's search equals the exhaustive reference (benchmarks/bm25_reference.py)."""
    from benchmarks import bm25_reference
    from rag.language.text import terms

    store = sqlite_full
    chunks = bm25_reference.load(store)
    words = list(dict.fromkeys(terms(question)))
    for groups in (None, frozenset(), frozenset({"hr"}), frozenset({"security"})):
        found = [(c.chunk_id, round(s, 9)) for c, s in store.search(words, 1000, groups=groups)]
        expected = [(cid, round(s, 9)) for cid, s in bm25_reference.search(chunks, words, 1000, groups)]
        assert found == expected, groups
    found = store.search(terms("compensation committee salary"), 10, groups=frozenset({"hr"}))
    assert found[0][0].doc_id == "salary-bands"


def test_retired_id_of_a_hidden_document_is_unknown_not_gone(tmp_path: Path) -> None:
    store = fill(SqliteStore(str(tmp_path / "a.db")), tmp_path / "c", None)
    try:
        doc = store.get_document("salary-bands")
        chunks = store.document_chunks("salary-bands")
        from dataclasses import replace

        store.upsert_document(
            replace(doc, content_hash="changed"), [replace(chunks[0], text=chunks[0].text + " Updated.")]
        )
        with pytest.raises(Gone):
            store.get_chunk("salary-bands#c00", groups=frozenset({"hr"}))
        with pytest.raises(NotFound):
            store.get_chunk("salary-bands#c00", groups=frozenset())
    finally:
        store.close()


def test_dense_search_never_ranks_a_hidden_chunk(tmp_path: Path) -> None:
    store = SqliteStore(str(tmp_path / "a.db"))
    try:
        for doc_id, access, vector in [("open", (), [1.0, 0.0]), ("secret", ("hr",), [1.0, 0.01])]:
            doc = Document(doc_id=doc_id, title=doc_id, text="x", access=access)
            from rag.types import Chunk

            chunk = Chunk(
                chunk_id=f"{doc_id}#c00", doc_id=doc_id, title=doc_id, section="", text="x", end_char=1
            )
            store.upsert_document(doc, [chunk], [vector])
        assert [c.doc_id for c, _ in store.similar([1.0, 0.0], 5, groups=frozenset())] == ["open"]
        assert {c.doc_id for c, _ in store.similar([1.0, 0.0], 5, groups=frozenset({"hr"}))} == {
            "open",
            "secret",
        }
    finally:
        store.close()


# --- every route ----------------------------------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(question=st.one_of(questions, st.sampled_from(LINE_QUESTIONS)))
def test_every_route_shows_a_caller_what_a_store_of_its_documents_alone_shows(
    clients: dict[str, TestClient], question: str
) -> None:
    for key, groups in CALLERS.items():
        seen = responses(clients["full"], key, question)
        assert seen == responses(clients[view_of(groups)], key, question)
        # the id probes answer 404 naming the id asked for, exactly as for an id never issued
        assert all(seen["ids"][d][0] == 404 for d in AUDIENCE if not readable(d, groups))
        text = json.dumps({k: v for k, v in seen.items() if k != "ids"})
        for mark in hidden_marks(groups):
            assert mark not in text.replace(json.dumps(question), "")


def test_every_refusal_line_is_exercised_and_leaks_nothing(clients: dict[str, TestClient]) -> None:
    reasons: dict[str, set[str]] = {}
    for question in LINE_QUESTIONS:
        for key, groups in CALLERS.items():
            body = (
                clients["full"]
                .post("/ask", json={"question": question}, headers={"Authorization": f"Bearer {key}"})
                .json()
            )
            reasons.setdefault(key, set()).add(body["reason"] or "answered")
            alone = (
                clients[view_of(groups)]
                .post("/ask", json={"question": question}, headers={"Authorization": f"Bearer {key}"})
                .json()
            )
            assert stable(body) == stable(alone)
    assert {"conflicting_sources", "no_citations", "low_retrieval_score", "answered"} <= reasons["k-alice"]
    assert {"no_citations", "low_retrieval_score", "answered"} <= reasons[PLAIN_KEY]


def test_conflict_with_a_hidden_document_is_not_shown(clients: dict[str, TestClient]) -> None:
    auth = {"Authorization": f"Bearer {PLAIN_KEY}"}
    body = clients["full"].post("/ask", json={"question": "What is the overtime limit?"}, headers=auth).json()
    assert body["reason"] == "" and "10 hours" in body["text"]
    assert "12 hours" not in json.dumps(body) and "arehouse" not in json.dumps(body)
    hr = {"Authorization": "Bearer k-alice"}
    body = clients["full"].post("/ask", json={"question": "What is the overtime limit?"}, headers=hr).json()
    assert body["reason"] == "conflicting_sources"


def test_admin_routes_need_the_admin_group_and_record_principals(clients: dict[str, TestClient]) -> None:
    client = clients["full"]
    asked = client.post(
        "/ask",
        json={"question": "Who audits the moon base reactor?"},
        headers={"Authorization": f"Bearer {PLAIN_KEY}"},
    )
    trace = asked.headers["x-trace-id"]
    for key in (PLAIN_KEY, "k-alice", "k-sam"):
        auth = {"Authorization": f"Bearer {key}"}
        for path in ("/admin/api/summary", f"/admin/api/traces/{trace}", "/admin/api/export"):
            assert client.get(path, headers=auth).status_code == 403, (key, path)
    admin = {"Authorization": "Bearer k-ann"}
    view = client.get(f"/admin/api/traces/{trace}", headers=admin).json()
    assert view["principal"] == "key-1" and view["redacted"] is False
    summary = client.get("/admin/api/summary", headers=admin).json()
    assert any(r["question"] == "Who audits the moon base reactor?" for r in summary["recent_refusals"])


def test_admin_outside_a_group_sees_its_asks_only_as_a_count(clients: dict[str, TestClient]) -> None:
    client = clients["full"]
    admin = {"Authorization": "Bearer k-ann"}
    before = client.get("/admin/api/summary", headers=admin).json()
    traces = []
    for question in ("How much do band four engineers earn?", "Who audits the moon base reactor?"):
        got = client.post("/ask", json={"question": question}, headers={"Authorization": "Bearer k-alice"})
        traces.append(got.headers["x-trace-id"])
    view = client.get(f"/admin/api/traces/{traces[0]}", headers=admin).json()
    assert view["redacted"] is True and view["trace_id"] == traces[0]
    assert {view[k] for k in ("principal", "top_score", "reason", "abstained")} == {None}
    assert view["question"] == view["answer"] == "" and view["retrieved"] == view["blocks"] == []
    summary = client.get("/admin/api/summary", headers=admin)
    assert summary.json()["asks"] == before["asks"] + 2 and summary.json()["hidden"] >= before["hidden"] + 2
    for what in ("asks", "refusals", "wrong"):
        for fmt in ("json", "csv"):
            exported = client.get("/admin/api/export", params={"what": what, "format": fmt}, headers=admin)
            assert exported.status_code == 200
            assert not any(t in exported.text for t in traces) and "alice" not in exported.text
    assert not any(t in summary.text for t in traces) and "alice" not in summary.text
    assert not [d for d, audience in AUDIENCE.items() if audience and f"{d}#" in summary.text]


def test_admin_keys_stand_for_the_admin_group(stores: dict[str, Store]) -> None:
    settings = load_settings(
        db=":memory:",
        mock=True,
        api_keys=PLAIN_KEY,
        principals=json.dumps(PRINCIPALS),
        admin_keys="k-owner",
    )
    store = stores["full"]
    with TestClient(create_app(settings, pipeline=build_pipeline(settings, store=store))) as client:
        hr_ask = client.post(
            "/ask",
            json={"question": "How much do band four engineers earn?"},
            headers={"Authorization": "Bearer k-alice"},
        )
        trace = hr_ask.headers["x-trace-id"]
        for key, status in (("k-owner", 200), ("k-ann", 200), ("k-alice", 403), (PLAIN_KEY, 403)):
            got = client.get(f"/admin/api/traces/{trace}", headers={"Authorization": f"Bearer {key}"})
            assert got.status_code == status, key
            if status == 200:
                assert got.json()["redacted"] is True and "92000" not in got.text
        assert client.get("/admin/api/summary").status_code == 401


def test_examples_come_only_from_documents_the_caller_may_read(tmp_path: Path) -> None:
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "rooms.md").write_text(
        "# Office handbook\n\n## How to book a meeting room\n\nRooms are booked in the calendar.\n"
    )
    (corpus / "leave.md").write_text(
        "---\naccess: [hr]\n---\n# People handbook\n\n## How to request parental leave\n\n"
        "Parental leave needs eight weeks notice.\n"
    )
    settings = app_settings()
    store = SqliteStore(str(tmp_path / "e.db"))
    try:
        ingest_paths(store, [corpus], settings=settings)
        app = create_app(settings, pipeline=build_pipeline(settings, store=store))
        with TestClient(app) as client:
            seen = {}
            # the same (limit, seed) for each caller: the cache is keyed by the caller's groups too
            for key in (PLAIN_KEY, "k-alice", PLAIN_KEY):
                got = ready_examples(client, {"Authorization": f"Bearer {key}"}, limit=12)
                seen[key] = {e["doc_id"] for e in got}
    finally:
        store.close()
    assert seen == {PLAIN_KEY: {"rooms"}, "k-alice": {"rooms", "leave"}}


def test_feedback_records_the_principal(clients: dict[str, TestClient], stores: dict[str, Store]) -> None:
    client = clients["full"]
    trace = client.post(
        "/ask", json={"question": "What is the overtime limit?"}, headers={"Authorization": "Bearer k-sam"}
    ).headers["x-trace-id"]
    got = client.post(
        "/feedback",
        json={"trace_id": trace, "verdict": "helpful"},
        headers={"Authorization": "Bearer k-sam"},
    )
    assert got.status_code == 201 and "principal" not in got.json()
    assert [f.principal for f in stores["full"].feedback(10, trace_id=trace)] == ["sam"]


def test_gap_queue_hides_closest_matches_the_reader_may_not_read(stores: dict[str, Store]) -> None:
    store = stores["full"]
    store.add_gap(
        "Where is the Quillfeather room booked?", 0.1, ["salary-bands#c00", "travel-policy#c00"], "alice"
    )
    gap = next(
        g
        for g in store.gaps(1000, groups=frozenset({"admin"}))
        if g.question.startswith("Where is the Quill")
    )
    assert gap.closest == ("travel-policy#c00",) and gap.principal == "alice"
    everything = next(g for g in store.gaps(1000) if g.question.startswith("Where is the Quill"))
    assert everything.closest == ("salary-bands#c00", "travel-policy#c00")


def test_without_keys_http_callers_read_only_public_documents(tmp_path: Path) -> None:
    store = fill(SqliteStore(str(tmp_path / "a.db")), tmp_path / "c", None)
    settings = load_settings(db=":memory:", mock=True)
    try:
        with TestClient(create_app(settings, pipeline=build_pipeline(settings, store=store))) as client:
            assert client.get(f"/documents/{quote('salary-bands')}").status_code == 404
            assert client.get("/readyz").json()["documents"] == 3
    finally:
        store.close()


# --- the CLI --------------------------------------------------------------------------------------


def test_cli_ask_as_a_principal_and_as_the_operator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = str(tmp_path / "cli.db")
    fill(SqliteStore(db), tmp_path / "c", None).close()
    monkeypatch.setenv("RAG_DB", db)
    monkeypatch.setenv("RAG_PRINCIPALS", json.dumps(PRINCIPALS))
    runner = CliRunner()
    question = "How much do band four engineers earn?"
    operator = runner.invoke(main, ["ask", question])
    assert operator.exit_code == 0 and "92000" in operator.output
    alice = runner.invoke(main, ["ask", "--as", "alice", question])
    assert alice.exit_code == 0 and "92000" in alice.output
    sam = runner.invoke(main, ["ask", "--as", "sam", question])
    assert sam.exit_code == 0 and "92000" not in sam.output and "Salary" not in sam.output
    unknown = runner.invoke(main, ["ask", "--as", "mallory", question])
    assert unknown.exit_code == 1 and "no principal named 'mallory'" in unknown.output
    gaps = runner.invoke(main, ["gaps"])
    assert gaps.exit_code == 0 and "sam" in gaps.output


# --- follow-ups ------------------------------------------------------------------------------------------


def test_a_replayed_conversation_is_answered_under_the_replaying_principals_groups(
    clients: dict[str, TestClient],
) -> None:
    """Alice (hr) asks about salary bands; her turn, restricted answer included, is replayed by callers
    who may not read it: each sees exactly what a store of its own documents shows, and nothing of
    the hidden documents beyond the words the replayed history itself carries."""
    alice = {"Authorization": "Bearer k-alice"}
    first = "How much do band four engineers earn?"
    shown = clients["full"].post("/ask", json={"question": first}, headers=alice).json()
    assert "92000" in shown["text"]
    body = {
        "question": "And what are bonuses capped at?",
        "history": [{"question": first, "answer": shown["text"]}],
        "conversation_id": "replayed-1",
    }
    own = clients["full"].post("/ask", json=body, headers=alice).json()
    assert any(c["chunk_id"].startswith("salary-bands#") for c in own["citations"])
    for key, groups in CALLERS.items():
        if "hr" in groups:
            continue
        auth = {"Authorization": f"Bearer {key}"}
        seen = {
            route: client.post(route, json=body, headers=auth)
            for route, client in (("/ask", clients["full"]), ("/ask/stream", clients["full"]))
        }
        alone = {
            route: clients[view_of(groups)].post(route, json=body, headers=auth)
            for route in ("/ask", "/ask/stream")
        }
        assert stable(seen["/ask"].json()) == stable(alone["/ask"].json())
        assert sse_events(seen["/ask/stream"].text) == sse_events(alone["/ask/stream"].text)
        answer = seen["/ask"].json()
        assert not any(c["chunk_id"].startswith("salary-bands#") for c in answer["citations"])
        for text in (
            json.dumps({k: v for k, v in answer.items() if k != "searched_for"}),
            seen["/ask/stream"].text,
        ):
            for mark in hidden_marks(groups):
                assert mark not in text, (key, mark)
            assert "92000" not in text and "15 percent" not in text
