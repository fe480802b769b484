"""Module-scoped fixtures are built offline too, not from the machine's environment."""

from __future__ import annotations

import os

import pytest

from rag.config import get_settings, load_settings


@pytest.fixture(scope="module")
def module_settings() -> dict[str, object]:
    # what an app or store built once per module would read
    get_settings.cache_clear()
    settings = load_settings()
    return {
        "dense": settings.dense,
        "mock": settings.mock,
        "anthropic_key": bool(settings.anthropic_api_key),
        "voyage_key": bool(settings.voyage_api_key),
        "db_is_private": os.environ.get("RAG_DB", "") != "",
    }


def test_a_module_fixture_reads_the_offline_environment(module_settings: dict[str, object]) -> None:
    assert module_settings == {
        "dense": "off",
        "mock": True,
        "anthropic_key": False,
        "voyage_key": False,
        "db_is_private": True,
    }


def test_a_test_body_sees_the_same_offline_values() -> None:
    # the function fixture still sets them per test, on top of the module's
    assert os.environ["RAG_DENSE"] == "off"
    assert os.environ["MOCK"] == "1"
