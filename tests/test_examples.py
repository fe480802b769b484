"""Example questions: their wording (`rag.examples`) and the pools of answered ones `GET /examples`
offers (`rag.api.examples`): every chip offered is one `/ask` answers, for the caller who sees it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from test_api import CORPUS, serve_app

from rag.access import Principal
from rag.answer.pipeline import Pipeline, build_pipeline
from rag.api import create_app
from rag.api.examples import POOL_SIZE, ExamplePools
from rag.config import load_settings
from rag.examples import Example, answered, brand_words, candidate_questions, candidates, pick, word_question
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore
from rag.types import Answer, Heading

SEEDS = (0, 1, 2, 7, 42)


def heading(section: str, *, doc_id: str = "d", title: str = "Team Handbook") -> Heading:
    return Heading(doc_id=doc_id, title=title, section=section, chunks=1)


def ready_examples(
    client: TestClient, headers: dict[str, str] | None = None, **params: Any
) -> list[dict[str, Any]]:
    """`GET /examples` asked again while the server is still asking its candidates (`pending`)."""
    deadline = time.monotonic() + 120
    while True:
        response = client.get("/examples", params=params, headers=headers or {})
        assert response.status_code == 200, response.text
        body = response.json()
        if not body["pending"]:
            examples: list[dict[str, Any]] = body["examples"]
            return examples
        assert time.monotonic() < deadline, "examples still pending after two minutes"
        time.sleep(0.05)


# ---------------------------------------------------------------- wording


def test_word_question_keeps_a_question_heading_as_written() -> None:
    assert word_question(heading("Billing > Can I get a refund after a year?")) == (
        0,
        "Can I get a refund after a year?",
    )


@pytest.mark.parametrize(
    ("section", "question"),
    [
        ("Accounts > How to reset a password", "How do I reset a password?"),
        ("Projects > Archiving a project", "How do I archive a project?"),
        ("Running an import again", "How do I run an import again?"),
        ("Importing from a spreadsheet", "How do I import from a spreadsheet?"),
        ("Tasks > Create a task", "How do I create a task?"),
        ("Step 5: Connect your tools", "How do I connect my tools?"),
        ("2. Install the mobile apps", "How do I install the mobile apps?"),
    ],
)
def test_word_question_asks_how_do_i_for_how_to_gerund_and_imperative_headings(
    section: str, question: str
) -> None:
    assert word_question(heading(section)) == (1, question)


@pytest.mark.parametrize("section", ["Working hours", "Billing and invoices", "Audit log", "Coming next"])
def test_word_question_does_not_read_a_noun_heading_as_a_verb(section: str) -> None:
    assert not any(q.startswith("How do I") for _, q in candidate_questions(heading(section)))


def test_word_question_topic_heading_names_the_kind_of_document() -> None:
    worded = word_question(heading("Hotels", title="Zentrix Travel Policy"), brands=frozenset({"zentrix"}))
    assert worded == (3, "What does the travel policy say about hotels?")
    assert word_question(heading("Limits > Maximum upload size", title="Admin Guide")) == (
        3,
        "What does the admin guide say about maximum upload size?",
    )


def test_word_question_turns_an_imperative_topic_into_its_gerund() -> None:
    worded = candidate_questions(heading("Step 4: Enforce SSO", title="SSO Setup Guide"))
    assert (3, "What does the SSO setup guide say about enforcing SSO?") in worded


def test_word_question_defines_a_topic_from_the_sections_own_opening_sentence() -> None:
    opening = "Service credits are refunds of part of a month's fee. They are paid on request."
    worded = candidate_questions(heading("Service credits", title="Pricing"), opening)
    assert worded[0] == (2, "What are service credits?")
    assert (2, "What is the audit log?") in candidate_questions(
        heading("Audit log"), "The audit log is a record of every sign-in, kept for a year."
    )
    # an opening that does not define the heading's topic gives no definition question
    assert not any(
        form == 2
        for form, _ in candidate_questions(heading("Free trial"), "Every workspace starts on a trial.")
    )


def test_word_question_keeps_acronym_and_strips_numbering_and_markup() -> None:
    worded = word_question(heading("3.2 **SSO** enforcement:", title="The Security Guide"))
    assert worded == (3, "What does the security guide say about SSO enforcement?")


@pytest.mark.parametrize(
    "title", ["About Brightwater", "Weekly meeting — 6 May 2026", "Plans and Pricing", "Getting started"]
)
def test_word_question_never_names_a_title_that_does_not_read_as_a_name(title: str) -> None:
    assert word_question(heading("Customers first", title=title)) is None


@pytest.mark.parametrize(
    "section",
    ["", "Overview", "See also", "Action items", "2024", "Team Handbook", "x" * 81, "Q3"],
)
def test_word_question_skips_layout_figures_titles_and_long_headings(section: str) -> None:
    assert word_question(heading(section)) is None


def test_brand_words_are_the_capitalised_words_many_titles_share() -> None:
    titles = [f"Zentrix {topic} Guide" for topic in ("Admin", "User", "Mobile")]
    titles += [f"{topic} Policy" for topic in ("Travel", "Leave", "Expense", "Remote Work", "Security")]
    assert brand_words(titles) == frozenset({"zentrix"})


# Wordings no person types: the old "..., in the details?", a doubled space or question mark, "How do I"
# before a word that cannot follow it.
_ODD = re.compile(r", in the details|\s{2}|\?.+\?$|^How do I (?:can|the|is|do|does|a|an|I)\b")


def _bundled_headings() -> tuple[list[Heading], dict[str, dict[str, str]]]:
    store = SqliteStore(":memory:")
    try:
        ingest_paths(store, [str(CORPUS)], settings=load_settings(db=":memory:", mock=True))
        headings = store.headings(1000)
        openings: dict[str, dict[str, str]] = {}
        for doc_id in {h.doc_id for h in headings}:
            for chunk in store.document_chunks(doc_id):
                openings.setdefault(doc_id, {}).setdefault(chunk.section, chunk.text)
    finally:
        store.close()
    return headings, openings


def test_every_candidate_on_the_bundled_corpus_reads_as_a_question_a_person_would_type() -> None:
    headings, openings = _bundled_headings()
    worded = [e for group in candidates(headings, lambda d: openings.get(d, {})) for e in group]
    assert len({e.doc_id for e in worded}) >= 20
    for example in worded:
        question = example.question
        assert question.endswith("?") and question[0].isupper(), question
        assert not _ODD.search(question), question
        # the document is named at most once, and never by its whole title when the title is long
        title = example.title.casefold()
        assert question.casefold().count(title) <= (1 if len(title.split()) <= 4 else 0), question


# ---------------------------------------------------------------- asking, pools


def _examples(n: int) -> list[list[Example]]:
    return [
        [Example(question=f"Question {d}.{k}?", doc_id=f"d{d}", title="T", section=f"S{k}") for k in range(3)]
        for d in range(n)
    ]


def test_answered_keeps_one_per_document_and_never_asks_more_than_allowed() -> None:
    asked: list[str] = []

    def answers(question: str) -> bool:
        asked.append(question)
        return question.endswith(".1?")  # each document's second candidate answers

    kept = answered(_examples(10), answers, keep=3, max_asks=100)
    assert [e.question for e in kept] == ["Question 0.1?", "Question 1.1?", "Question 2.1?"]
    assert len(asked) == 6
    asked.clear()
    assert len(answered(_examples(10), answers, keep=12, max_asks=5)) == 2
    assert len(asked) == 5


def test_pick_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    pool = [group[0] for group in _examples(12)]
    assert pick(pool, limit=4, seed=3) == pick(pool, limit=4, seed=3)
    assert len({tuple(e.doc_id for e in pick(pool, limit=4, seed=s)) for s in range(6)}) > 1
    assert len(pick(pool, limit=20)) == 12


@dataclass
class CountingAsker:
    """The pipeline's answer core, counting the questions asked and what each was asked with."""

    pipeline: Pipeline
    asked: list[tuple[str, frozenset[str] | None, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    go: threading.Event = field(default_factory=threading.Event)  # cleared: each ask waits for it

    def __post_init__(self) -> None:
        self.go.set()

    @property
    def generator(self) -> Any:
        return self.pipeline.generator

    def answer(self, question: str, *, principal: Principal | None = None, record: bool = True) -> Answer:
        with self.lock:
            self.asked.append((question, principal.reads if principal else None, record))
        assert self.go.wait(60)
        return self.pipeline.answer(question, principal=principal, record=record)


def _write_corpus(folder: Path, extra: str = "") -> None:
    folder.mkdir(exist_ok=True)
    (folder / "rooms.md").write_text(
        "# Office handbook\n\n## Booking a meeting room\n\nMeeting rooms are booked in the shared calendar.\n"
        "A booking can last at most four hours.\n" + extra
    )
    (folder / "leave.md").write_text(
        "# Leave policy\n\n## How many vacation days do I get?\n\n"
        "Every employee gets 25 vacation days a year.\n"
    )


@pytest.fixture
def small(tmp_path: Path) -> Iterator[tuple[SqliteStore, CountingAsker, Path]]:
    folder = tmp_path / "docs"
    _write_corpus(folder)
    settings = load_settings(db=str(tmp_path / "s.db"), mock=True)
    store = SqliteStore(settings.db)
    ingest_paths(store, [folder], settings=settings)
    try:
        yield store, CountingAsker(build_pipeline(settings, store=store)), folder
    finally:
        store.close()


def _drawn(pools: ExamplePools, principal: Principal) -> list[Example]:
    found = pools.draw(principal, limit=POOL_SIZE, seed=0, wait=60)
    assert found is not None
    return found


def test_pool_is_asked_once_per_corpus_version_and_rebuilt_after_an_ingest_changes_it(
    small: tuple[SqliteStore, CountingAsker, Path],
) -> None:
    store, asker, folder = small
    pools = ExamplePools(store, asker, asks=40)
    reader = Principal.anonymous()
    first = _drawn(pools, reader)
    assert {e.doc_id for e in first} == {"rooms", "leave"}
    asks = len(asker.asked)
    assert asks >= 2
    version = store.corpus_version()
    # reused: the same pool for the same corpus, reader and groups, nothing asked again
    assert _drawn(pools, reader) == first and len(asker.asked) == asks
    ingest_paths(store, [folder], settings=load_settings(db=store.path, mock=True))  # unchanged: no write
    assert store.corpus_version() == version
    assert _drawn(pools, reader) == first and len(asker.asked) == asks
    _write_corpus(folder, extra="\n## Cancelling a booking\n\nA booking is cancelled in the calendar.\n")
    ingest_paths(store, [folder], settings=load_settings(db=store.path, mock=True))
    assert store.corpus_version() != version
    _drawn(pools, reader)
    assert len(asker.asked) > asks


def test_while_the_next_pool_is_built_the_last_one_is_offered_without_documents_now_hidden(
    small: tuple[SqliteStore, CountingAsker, Path],
) -> None:
    store, asker, folder = small
    pools = ExamplePools(store, asker, asks=40)
    reader = Principal.anonymous()
    assert {e.doc_id for e in _drawn(pools, reader)} == {"rooms", "leave"}
    leave = (folder / "leave.md").read_text()
    (folder / "leave.md").write_text("---\naccess: [hr]\n---\n" + leave)
    ingest_paths(store, [folder], settings=load_settings(db=store.path, mock=True))
    asker.go.clear()  # the next build waits on its first ask
    try:
        stale = pools.draw(reader, limit=POOL_SIZE, seed=0, wait=0.0)
        assert stale is not None and {e.doc_id for e in stale} == {"rooms"}
        # a build still running is not started again for the same audience
        assert pools.draw(reader, limit=POOL_SIZE, seed=0, wait=0.0) == stale
    finally:
        asker.go.set()
    assert {e.doc_id for e in _drawn(pools, reader)} == {"rooms"}


def test_pool_probes_are_not_written_to_the_ask_log_or_the_gap_queue(
    small: tuple[SqliteStore, CountingAsker, Path],
) -> None:
    store, asker, _ = small
    _drawn(ExamplePools(store, asker, asks=40), Principal.anonymous())
    assert asker.asked and all(record is False for _, _, record in asker.asked)
    assert store.recent_asks(100) == [] and store.gaps(100) == []


def test_pool_never_asks_more_than_its_limit(small: tuple[SqliteStore, CountingAsker, Path]) -> None:
    store, asker, _ = small
    _drawn(ExamplePools(store, asker, asks=1), Principal.anonymous())
    assert len(asker.asked) == 1


def test_claude_reading_has_its_own_small_ask_limit() -> None:
    offline = load_settings(mock=True)
    claude = load_settings(mock=False, anthropic_api_key="sk-test")
    assert offline.example_asks == offline.examples_asks == 40
    assert claude.example_asks == claude.examples_asks_claude == 8


# ---------------------------------------------------------------- the route, on the bundled corpus


@pytest.fixture(scope="module")
def client(corpus_db: str) -> Iterator[TestClient]:
    with serve_app(corpus_db) as c:
        yield c


@pytest.mark.parametrize("seed", SEEDS)
def test_every_example_offered_on_the_bundled_corpus_is_answered_through_ask(
    client: TestClient, seed: int
) -> None:
    offered = ready_examples(client, limit=4, seed=seed)
    assert len(offered) == 4
    assert len({e["doc_id"] for e in offered}) == 4
    for example in offered:
        answer = client.post("/ask", json={"question": example["question"]}).json()
        assert answer["abstained"] is False, (example["question"], answer["reason"])
    assert ready_examples(client, limit=4, seed=seed) == offered


def test_every_example_of_the_whole_pool_is_answered_through_the_stream_too(client: TestClient) -> None:
    offered = ready_examples(client, limit=POOL_SIZE, seed=0)
    assert len(offered) == POOL_SIZE
    for example in offered:
        with client.stream("POST", "/ask/stream", json={"question": example["question"]}) as response:
            body = "".join(response.iter_text())
        assert '"status": "answered"' in body or '"status":"answered"' in body, example["question"]


def test_examples_route_answers_pending_while_the_pool_is_built(tmp_path: Path, corpus_db: str) -> None:
    with serve_app(corpus_db) as c:
        first = c.get("/examples", params={"limit": 4}).json()
        assert set(first) == {"examples", "pending"}
        assert first["pending"] or len(first["examples"]) == 4


# ---------------------------------------------------------------- access


def test_a_chip_never_rests_on_a_document_the_caller_may_not_read(tmp_path: Path) -> None:
    """A public heading asks what only a restricted document answers: the chip is offered to the
    group that may read the answer, never to a caller for whom asking it would be refused."""
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "faq.md").write_text(
        "# Office questions\n\n## How many weeks of notice does parental leave need?\n\n"
        "Ask the people team about parental leave.\n"
    )
    (corpus / "hr.md").write_text(
        "---\naccess: [hr]\n---\n# People handbook\n\n## Parental leave\n\n"
        "Parental leave needs eight weeks of notice.\n"
    )
    principals = '{"k-plain": {"name": "pat", "groups": []}, "k-hr": {"name": "alice", "groups": ["hr"]}}'
    settings = load_settings(db=str(tmp_path / "a.db"), mock=True, principals=principals, api_keys="")
    store = SqliteStore(settings.db)
    try:
        ingest_paths(store, [corpus], settings=settings)
        with TestClient(create_app(settings, pipeline=build_pipeline(settings, store=store))) as client:
            seen = {}
            for key in ("k-plain", "k-hr", "k-plain"):
                headers = {"Authorization": f"Bearer {key}"}
                offered = ready_examples(client, headers, limit=12)
                seen[key] = {e["question"] for e in offered}
                for example in offered:
                    answer = client.post(
                        "/ask", json={"question": example["question"]}, headers=headers
                    ).json()
                    assert answer["abstained"] is False
    finally:
        store.close()
    asked = "How many weeks of notice does parental leave need?"
    assert asked in seen["k-hr"]
    assert asked not in seen["k-plain"]
