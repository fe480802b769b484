"""Claude streaming path against the fake Messages API: sentence latency and end-to-end overhead.

The fake streams a scripted cited answer at 40 tokens/s (4 characters per token). Figures:
- sentence latency, measured two ways, per emitted `sentence` event:
  (a) from the arrival of the piece that let the buffer cut the sentence to the event
      (our processing: buffer, verify, event) -- target p95 < 5 ms;
  (b) from the arrival of the sentence's last character to the event; this also includes
      waiting for the next token, which the buffer needs to know the sentence has ended;
- end-to-end: the pipeline stream's wall time (retrieve ... done) over the bare SDK's time to
  stream the same answer -- target overhead < 3 %.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import anthropic  # noqa: E402
from fake_anthropic import FakeAnthropic, Reply, cited, locate, text  # noqa: E402

from rag.answer.events import DoneEvent, SentenceEvent  # noqa: E402
from rag.answer.pipeline import build_pipeline  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.ingest.indexer import ingest_paths  # noqa: E402
from rag.language.text import split_sentences  # noqa: E402
from rag.store.sqlite import SqliteStore  # noqa: E402
from rag.types import Block, Piece  # noqa: E402

TOKENS_PER_SECOND = 40
QUESTIONS = (
    "How long do deleted projects stay in the trash?",
    "How do I restore a deleted task?",
)
RUNS = 4
MAX_SENTENCES = 5


def answer_from_documents(body: dict[str, Any]) -> Reply:
    """A cited answer built from the issued documents: their first sentences, each cited, in order."""
    parts = []
    docs = [b for b in body["messages"][0]["content"] if b.get("type") == "document"]
    sentences = [s for d in docs for s in split_sentences(d["source"]["data"])[:2] if s.endswith(".")]
    for i, sentence in enumerate(sentences[:MAX_SENTENCES]):
        if i == 0:
            parts.append(text("From the documents: "))
        parts.append(cited(sentence[0].lower() + sentence[1:-1], locate(sentence)))
        parts.append(text(". "))
    return Reply(parts=tuple(parts))


def one_cited_block(body: dict[str, Any]) -> Reply:
    """Three sentences of the first document in ONE cited block (its citations first, as the API
    sends them), then a closing period block: the shape where a sentence used to wait for the block."""
    docs = [b for b in body["messages"][0]["content"] if b.get("type") == "document"]
    sentences = [s for s in split_sentences(docs[0]["source"]["data"]) if s.endswith(".")][:3]
    block = " ".join(sentences)[:-1]
    return Reply(parts=(cited(block, *(locate(s) for s in sentences)), text(".")))


class Recording:
    """Wraps a generator; records each piece's arrival time and the text received so far."""

    name = "recording"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.native_citations: bool = inner.native_citations
        self.arrivals: list[tuple[float, int]] = []  # (time, length of text received after this piece)
        self.text = ""
        self.blocks: Sequence[Block] = ()

    def generate(self, question: str, blocks: Sequence[Block], *, feedback: Sequence[str] = ()) -> Any:
        return self.inner.generate(question, blocks, feedback=feedback)

    async def stream(self, question: str, blocks: Sequence[Block]) -> AsyncIterator[Piece]:
        self.blocks = blocks
        async for piece in self.inner.stream(question, blocks):
            self.text += piece.text
            self.arrivals.append((time.perf_counter(), len(self.text)))
            yield piece


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


async def one_run(
    pipeline: Any, recorder: Recording, question: str
) -> tuple[list[float], list[float], float]:
    """One streamed answer through the pipeline: per-sentence latencies (ms) and wall time (s)."""
    recorder.arrivals, recorder.text = [], ""
    cut_lat: list[float] = []
    char_lat: list[float] = []
    searched = 0
    started = time.perf_counter()
    async for event in pipeline.answer_stream(question):
        now = time.perf_counter()
        if isinstance(event, SentenceEvent):
            cut_lat.append((now - recorder.arrivals[-1][0]) * 1000)
            body = event.sentence.text.rstrip(".")
            at = recorder.text.find(body, searched)
            if at >= 0:
                end = at + len(body) + 1  # the sentence's final period
                searched = end
                last_char = next(t for t, length in recorder.arrivals if length >= end)
                char_lat.append((now - last_char) * 1000)
        elif isinstance(event, DoneEvent) and event.status != "answered":
            raise RuntimeError(f"benchmark question was not answered: {question!r}: {event}")
    return cut_lat, char_lat, time.perf_counter() - started


async def bare_sdk(client: anthropic.AsyncAnthropic, request: dict[str, Any]) -> float:
    """The model's own time: the same request streamed by the bare SDK, nothing else (s)."""
    started = time.perf_counter()
    async with client.messages.stream(**request) as stream:
        async for _ in stream:
            pass
    return time.perf_counter() - started


async def measure(fake: FakeAnthropic, settings: Any, db: str) -> None:
    pipeline = build_pipeline(settings, store=SqliteStore(db))
    generator = pipeline.generator
    recorder = Recording(generator)
    pipeline.generator = recorder
    client = anthropic.AsyncAnthropic(api_key="test", base_url=fake.base_url, max_retries=0)
    cut_all: list[float] = []
    char_all: list[float] = []
    overheads: list[float] = []
    for run in range(RUNS + 1):
        question = QUESTIONS[run % len(QUESTIONS)]
        cut, char, total = await one_run(pipeline, recorder, question)
        request = generator.request(question, recorder.blocks)
        model = await bare_sdk(client, request)
        if run == 0:
            continue  # warm-up: client pools, caches
        cut_all += cut
        char_all += char
        overheads.append((total - model) / model * 100)
        print(
            f"  {question[:48]:<48} sentences {len(cut)}  model {model:6.3f} s  pipeline {total:6.3f} s  "
            f"overhead {(total - model) / model * 100:+5.2f} %"
        )
    pipeline.store.close()
    print(
        f"fake stream: {TOKENS_PER_SECOND} tokens/s, 4 chars/token; {len(cut_all)} sentences over {RUNS} runs"
    )
    print(
        f"(a) cut -> sentence event:        median {statistics.median(cut_all):6.2f} ms  "
        f"p95 {percentile(cut_all, 0.95):6.2f} ms  max {max(cut_all):6.2f} ms  (target p95 < 5 ms: "
        f"{'ok' if percentile(cut_all, 0.95) < 5 else 'MISSED'})"
    )
    print(
        f"(b) last char -> sentence event:  median {statistics.median(char_all):6.2f} ms  "
        f"p95 {percentile(char_all, 0.95):6.2f} ms  (target p95 < 5 ms: "
        f"{'ok' if percentile(char_all, 0.95) < 5 else 'MISSED'}; a token arrives every "
        f"{1000 / TOKENS_PER_SECOND:.0f} ms at this rate)"
    )
    median_overhead = statistics.median(overheads)
    print(
        f"end-to-end overhead over the bare SDK stream: median {median_overhead:+.2f} %  "
        f"max {max(overheads):+.2f} %  (target < 3 %: {'ok' if median_overhead < 3 else 'MISSED'})"
    )


async def measure_block(settings: Any, db: str) -> None:
    """First-sentence latency inside one multi-sentence cited block: when it went out, against when
    the block closed (what holding sentences until their block closed used to cost)."""
    pipeline = build_pipeline(settings, store=SqliteStore(db))
    recorder = Recording(pipeline.generator)
    pipeline.generator = recorder
    waits: list[tuple[float, float]] = []
    for _ in range(RUNS):
        recorder.arrivals, recorder.text = [], ""
        first: float | None = None
        first_text = ""
        async for event in pipeline.answer_stream(QUESTIONS[0]):
            if isinstance(event, SentenceEvent) and first is None:
                first, first_text = time.perf_counter(), event.sentence.text
        if first is None:
            raise RuntimeError("the multi-sentence block gave no sentence")
        end = recorder.text.find(first_text.rstrip(".")) + len(first_text)
        block_end = len(recorder.text.rstrip(". "))
        last_char = next(t for t, length in recorder.arrivals if length >= end)
        closed = next(t for t, length in recorder.arrivals if length >= block_end)
        waits.append(((first - last_char) * 1000, (closed - last_char) * 1000))
    pipeline.store.close()
    after = statistics.median(w for w, _ in waits)
    before = statistics.median(c for _, c in waits)
    print(
        f"first sentence of a 3-sentence cited block, last char -> event: median {after:.1f} ms now; "
        f"holding it until its block closed would add {before:.0f} ms (the previous behaviour)"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic(token_delay=1 / TOKENS_PER_SECOND) as fake:
        db = str(Path(tmp) / "bench.db")
        store = SqliteStore(db)
        ingest_paths(store, [str(ROOT / "fixtures" / "corpus")], settings=load_settings(db=db, mock=True))
        store.close()
        fake.responder = answer_from_documents
        settings = load_settings(
            anthropic_api_key="test", anthropic_base_url=fake.base_url, mock=False, db=db
        )
        asyncio.run(measure(fake, settings, db))
        fake.responder = one_cited_block
        asyncio.run(measure_block(settings, db))
        if fake.violations:
            print(f"fake server saw contract violations: {fake.violations}")


if __name__ == "__main__":
    main()
