"""The context budget in front of Claude: evidence reach against what a question sends (docs/eval.md,
"Context budget for Claude").

For each (most blocks, token budget) pair (`RAG_CLAUDE_MAX_BLOCKS`, `RAG_CLAUDE_BUDGET`; retrieval
hands on at least that many chunks), every answerable question of each labelled set is asked of a
pipeline whose reader is Claude's shape (native citations) but records the blocks instead of calling
(`rag.evals.reach.RecordingReader`, as `rag eval --reach` does); the gates and retrieval are the
configured ones (dense retrieval on: the stores come from benchmarks.dense_eval's cache, embedded).
Reported per pair, pooled over the sets: the share of answerable questions whose labelled passage is
among the blocks sent, the mean number of blocks and of context tokens (`context_tokens`) per call, and
the input cost of those tokens per 100 calls at the generation model's input price (`model_prices`, as
`rag eval --gate-sim` prices calls; the prompt's fixed part and the reply are not counted).

Usage: python -m benchmarks.budget_sweep [--cache DIR] [--blocks 5,8,12] [--tokens 1200,2000,4000] SET...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.dense_eval import DEFAULT_CACHE, paths, prepare, settings_for
from rag.answer.assemble import context_tokens
from rag.answer.pipeline import build_pipeline
from rag.evals.datasets import load_golden
from rag.evals.reach import RecordingReader
from rag.evals.runner import corpus_store


def sweep(names: list[str], cache: Path, blocks: list[int], tokens: list[int]) -> dict[str, Any]:
    pairs = [(b, t) for b in blocks for t in tokens]
    reached = dict.fromkeys(pairs, 0)
    calls = dict.fromkeys(pairs, 0)
    sent_blocks = dict.fromkeys(pairs, 0)
    sent_tokens = dict.fromkeys(pairs, 0)
    answerable, price = 0, 0.0
    for name in names:
        settings = settings_for(prepare(name, cache), "auto")
        price = settings.model_prices.get(settings.generation_model, (0.0, 0.0))[0]
        cases = [c for c in load_golden(paths(name)[0]) if c.label == "answer"]
        answerable += len(cases)
        with corpus_store(settings, cases) as (store, _):
            for pair in pairs:
                recorder = RecordingReader()
                update = {"claude_max_blocks": pair[0], "claude_budget": pair[1]}
                pipeline = build_pipeline(settings.model_copy(update=update), store=store, generator=recorder)
                for case in cases:
                    before = len(recorder.sent)
                    pipeline.answer(case.question)
                    sent = recorder.sent[before:]
                    if not sent:
                        continue
                    calls[pair] += 1
                    sent_blocks[pair] += len(sent[0])
                    sent_tokens[pair] += context_tokens(sent[0])
                    reached[pair] += any(b.chunk.chunk_id in case.chunks for call in sent for b in call)
        print(f"{name}: {len(cases)} answerable", file=sys.stderr, flush=True)
    rows = []
    for pair in pairs:
        n = max(calls[pair], 1)
        rows.append(
            {
                "max_blocks": pair[0],
                "budget": pair[1],
                "reach_claude": round(reached[pair] / answerable, 3),
                "reached": reached[pair],
                "blocks_per_call": round(sent_blocks[pair] / n, 2),
                "tokens_per_call": round(sent_tokens[pair] / n),
                "input_usd_per_100_calls": round(sent_tokens[pair] / n * 100 * price / 1e6, 3),
            }
        )
    return {"sets": names, "answerable": answerable, "rows": rows}


def table(report: dict[str, Any]) -> str:
    lines = [
        "| most blocks | token budget | reach with Claude | blocks / call | context tokens / call |"
        " input USD / 100 calls |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in report["rows"]:
        reach = f"{r['reach_claude']:.3f} ({r['reached']}/{report['answerable']})"
        lines.append(
            f"| {r['max_blocks']} | {r['budget']} | {reach} | {r['blocks_per_call']} | {r['tokens_per_call']}"
            f" | {r['input_usd_per_100_calls']} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.budget_sweep")
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--blocks", default="5,8,12")
    parser.add_argument("--tokens", default="1200,2000,4000")
    args = parser.parse_args(argv)
    blocks = [int(b) for b in args.blocks.split(",")]
    tokens = [int(t) for t in args.tokens.split(",")]
    report = sweep(args.sets, args.cache, blocks, tokens)
    print(json.dumps(report, indent=1))
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
