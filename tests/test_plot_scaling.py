"""The ingest-scaling plot (issue 29): each store's points and its linear reference drawn as SVG."""

from __future__ import annotations

from pathlib import Path

from benchmarks.plot_scaling import by_store, plot

POINTS = [
    {"store": "postgres", "docs": 10000, "seconds": 90.0},
    {"store": "sqlite", "docs": 10000, "seconds": 25.0},
    {"store": "sqlite", "docs": 1000, "seconds": 2.5},
    {"store": "postgres", "docs": 1000, "seconds": 9.0},
]


def test_points_are_grouped_by_store_fewest_documents_first() -> None:
    assert by_store(POINTS) == {
        "postgres": [(1000.0, 9.0), (10000.0, 90.0)],
        "sqlite": [(1000.0, 2.5), (10000.0, 25.0)],
    }


def test_the_plot_is_an_svg_naming_both_stores_and_their_linear_lines(tmp_path: Path) -> None:
    out = tmp_path / "scaling.svg"
    plot(POINTS, out)
    text = out.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    for label in ("SQLite ingest", "PostgreSQL ingest", "SQLite, linear", "PostgreSQL, linear"):
        assert label in text
