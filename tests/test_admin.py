"""The content owners' `/admin` routes and the review logic behind them (rag.review)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_api import ANSWERABLE, CONFLICT, KEY, OFF_TOPIC, serve_app

from rag.review import group_refusals, to_csv
from rag.types import Gap

ADMIN = "admin-key-1"
NO_ANSWER = "Can I get my mobile phone bill reimbursed?"
# a server bound to loopback: without keys, the admin pages open only there
LOOPBACK = "http://127.0.0.1:8000"


def row(question: str, reason: str = "low_retrieval_score", **extra: Any) -> dict[str, Any]:
    return {"trace_id": f"t-{question[:6]}", "ts": "2026-05-01T10:00:00+00:00", "question": question,
            "reason": reason, "abstained": True, "blocks": [], "top_score": 0.2, **extra}  # fmt: skip


# ---------------------------------------------------------------- grouping


def test_group_refusals_groups_similar_wording_and_keeps_different_topics_apart() -> None:
    rows = [
        row("How do I export my workspace data?"),
        row("Can I export all workspace data?", "no_citations"),
        row("How do I delete my account?"),
        row("export workspace data"),
    ]
    groups = group_refusals(rows)
    assert [g.count for g in groups] == [3, 1]
    assert groups[0].reasons == {"low_retrieval_score": 2, "no_citations": 1}
    assert set(groups[0].questions) == {r["question"] for r in rows} - {"How do I delete my account?"}
    assert groups[1].question == "How do I delete my account?"


def test_group_refusals_closest_from_blocks_then_retrieval_then_gap_queue() -> None:
    rows = [
        row("Who approves travel?", "conflicting_sources", blocks=[[1, "a#c01"], [2, "b#c01"]]),
        row("Who approves travel budgets?", retrieval={"retrieved": [["c#c01", 0.3], ["a#c01", 0.2]]}),
        row("Who approves travel requests?"),
    ]
    gaps = [Gap(question="Who approves travel requests?", top_score=0.1, closest=("a#c01",), asked_at="")]
    (group,) = group_refusals(rows, gaps)
    assert group.closest == {"a#c01": 3, "b#c01": 1, "c#c01": 1}


def test_group_refusals_skips_answered_rows_and_groups_termless_questions_exactly() -> None:
    rows = [row("???"), row("?!"), row("Who?"), {**row("How long is the trash kept?"), "abstained": False}]
    assert sorted(g.count for g in group_refusals(rows)) == [1, 2]


def test_to_csv_neutralises_spreadsheet_formulas() -> None:
    text = to_csv([{"q": '=HYPERLINK("x")', "n": 1}, {"q": "-2+3", "n": None}], ["q", "n"])
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed == [["q", "n"], ['\'=HYPERLINK("x")', "1"], ["'-2+3", ""]]


# ---------------------------------------------------------------- routes


@pytest.fixture
def client(tmp_path: Path, corpus_db: str) -> Iterator[TestClient]:
    db = tmp_path / "admin.db"
    db.write_bytes(Path(corpus_db).read_bytes())
    with serve_app(str(db), base_url=LOOPBACK) as c:
        yield c


def asked(client: TestClient, question: str) -> str:
    response = client.post("/ask", json={"question": question})
    assert response.status_code == 200
    return response.headers["x-trace-id"]


def test_admin_summary_groups_every_refusal_line_and_lists_wrong_answers(client: TestClient) -> None:
    asked(client, OFF_TOPIC)
    asked(client, "What's the capital city of Australia?")
    asked(client, CONFLICT)
    asked(client, NO_ANSWER)
    answered = asked(client, ANSWERABLE)
    client.post(
        "/feedback", json={"trace_id": answered, "verdict": "wrong", "note": "Business keeps 90 days."}
    )
    data = client.get("/admin/api/summary").json()
    assert data["asks"] == 5 and data["answered"] == 1
    assert data["refusals"] == {"low_retrieval_score": 2, "conflicting_sources": 1, "no_citations": 1}
    top = data["groups"][0]
    assert top["count"] == 2 and top["reasons"] == {"low_retrieval_score": 2}
    assert {q["question"] for q in top["questions"]} == {OFF_TOPIC, "What's the capital city of Australia?"}
    conflict = next(g for g in data["groups"] if g["question"] == CONFLICT)
    assert len(conflict["closest"]) >= 2 and all(c["title"] for c in conflict["closest"])
    assert [r["question"] for r in data["recent_refusals"]] == [
        NO_ANSWER,
        CONFLICT,
        "What's the capital city of Australia?",
        OFF_TOPIC,
    ]
    (wrong,) = data["wrong"]
    assert (wrong["question"], wrong["note"], wrong["trace_id"]) == (
        ANSWERABLE,
        "Business keeps 90 days.",
        answered,
    )
    assert "30 days" in wrong["answer"]
    assert data["feedback"] == {"helpful": 0, "wrong": 1}


def test_admin_trace_view_shows_retrieval_threshold_blocks_verdicts_timings_usage(client: TestClient) -> None:
    trace = asked(client, ANSWERABLE)
    answer = client.post("/ask", json={"question": ANSWERABLE}).json()
    ready = client.get("/readyz").json()
    view = client.get(f"/admin/api/traces/{trace}").json()
    assert view["question"] == ANSWERABLE and view["abstained"] is False
    assert view["threshold"] == ready["min_score"] and view["reranker"] == ready["reranker"]
    scores = [r["score"] for r in view["retrieved"]]
    assert scores == sorted(scores, reverse=True) and scores[0] >= view["threshold"]
    assert [b["n"] for b in view["blocks"]] == [b["n"] for b in answer["blocks"]]
    assert {r["chunk_id"] for r in view["retrieved"] if r["sent_as"]} == {
        b["chunk_id"] for b in view["blocks"]
    }
    assert all(b["title"] for b in view["blocks"])
    assert any(v.startswith("draft 1 ok") for v in view["verdicts"])
    assert view["timings"]["total"] > 0 and "retrieve" in view["timings"]
    assert set(view["usage"]) >= {"calls", "input_tokens", "output_tokens", "retries"}


def test_admin_trace_view_of_a_refusal_before_generation_has_no_drafts(client: TestClient) -> None:
    view = client.get(f"/admin/api/traces/{asked(client, 'Who won the football match last night?')}").json()
    assert view["reason"] == "low_retrieval_score"
    assert view["blocks"] == [] and view["verdicts"] == []
    assert view["retrieved"] and all(r["score"] < view["threshold"] for r in view["retrieved"])


def test_admin_trace_unknown_id_is_404(client: TestClient) -> None:
    response = client.get("/admin/api/traces/no-such-trace")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found"


def test_admin_export_csv_and_json_hold_the_same_rows(client: TestClient) -> None:
    asked(client, OFF_TOPIC)
    asked(client, '=HYPERLINK("http://evil.test","x")')
    as_csv = client.get("/admin/api/export", params={"what": "refusals", "format": "csv"})
    assert as_csv.headers["content-type"].startswith("text/csv")
    assert 'filename="rag-refusals.csv"' in as_csv.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(as_csv.text)))
    as_json = client.get("/admin/api/export", params={"what": "refusals", "format": "json"}).json()
    assert [r["trace_id"] for r in rows] == [r["trace_id"] for r in as_json]
    assert rows[0]["question"] == "'" + as_json[0]["question"]
    assert rows[1]["question"] == OFF_TOPIC
    asks = client.get("/admin/api/export", params={"what": "asks", "format": "csv"}).text
    assert asks.splitlines()[0].startswith("trace_id,ts,question,reason,abstained")
    assert client.get("/admin/api/export", params={"what": "users"}).status_code == 422


def test_admin_page_is_served_and_public(corpus_db: str) -> None:
    with serve_app(corpus_db, api_keys=KEY, admin_keys=ADMIN) as c:
        page = c.get("/admin")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "/static/admin.js" in page.text


@pytest.mark.parametrize(
    ("api_keys", "admin_keys", "sent", "status"),
    [
        ("", "", None, 200),
        (KEY, "", KEY, 403),
        (KEY, ADMIN, None, 401),
        (KEY, ADMIN, KEY, 403),
        (KEY, ADMIN, "wrong", 403),
        (KEY, ADMIN, ADMIN, 200),
        ("", ADMIN, None, 401),
        ("", ADMIN, ADMIN, 200),
    ],
)
def test_admin_data_needs_an_admin_key_when_keys_are_configured(
    corpus_db: str, api_keys: str, admin_keys: str, sent: str | None, status: int
) -> None:
    headers = {"Authorization": f"Bearer {sent}"} if sent else {}
    with serve_app(corpus_db, api_keys=api_keys, admin_keys=admin_keys, base_url=LOOPBACK) as c:
        for path in ("/admin/api/summary", "/admin/api/export", "/admin/api/traces/x"):
            response = c.get(path, headers=headers)
            expected = 404 if status == 200 and path.endswith("/x") else status
            assert response.status_code == expected, (path, response.text)
            if status == 401:
                assert response.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("base_url", ["http://192.0.2.10:8000", "http://testserver"])
def test_admin_data_without_keys_is_closed_off_loopback(corpus_db: str, base_url: str) -> None:
    with serve_app(corpus_db, base_url=base_url) as c:
        for path in ("/admin/api/summary", "/admin/api/export", "/admin/api/traces/x"):
            response = c.get(path)
            assert response.status_code == 403 and "loopback" in response.text, path


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:8000", "http://[::1]:8000", "http://localhost"])
def test_admin_data_without_keys_is_open_on_loopback(corpus_db: str, base_url: str) -> None:
    with serve_app(corpus_db, base_url=base_url) as c:
        assert c.get("/admin/api/summary").status_code == 200


def test_admin_routes_document_their_errors_and_the_csv_export(corpus_db: str) -> None:
    with serve_app(corpus_db, api_keys=KEY, admin_keys=ADMIN) as c:
        paths = c.get("/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).json()["paths"]
    assert {"401", "403", "404"} <= set(paths["/admin/api/traces/{trace_id}"]["get"]["responses"])
    assert {"401", "403"} <= set(paths["/admin/api/summary"]["get"]["responses"])
    export = paths["/admin/api/export"]["get"]["responses"]
    assert {"text/csv", "application/json"} <= set(export["200"]["content"]) and "403" in export
