"""The installed `rag` command, driven as a user would: a subprocess of the venv's `rag` script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rag.cli.database import describe_database
from rag.config import load_settings

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures" / "corpus"
RAG = Path(sys.executable).parent / "rag"
ANSWERED = "How long do deleted projects stay in the trash?"
UNKNOWN = "What is the capital of Australia?"

pytestmark = pytest.mark.skipif(not RAG.is_file(), reason="the rag script is not installed beside python")


def run(*args: str, db: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    environ.update(RAG_DB=str(db), MOCK="1", RAG_DENSE="off")  # dense retrieval where a test turns it on
    environ.update(env)
    return subprocess.run(
        [str(RAG), *args], capture_output=True, text=True, env=environ, cwd=ROOT, timeout=120, check=False
    )


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the bundled corpus, ingested through `rag ingest`."""
    db = tmp_path_factory.mktemp("cli") / "filled.db"
    result = run("ingest", str(CORPUS), db=db)
    assert result.returncode == 0, result.stderr
    assert f"database: {db}" in result.stdout
    return db


def test_rag_ask_without_database_names_it_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    result = run("ask", ANSWERED, db=db)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and str(db) in lines[0] and "rag ingest" in lines[0]
    assert not db.exists()


def test_rag_ask_on_empty_database_says_so_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    empty_dir = tmp_path / "nothing"
    empty_dir.mkdir()
    assert run("ingest", str(empty_dir), db=db).returncode == 4  # nothing ingested, said in its status
    result = run("ask", ANSWERED, db=db)
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert f"the database {db} holds no documents" in lines[0] and "rag ingest" in lines[0]


def test_rag_chunk_and_gaps_name_the_database_they_read(filled: Path) -> None:
    shown = run("chunk", "user-manual#c06", db=filled)
    assert shown.returncode == 0 and f"database: {filled}" in shown.stdout
    missing = run("chunk", "nope#c00", db=filled)
    assert missing.returncode == 1 and f"unknown chunk 'nope#c00' in {filled}" in missing.stderr
    gaps = run("gaps", db=filled)
    assert gaps.returncode == 0 and str(filled) in gaps.stdout


def test_rag_ask_stream_json_prints_one_json_object_per_event(filled: Path) -> None:
    result = run("ask", "--stream", "--json", ANSWERED, db=filled)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    names = [e["event"] for e in events]
    assert names[0] == "meta" and names[-1] == "done" and "sentence" in names
    assert all(set(e) == {"event", "data"} for e in events)
    assert events[-1]["data"]["status"] == "answered"
    whole = json.loads(run("ask", "--json", ANSWERED, db=filled).stdout)
    streamed = [e["data"]["text"] for e in events if e["event"] == "sentence"]
    assert streamed == [s["text"] for s in whole["sentences"]]


def test_rag_ask_stream_json_refusal_is_an_event(filled: Path) -> None:
    result = run("ask", "--stream", "--json", UNKNOWN, db=filled)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["event"] for e in events] == ["refusal", "done"]
    assert events[0]["data"]["reason"] == "low_retrieval_score"


def test_rag_ask_exit_codes_with_and_without_fail_on_refusal(filled: Path) -> None:
    assert run("ask", UNKNOWN, db=filled).returncode == 0
    assert run("ask", "--fail-on-refusal", UNKNOWN, db=filled).returncode == 3
    assert run("ask", "--stream", "--fail-on-refusal", UNKNOWN, db=filled).returncode == 3
    assert run("ask", "--fail-on-refusal", ANSWERED, db=filled).returncode == 0
    assert run("ask", "--stream", "--json", "--fail-on-refusal", ANSWERED, db=filled).returncode == 0
    assert run("ask", "--no-such-option", ANSWERED, db=filled).returncode == 2
    assert run("ask", "   ", db=filled).returncode == 1


def test_rag_ask_help_documents_exit_codes() -> None:
    result = subprocess.run([str(RAG), "ask", "--help"], capture_output=True, text=True, check=False)
    assert "--fail-on-refusal" in result.stdout
    assert "Exit status:" in result.stdout and "3  refused" in result.stdout


def test_rag_ask_invalid_utf8_argument_is_a_one_line_error(filled: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    environ.update(RAG_DB=str(filled), MOCK="1", RAG_DENSE="off")
    result = subprocess.run(
        [os.fsencode(RAG), b"ask", b"trash \xff"], capture_output=True, env=environ, timeout=120, check=False
    )
    err = result.stderr.decode("utf-8", "replace").strip().splitlines()
    assert result.returncode == 1 and len(err) == 1
    assert "not valid UTF-8" in err[0] and "0xff" in err[0]


@pytest.mark.parametrize(
    "question",
    ["trash\x07\x1b[31m days", "\u202etrash\u202c days", "\U0001f600" * 2000],
)
def test_rag_ask_odd_text_gets_an_answer_or_one_line_error(filled: Path, question: str) -> None:
    result = run("ask", "--json", question, db=filled)
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    if result.returncode == 0:
        assert "abstained" in json.loads(result.stdout)


def test_describe_database_hides_credentials() -> None:
    settings = load_settings(database_url="postgresql://rag:s3cret@db.internal:5433/rag?sslmode=require")
    assert describe_database(settings) == "postgresql://db.internal:5433/rag"
    assert describe_database(load_settings(db="data/x.db")) == "data/x.db"


def _dry_run(target: str) -> str:
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    result = subprocess.run(
        [make, "-n", "-B", "-C", str(ROOT), target, "VENV=/nonexistent/venv"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_run_installs_only_the_service_and_shows_progress() -> None:
    installs = [line for line in _dry_run("run").splitlines() if "pip install" in line]
    assert installs and all("[test" not in line and "[dev" not in line for line in installs)
    assert all(" -q" not in line for line in installs)
    assert any("takes about" in line for line in _dry_run("run").splitlines())


def test_make_test_installs_the_test_extras() -> None:
    installs = [line for line in _dry_run("test").splitlines() if "pip install" in line]
    assert any(".[test,dev]" in line for line in installs)


@pytest.mark.postgres
def test_rag_ask_on_empty_postgres_names_the_url_without_credentials(tmp_path: Path) -> None:
    import uuid
    from urllib.parse import quote, urlsplit

    url = os.environ.get("RAG_TEST_DATABASE_URL", "")
    if not url:
        pytest.skip("RAG_TEST_DATABASE_URL is not set")
    psycopg = pytest.importorskip("psycopg")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        sep = "&" if "?" in url else "?"
        scoped = f"{url}{sep}options={quote(f'-csearch_path={schema},public')}"
        result = run("ask", ANSWERED, db=tmp_path / "unused.db", RAG_DATABASE_URL=scoped)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    parts = urlsplit(url)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert f"postgresql://{parts.hostname}:{parts.port}{parts.path} holds no documents" in lines[0]
    assert f":{parts.password}@" not in lines[0] and "@" not in lines[0] and "search_path" not in lines[0]


def test_rag_chat_answers_a_follow_up_with_the_earlier_turns_and_starts_over_on_new(filled: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    environ.update(RAG_DB=str(filled), MOCK="1", RAG_DENSE="off")
    lines = f"{ANSWERED}\nWho can restore them?\n/new\nWho can restore them?\n\n"
    result = subprocess.run(
        [str(RAG), "chat", "--json"],
        input=lines,
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["question"] for a in answers] == [ANSWERED, "Who can restore them?", "Who can restore them?"]
    assert "30 days" in answers[0]["text"]
    # the follow-up searched with the earlier subject; after /new it stands alone again
    assert answers[1]["searched_for"] == "Who can restore them (deleted projects stay)?"
    assert answers[2]["searched_for"] == "Who can restore them?"
    text = subprocess.run(
        [str(RAG), "chat"],
        input=f"{ANSWERED}\nWho can restore them?\n",
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert "Searched for: Who can restore them (deleted projects stay)?" in text.stdout
    assert "Deleted projects stay in the trash for 30 days [1]." in text.stdout
    assert "user-manual#c06" in text.stdout.split("Searched for:")[1]  # the follow-up's closest passage


def test_rag_chat_bad_turn_is_a_one_line_error_and_the_loop_goes_on(filled: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    environ.update(RAG_DB=str(filled), MOCK="1", RAG_DENSE="off", RAG_MAX_QUESTION_CHARS="60")
    lines = f"{'x' * 80}\n{ANSWERED}\n"
    result = subprocess.run(
        [str(RAG), "chat", "--json"],
        input=lines,
        capture_output=True,
        text=True,
        env=environ,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == ["error: question is 80 characters long; the limit is 60"]
    [answer] = [json.loads(line) for line in result.stdout.splitlines()]
    assert "30 days" in answer["text"]
