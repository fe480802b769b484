"""Ingest seconds against documents, per store, on log-log axes, with the line a linear cost would
follow from each store's smallest point (issue 29's plot).

    python -m benchmarks.plot_scaling POINTS.json OUT.svg

POINTS.json holds `{"points": [{"store", "docs", "seconds", ...}, ...]}`: what
`python -m benchmarks.bench_scale --json POINTS.json` writes, or docs/scaling_points.json (the figures
recorded in docs/scaling.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}


def by_store(points: list[dict[str, Any]]) -> dict[str, list[tuple[float, float]]]:
    """Each store's (documents, seconds), fewest documents first."""
    out: dict[str, list[tuple[float, float]]] = {}
    for p in points:
        out.setdefault(str(p["store"]), []).append((float(p["docs"]), float(p["seconds"])))
    return {store: sorted(xy) for store, xy in out.items()}


def plot(points: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for store, xy in by_store(points).items():
        docs, seconds = zip(*xy, strict=True)
        (line,) = ax.plot(docs, seconds, marker="o", label=f"{LABELS.get(store, store)} ingest")
        first_docs, first_seconds = xy[0]
        linear = [first_seconds * d / first_docs for d in docs]
        name = LABELS.get(store, store)
        ax.plot(docs, linear, linestyle=":", color=line.get_color(), label=f"{name}, linear")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents ingested (five sections each)")
    ax.set_ylabel("wall seconds, fresh store")
    ax.set_title("Ingest cost against store size")
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, format="svg", metadata={"Date": None})
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    points = json.loads(Path(argv[0]).read_text(encoding="utf-8"))["points"]
    plot(points, Path(argv[1]))
    print(f"wrote {argv[1]} ({len(points)} points)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
