"""Offline dense retrieval measured on labelled sets: the gate thresholds of the hybrid scorer, and
evidence reach and answers with dense retrieval on and off (docs/eval.md, "Dense retrieval offline").

Each set's corpus is ingested into a store under CACHE (once: `--cache`, default
$TMPDIR/rag-dense-eval) and embedded there by the local encoder (a `Backfill`, as `rag serve` would;
slow: about a chunk a second on a loaded 2-core machine), so every run after the first reads stored
vectors. Vectors are also kept by the text they embed (CACHE/vectors.db, shared by the sets): after a
change to ingestion only the chunks whose text changed are embedded again (`--fresh` re-ingests;
`seed DB...` fills that cache from stores embedded before). The evaluations themselves are `rag eval`'s
functions over a private copy of a set's store:

  sweep    pools every set's outcomes with the gate open (`run_golden(gate_off=True)`) and chooses the
           offline threshold as `rag eval --sweep min_score` does (`sweep.choose`), and pools the
           simulated reader's probes (`gate_sim.probe_cases`) and chooses the Claude threshold as
           `rag eval --sweep gate_claude` does (`gate_sim.choose`); for the scorer dense mode gives.
  measure  per set: answered correctly and abstention recall (`run_golden`), and evidence reach with
           Claude and offline (`run_reach`).
  weights  evidence reach pooled over the sets for each dense weight of the hybrid score (`--weights`).
  conversations  follow-up reach and offline precision (`rag eval --conversations`) of each
           conversation file given (fixtures/<NAME>/conversations.jsonl), over its corpora's stores.

Usage: python -m benchmarks.dense_eval sweep|measure|weights|prepare|conversations [--dense auto|off]
         [--cache DIR] [--fresh] [--weights W,W,...] SET...
       python -m benchmarks.dense_eval seed [--cache DIR] DB...
SET: golden, devdocs, holdout, holdout2, ... (fixtures/<SET>; golden is fixtures/eval).
Never run `sweep` on the held-out sets kept for measuring (holdout6 and later).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rag.config import Settings, load_settings
from rag.embeddings import Embedder, embedding_text, make_embedder
from rag.embeddings.backfill import Backfill
from rag.ingest.indexer import ingest_paths
from rag.store.sqlite import SqliteStore

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CACHE = Path(os.environ.get("TMPDIR", tempfile.gettempdir())) / "rag-dense-eval"


def paths(name: str) -> tuple[Path, Path]:
    """(questions, corpus) of a labelled set."""
    if name == "golden":
        return ROOT / "fixtures/eval/golden.jsonl", ROOT / "fixtures/corpus"
    folder = ROOT / "fixtures" / name
    return folder / "golden.jsonl", folder / "corpus"


class CachedEmbedder:
    """`embedder` with its document vectors kept by model and text in a SQLite file: a text embedded
    once, for any set, is never embedded again (the encoder is deterministic)."""

    def __init__(self, embedder: Embedder, path: Path) -> None:
        self.embedder = embedder
        self.name, self.model = embedder.name, embedder.model
        self.max_inputs, self.max_tokens = embedder.max_inputs, embedder.max_tokens
        self.background = embedder.background
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self.hits = 0

    def key(self, text: str) -> str:
        return hashlib.sha256(f"{self.model}\n{text}".encode()).hexdigest()

    def remember(self, pairs: Sequence[tuple[str, Sequence[float]]]) -> None:
        rows = [(self.key(text), array("f", vector).tobytes()) for text, vector in pairs]
        self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
        self.db.commit()

    def count_tokens(self, text: str) -> int:
        return self.embedder.count_tokens(text)

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        found: dict[str, list[float]] = {}
        for text in texts:
            row = self.db.execute("SELECT vector FROM vectors WHERE key = ?", (self.key(text),)).fetchone()
            if row:
                found[text] = array("f", row[0]).tolist()
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            made = self.embedder.embed_documents(missing)
            self.remember(list(zip(missing, made, strict=True)))
            found.update(zip(missing, made, strict=True))
        self.hits += len(texts) - len(missing)
        return [found[t] for t in texts]


def local_embedder(settings: Settings, cache: Path) -> CachedEmbedder:
    embedder = make_embedder(settings)
    if embedder is None:
        raise SystemExit("the local encoder is not installed (the Makefile's ENCODER_PKG)")
    return CachedEmbedder(embedder, cache / "vectors.db")


def seed(dbs: list[Path], cache: Path) -> None:
    """Fill the text-keyed cache from stores whose chunks the local encoder embedded before."""
    cache.mkdir(parents=True, exist_ok=True)
    embedder = local_embedder(load_settings(mock=True, dense="auto"), cache)
    for db in dbs:
        with sqlite3.connect(db) as conn:
            query = "SELECT chunk_id, vector FROM embeddings WHERE model = ?"
            vectors = dict(conn.execute(query, (embedder.model,)).fetchall())
        store = SqliteStore(str(db))
        try:
            chunks = store.get_chunks(list(vectors))
        finally:
            store.close()
        pairs = [(embedding_text(c), array("f", vectors[c.chunk_id]).tolist()) for c in chunks]
        embedder.remember(pairs)
        print(f"{db}: {len(pairs)} vectors kept by their text", file=sys.stderr)


def prepare(name: str, cache: Path, *, fresh: bool = False) -> Path:
    """The set's store under `cache`: its corpus ingested and embedded by the local encoder."""
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"{name}.db"
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    settings = load_settings(db=str(db), mock=True, dense="auto")
    store = SqliteStore(str(db))
    try:
        if not store.chunk_count():
            ingest_paths(store, [paths(name)[1]], settings=settings)
        embedder = local_embedder(settings, cache)
        started = time.perf_counter()
        done = Backfill(store, embedder).run()
        if done:
            print(
                f"{name}: {done} chunks given vectors ({embedder.hits} kept from before) in"
                f" {time.perf_counter() - started:.0f} s",
                file=sys.stderr,
            )
    finally:
        store.close()
    return db


def settings_for(db: Path, dense: str) -> Settings:
    return load_settings(db=str(db), mock=True, anthropic_api_key="", voyage_api_key="", dense=dense)


def sweep(names: list[str], cache: Path, dense: str) -> dict[str, Any]:
    from rag.evals import gate_sim
    from rag.evals import sweep as sw
    from rag.evals.datasets import load_golden
    from rag.evals.runner import corpus_store, run_golden

    outcomes, probes, scorers = [], [], set()
    for name in names:
        settings = settings_for(prepare(name, cache), dense)
        questions = paths(name)[0]
        report = run_golden(settings, questions, gate_off=True)
        outcomes.extend(report.outcomes)
        scorers.add(report.settings["reranker"])
        cases = load_golden(questions)
        with corpus_store(settings, cases) as (store, _):
            probes.extend(gate_sim.probe_cases(settings, cases, store))
    points = sw.sweep(lambda t: sw.min_score_point(outcomes, t))
    chosen = sw.choose(points)
    claude_points = gate_sim.curve(probes, None)
    claude = gate_sim.choose(claude_points)
    return {
        "dense": dense,
        "scorers": sorted(scorers),
        "sets": names,
        "offline": {
            "chosen": chosen.threshold,
            "plateau": sw.plateau(points, chosen),
            "objective": round(chosen.objective, 4),
            "curves": {k: round(v, 4) for k, v in chosen.curves.items()},
        },
        "claude": {
            "chosen": claude.threshold,
            "answered": f"{claude.answered}/{claude.answerable}",
            "calls": claude.calls,
            "wasted": claude.wasted,
            "questions": claude.questions,
        },
        "offline_table": sw.table(points, chosen),
        "claude_table": gate_sim.table(claude_points, claude),
    }


def measure(names: list[str], cache: Path, dense: str) -> dict[str, Any]:
    from rag.evals.reach import run_reach
    from rag.evals.runner import run_golden

    rows = {}
    for name in names:
        settings = settings_for(prepare(name, cache), dense)
        questions = paths(name)[0]
        golden = run_golden(settings, questions)
        reach = run_reach(settings, questions).json()
        metrics = golden.metrics
        rows[name] = {
            "reranker": golden.settings["reranker"],
            "min_score": golden.min_score,
            "answerable": metrics["answerable"],
            "correctness": metrics["correctness"],
            "correct_when_answered": metrics["correct_when_answered"],
            "abstention_recall": metrics["abstention_recall"],
            "abstention_precision": metrics["abstention_precision"],
            "citation_precision": metrics["citation_precision"],
            "right_outcome": metrics["overall_ok"],
            "reach_claude": reach["reach_claude"],
            "offline_read": reach["offline_read"],
            "offline_read_or_shown": reach["offline_read_or_shown"],
        }
        print(json.dumps({name: rows[name]}), file=sys.stderr, flush=True)
    return {"dense": dense, "sets": rows}


def conversations(names: list[str], cache: Path, dense: str) -> dict[str, Any]:
    """Each conversation set over stores of its corpora: a corpus named "corpus" is golden's store,
    one named after a set is that set's."""
    from rag.evals.conversations import corpus_dir, load_conversations, run_conversations

    rows = {}
    for name in names:
        dataset = ROOT / "fixtures" / name / "conversations.jsonl"
        corpora = sorted({c.corpus for c in load_conversations(dataset)})
        prepared = {corpus_dir(c): prepare("golden" if c == "corpus" else c, cache) for c in corpora}
        settings = settings_for(next(iter(prepared.values())), dense)  # each corpus's store is given
        report = run_conversations(settings, dataset, prepared=prepared).json()
        rows[name] = {
            "follow_ups": report["answerable_follow_ups"],
            "reach": report["reach"],
            "offline_answered": report["offline_answered"],
            "offline_precision_when_answered": report["offline_precision_when_answered"],
        }
        print(json.dumps({name: rows[name]}), file=sys.stderr, flush=True)
    return {"dense": dense, "sets": rows}


def weights(names: list[str], cache: Path, dense: str, values: list[float]) -> dict[str, Any]:
    """Evidence reach pooled over `names` for each dense weight of the hybrid score (the gates'
    thresholds as configured): answerable questions whose passage reaches Claude, and the offline
    reader's blocks or shown passages."""
    from rag.answer import rerank
    from rag.evals.reach import run_reach

    defaults = rerank.HybridReranker.__init__.__kwdefaults__
    assert defaults is not None
    kept = defaults["dense_weight"]
    rows: dict[str, dict[str, Any]] = {}
    try:
        for weight in values:
            defaults["dense_weight"] = weight  # what make_reranker's HybridReranker() takes
            claude = offline = answerable = 0
            for name in names:
                cases = run_reach(settings_for(prepare(name, cache), dense), paths(name)[0]).cases
                answerable += len(cases)
                claude += sum(c.to_claude for c in cases)
                offline += sum(c.offline_shown for c in cases)  # read, or shown on a refusal
            rows[f"{weight:.2f}"] = {
                "reach_claude": round(claude / answerable, 3),
                "offline_read_or_shown": round(offline / answerable, 3),
                "answerable": answerable,
            }
            print(json.dumps({f"{weight:.2f}": rows[f"{weight:.2f}"]}), file=sys.stderr, flush=True)
    finally:
        defaults["dense_weight"] = kept
    return {"sets": names, "weights": rows}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dense_eval")
    parser.add_argument("mode", choices=["sweep", "measure", "weights", "prepare", "seed", "conversations"])
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--dense", default="auto", choices=["auto", "off"])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--fresh", action="store_true", help="ingest every set's corpus again")
    parser.add_argument("--weights", default="0.35,0.45,0.55,0.65,0.75", help="weights: the dense weights")
    args = parser.parse_args(argv)
    if args.mode == "seed":
        seed([Path(p) for p in args.sets], args.cache)
        return 0
    if args.mode == "conversations":
        print(json.dumps(conversations(args.sets, args.cache, args.dense), indent=1))
        return 0
    if args.mode == "prepare" or args.fresh:
        for name in args.sets:
            prepare(name, args.cache, fresh=args.fresh)
    if args.mode == "prepare":
        return 0
    if args.mode == "weights":
        values = [float(w) for w in args.weights.split(",")]
        print(json.dumps(weights(args.sets, args.cache, args.dense, values), indent=1))
        return 0
    run = sweep if args.mode == "sweep" else measure
    print(json.dumps(run(args.sets, args.cache, args.dense), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
