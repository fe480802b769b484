"""`rag eval`: run the golden set (or an external set, or a threshold sweep) and report.

The golden set runs against a private copy of the store, never the user's database
(the pipeline logs asks and coverage gaps): a copy of `settings.db` when it already
holds every chunk the set cites, else a fresh temporary ingest of `fixtures/corpus`.
With an explicit `corpus` (e.g. a held-out set in another domain) that directory is always
ingested fresh, so chunk ids that happen to exist in the user's store are never mixed in.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.config import Settings
from rag.evals.datasets import GoldenCase, load_golden, repo_root
from rag.evals.metrics import Outcome, diagnose, golden_metrics, supports
from rag.types import Answer

DEFAULT_SET = "fixtures/eval/golden.jsonl"
CORPUS_DIR = "fixtures/corpus"


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldenReport:
    """One golden run: per-case outcomes, the metrics over them, and which store was used."""

    outcomes: tuple[Outcome, ...]
    metrics: dict[str, Any]
    store: str
    min_score: float
    settings: dict[str, Any] = field(default_factory=dict)


@contextmanager
def corpus_store(
    settings: Settings, cases: Sequence[GoldenCase], *, corpus: str | Path | None = None
) -> Iterator[tuple[Any, str]]:
    """A private SQLite store holding the corpus, and a note on where it came from; deleted on exit.

    `corpus` None: a copy of the user's store when it holds every cited chunk, else the bundled
    corpus ingested fresh. An explicit `corpus` directory is always ingested fresh.
    """
    from rag.store.sqlite import SqliteStore

    wanted = sorted({c for case in cases for c in case.chunks})
    with tempfile.TemporaryDirectory(prefix="rag-eval-") as tmp:
        source = Path(settings.db)
        if corpus is not None:
            store = SqliteStore(str(Path(tmp) / "corpus.db"))
            try:
                path = _ingest_corpus(store, settings, corpus)
                yield store, f"fresh ingest of {path}"
            finally:
                store.close()
            return
        if not settings.database_url and source.is_file():
            copy = Path(tmp) / "copy.db"
            with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
                src.backup(dst)
            store = SqliteStore(str(copy))
            if wanted and len(store.get_chunks(wanted)) == len(wanted):
                try:
                    yield store, f"copy of {source}"
                finally:
                    store.close()
                return
            store.close()
        store = SqliteStore(str(Path(tmp) / "corpus.db"))
        try:
            _ingest_corpus(store, settings)
            yield store, f"fresh ingest of {CORPUS_DIR} (the store at {source} lacks the labelled chunks)"
        finally:
            store.close()


def _ingest_corpus(store: Any, settings: Settings, corpus_dir: str | Path = CORPUS_DIR) -> Path:
    """Ingest `corpus_dir` (as given, else relative to the repo root) into `store`; returns the path used."""
    from rag.errors import ConfigError
    from rag.ingest.indexer import ingest_paths

    corpus = Path(corpus_dir)
    if not corpus.exists():
        corpus = repo_root() / corpus_dir
    if not corpus.exists():
        raise ConfigError(f"eval corpus not found: {str(corpus_dir)!r}")
    ingest_paths(store, [str(corpus)], settings=settings)
    return corpus


def top_score(answer: Answer) -> float:
    """The best retrieval score the answer saw: its blocks (exact), else a refusal's closest matches."""
    if answer.blocks:
        return max(b.score for b in answer.blocks)
    return max((c.score for c in answer.closest), default=0.0)


def outcome_of(case: GoldenCase, answer: Answer, *, latency_ms: float, store: Any | None = None) -> Outcome:
    """Reduce an Answer to the figures the scorers need; citations are judged by `metrics.supports`."""
    cited = tuple(c.chunk_id for s in answer.sentences for c in s.citations)
    return Outcome(
        case=case,
        abstained=answer.abstained,
        reason=answer.reason,
        text=answer.text,
        cited=cited,
        supporting=_supporting(case, answer, cited, store),
        sentences=len(answer.sentences),
        dropped=len(answer.dropped),
        top_score=top_score(answer),
        latency_ms=latency_ms,
        conflict=answer.conflict is not None or answer.reason == "conflicting_sources",
        blocks=tuple(b.chunk.chunk_id for b in answer.blocks),
    )


def _supporting(
    case: GoldenCase, answer: Answer, cited: Sequence[str], store: Any | None
) -> tuple[bool, ...]:
    """Whether each cited chunk supports `case`, its text from the answer's blocks, else the store."""
    texts = {b.chunk.chunk_id: b.chunk.text for b in answer.blocks}
    supporting = []
    for chunk_id in cited:
        text = texts.get(chunk_id)
        if text is None and store is not None:
            found = store.get_chunks([chunk_id])
            text = found[0].text if found else ""
        supporting.append(supports(case, chunk_id, text or ""))
    return tuple(supporting)


def run_cases(pipeline: Any, cases: Sequence[GoldenCase], *, store: Any = None) -> list[Outcome]:
    """Every case through `pipeline.answer`, timed (milliseconds, wall clock)."""
    outcomes = []
    for case in cases:
        started = time.perf_counter()
        answer = pipeline.answer(case.question)
        elapsed = (time.perf_counter() - started) * 1000
        outcomes.append(outcome_of(case, answer, latency_ms=elapsed, store=store))
    return outcomes


def effective_min_score(pipeline: Any) -> float:
    """The retrieval gate the pipeline applies (override, else setting, else the reranker's default)."""
    return float(pipeline.gate_score)


def run_golden(
    settings: Settings,
    dataset: str | Path = DEFAULT_SET,
    *,
    limit: int | None = None,
    gate_off: bool = False,
    corpus: str | Path | None = None,
) -> GoldenReport:
    """Run the golden set through the whole pipeline. `gate_off` sets min_score to 0 (for sweeps);
    `corpus` names the document directory the set was labelled on (None: the bundled corpus)."""
    from rag.answer.pipeline import build_pipeline

    cases = load_golden(dataset, limit=limit)
    run_settings = settings.model_copy(update={"min_score": 0.0}) if gate_off else settings
    with corpus_store(settings, cases, corpus=corpus) as (store, note):
        pipeline = build_pipeline(run_settings, store=store)
        outcomes = run_cases(pipeline, cases, store=store)
        min_score = effective_min_score(pipeline)
    return GoldenReport(
        outcomes=tuple(outcomes),
        metrics=golden_metrics(outcomes),
        store=note,
        min_score=min_score,
        settings={
            "min_score": min_score,
            "min_overlap": settings.min_overlap,
            "top_k": settings.top_k,
            "generator": getattr(pipeline.generator, "name", type(pipeline.generator).__name__),
            "reranker": getattr(pipeline.reranker, "name", type(pipeline.reranker).__name__),
        },
    )


# ---------------------------------------------------------------- reports


def expected_text(case: GoldenCase) -> str:
    """What the case expects, in words (for reports)."""
    if case.label == "answer":
        return f"an answer containing {case.expect!r}, citing {', '.join(case.chunks)}"
    if case.label == "conflict":
        return "a conflict presented (conflicting_sources)"
    return f"an abstention ({case.kind or 'unanswerable'})"


def problems(outcomes: Sequence[Outcome]) -> list[Outcome]:
    """Wrong outcomes, plus answers that cite a non-supporting chunk."""
    return [o for o in outcomes if diagnose(o)]


def golden_json(report: GoldenReport) -> dict[str, Any]:
    return {
        "set": "golden",
        "store": report.store,
        "settings": report.settings,
        "metrics": report.metrics,
        "wrong": [
            {
                "id": o.case.id,
                "question": o.case.question,
                "label": o.case.label,
                "expected": expected_text(o.case),
                "abstained": o.abstained,
                "reason": o.reason,
                "answer": o.text,
                "cited": list(o.cited),
                "supporting": list(o.supporting),
                "top_score": o.top_score,
                "stage": diagnose(o),
            }
            for o in problems(report.outcomes)
        ],
    }
