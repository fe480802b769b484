"""Identifier-aware lexical search: a question naming a code identifier retrieves the chunk that
defines it first, over a small corpus of reference pages, guides and release notes that also
mention the identifiers in passing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rag.answer.rerank import LexicalReranker
from rag.answer.retrieve import retrieve
from rag.config import load_settings
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

SETTINGS_RST = """\
==================
Settings reference
==================

Every setting has a default; override it in your settings module.

Cookies
=======

``SESSION_COOKIE_AGE``
----------------------

:Default: ``1209600`` (two weeks, in seconds)

The age of session cookies, in seconds.

``SESSION_COOKIE_SAMESITE``
---------------------------

:Default: ``'Lax'``

The value of the SameSite flag on the session cookie. This flag prevents the
cookie from being sent in cross-site requests, which limits CSRF attacks. The CSRF
cookie has its own SameSite setting; a CSRF token still protects forms.

``SESSION_COOKIE_SECURE``
-------------------------

:Default: ``False``

Whether to mark the session cookie as secure, so browsers send it only over HTTPS.

``CSRF_COOKIE_SAMESITE``
------------------------

:Default: ``'Lax'``

The value of the SameSite flag on the CSRF cookie. See the session setting for
the meaning of the values.
"""

SECURITY_MD = """\
# Security checklist

## Cookies

Before going live, review the cookie settings: the session cookie should be secure, and
the SameSite flag limits cross-site requests. Set SESSION_COOKIE_SECURE to True on HTTPS sites
and keep SESSION_COOKIE_SAMESITE at its default unless a third-party login needs cookies.
Session cookies and CSRF cookies are configured separately.

## Passwords

Use a slow password hasher and never log passwords.
"""

CONFIG_MD = """\
# Configuration handling

## Loading from objects

`Config.from_object(obj)` updates the config from the upper-case attributes of the given
object. Objects are usually modules or classes; a string is imported first, so
`app.config.from_object("yourapp.default_settings")` loads a module by its dotted name.
Attributes in lower case are ignored.

## Loading from files

`Config.from_pyfile(filename)` executes a Python file and loads its upper-case names into the
config. A missing file raises an error unless `silent=True` is passed.
"""

TUTORIAL_MD = """\
# Tutorial: the application factory

## Creating the app

The factory creates the app object and loads the configuration. Load defaults from an object
first, then override them from a file kept out of version control:
`app.config.from_pyfile("instance.cfg", silent=True)`. Configuration can come from an object,
a file or environment variables; pick one place for each value.

## Running the server

Start the server with `orbit run --max-connections 50 --reload` while you develop.
"""

CLI_RST = """\
=============
Command line
=============

``orbit run``
=============

Starts the development server.

``--max-connections``
---------------------

:Default: ``100``

The largest number of connections the server accepts at once; further clients wait.

``--reload``
------------

Restarts the server when a source file changes.
"""

MIDDLEWARE_MD = """\
# Middleware

## SessionMiddleware

Loads the visitor's session before the view runs and saves it afterwards.

## AuthMiddleware

Attaches the signed-in user to each request. It reads the user id from the session, so the
session middleware must run before the auth middleware; without a session the user is anonymous.
"""

RELEASE_MD = """\
# Release notes

## Version 4.2

The default of SESSION_COOKIE_SAMESITE stays 'Lax'. CSRF_COOKIE_SAMESITE now accepts 'None'.
The server's --max-connections default rose from 50. `Config.from_object` now ignores private
names. Connections, cookies and sessions are faster overall.
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    root = tmp_path_factory.mktemp("identifiers")
    docs = root / "docs"
    docs.mkdir()
    for name, text in [
        ("settings.rst", SETTINGS_RST),
        ("security.md", SECURITY_MD),
        ("config.md", CONFIG_MD),
        ("tutorial.md", TUTORIAL_MD),
        ("cli.rst", CLI_RST),
        ("release-notes.md", RELEASE_MD),
        ("middleware.md", MIDDLEWARE_MD),
    ]:
        (docs / name).write_text(text)
    s = SqliteStore(str(root / "identifiers.db"))
    report = ingest_paths(s, [docs], settings=load_settings())
    assert report.skipped == ()
    yield s
    s.close()


def _top(store: SqliteStore, question: str) -> tuple[str, str]:
    best = retrieve(question, store=store, reranker=LexicalReranker(), top_k=5)[0].chunk
    return best.doc_id, best.section


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What does SESSION_COOKIE_SAMESITE control?", ("settings", "Cookies > SESSION_COOKIE_SAMESITE")),
        ("What is the default of CSRF_COOKIE_SAMESITE?", ("settings", "Cookies > CSRF_COOKIE_SAMESITE")),
        ("What is CSRF_COOKIE_SAMESITE?", ("settings", "Cookies > CSRF_COOKIE_SAMESITE")),
        ("What does SessionMiddleware do?", ("middleware", "SessionMiddleware")),
        ("What is AuthMiddleware for?", ("middleware", "AuthMiddleware")),
        ("what is session_cookie_age", ("settings", "Cookies > SESSION_COOKIE_AGE")),
        ("How does app.config.from_object load configuration?", ("config", "Loading from objects")),
        ("What does Config.from_pyfile do?", ("config", "Loading from files")),
        ("What does --max-connections set?", ("cli", "orbit run > --max-connections")),
    ],
)
def test_question_naming_an_identifier_ranks_its_defining_chunk_first(
    store: SqliteStore, question: str, expected: tuple[str, str]
) -> None:
    assert _top(store, question) == expected


def test_identifier_parts_still_match_prose(store: SqliteStore) -> None:
    # no identifier in the question: its words reach the chunks whose identifiers hold them
    assert _top(store, "Which cookie setting limits cross-site requests with the SameSite flag?")[0] in {
        "settings",
        "security",
    }
