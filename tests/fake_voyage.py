"""A fake Voyage API on a loopback port, for driving the real `voyageai` SDK offline.

Wire format as the SDK sends and reads it: POST {root}/v1/embeddings with {"input": [...],
"model", "input_type", ...} answers {"object": "list", "data": [{"object": "embedding",
"embedding": [...], "index": i}], "model", "usage": {"total_tokens"}}; POST {root}/v1/rerank with
{"query", "documents", "model", ...} answers {"object": "list", "data": [{"index",
"relevance_score"}] (best first), "model", "usage"}. Errors are {"detail": "..."} with the status.

Public per-request limits are enforced with a 400, as the service does: at most 1,000 inputs and
the model's token limit per embeddings request; at most 1,000 documents, the query token limit
and "query tokens x documents + document tokens" per rerank request. Tokens are counted as one
per 3 UTF-8 bytes (more than Voyage's tokenizers count for English, so a client that stays
under these limits stays under the real ones).

Vectors are a hashed bag of stemmed terms with one planted synonym ("automobile" ~ "car"), so
dense retrieval can find what BM25 cannot.

Failure modes: `script` (a queue: each request takes the next mode), `always` (every request),
`fail_after` (requests after the first N fail with 500), `delay` (seconds before every answer).
A mode is an HTTP status (429 carries `retry-after: 0`), "slow" (waits `slow_seconds`, then
answers normally) or "malformed" (200 with one embedding or result too few / invalid JSON).
"""

from __future__ import annotations

import json
import math
import threading
import time
import zlib
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rag.language.text import terms

DIM = 64
SYNONYMS = {"automobil": "car"}
MAX_INPUTS = 1000
EMBED_TOKEN_LIMITS = {"voyage-3.5-lite": 1_000_000, "voyage-3.5": 320_000, "voyage-2": 320_000}
EMBED_DEFAULT_TOKEN_LIMIT = 120_000
RERANK_MAX_DOCUMENTS = 1000
RERANK_QUERY_TOKENS = {"rerank-2.5": 8000, "rerank-2.5-lite": 8000, "rerank-2": 4000}
RERANK_TOTAL_TOKENS = 600_000

Mode = int | str


def count_tokens(text: str) -> int:
    return max(1, math.ceil(len(text.encode("utf-8")) / 3))


def fake_terms(text: str) -> set[str]:
    return {SYNONYMS.get(t, t) for t in terms(text)}


def fake_vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for term in fake_terms(text):
        vec[zlib.crc32(term.encode()) % DIM] += 1.0
    return vec


class FakeVoyage(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, prefix: str = "/v1") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.prefix = prefix
        self.script: deque[Mode] = deque()
        self.always: Mode | None = None
        self.fail_after: int | None = None
        self.delay = 0.0
        self.slow_seconds = 3.0
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.statuses: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def root(self) -> str:
        """The server's root URL, without `/v1`."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.root + self.prefix

    def start(self) -> FakeVoyage:
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up: nothing to report

    def embed_requests(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path.endswith("/embeddings")]

    def next_mode(self) -> Mode | None:
        with self.lock:
            n = len(self.requests)
            if self.script:
                return self.script.popleft()
            if self.always is not None:
                return self.always
            if self.fail_after is not None and n > self.fail_after:
                return 500
            return None


class _Handler(BaseHTTPRequestHandler):
    server: FakeVoyage
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        fake = self.server
        with fake.lock:
            fake.requests.append((self.path, body))
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._answer(body)
        finally:
            with fake.lock:
                fake.in_flight -= 1

    def _answer(self, body: dict[str, Any]) -> None:
        fake = self.server
        if fake.delay:
            time.sleep(fake.delay)
        mode = fake.next_mode()
        if mode == "slow":
            time.sleep(fake.slow_seconds)
        elif isinstance(mode, int):
            headers = {"retry-after": "0"} if mode == 429 else {}
            return self._send(mode, {"detail": f"fake failure {mode}"}, headers)
        if self.path == fake.prefix + "/embeddings":
            return self._embeddings(body, malformed=mode == "malformed")
        if self.path == fake.prefix + "/rerank":
            return self._rerank(body, malformed=mode == "malformed")
        return self._send(404, {"detail": "Not Found"})

    def _embeddings(self, body: dict[str, Any], *, malformed: bool) -> None:
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        limit = EMBED_TOKEN_LIMITS.get(body["model"], EMBED_DEFAULT_TOKEN_LIMIT)
        tokens = sum(count_tokens(t) for t in texts)
        if len(texts) > MAX_INPUTS:
            return self._send(
                400, {"detail": f"The batch size limit is {MAX_INPUTS}. Your batch size is {len(texts)}."}
            )
        if tokens > limit:
            return self._send(
                400,
                {"detail": f"The max allowed tokens per submitted batch is {limit}; this one has {tokens}."},
            )
        data = [{"object": "embedding", "embedding": fake_vector(t), "index": i} for i, t in enumerate(texts)]
        if malformed:
            data = data[:-1]
        self._send(
            200, {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": tokens}}
        )

    def _rerank(self, body: dict[str, Any], *, malformed: bool) -> None:
        documents = body["documents"]
        query_tokens = count_tokens(body["query"])
        total = query_tokens * len(documents) + sum(count_tokens(d) for d in documents)
        if len(documents) > RERANK_MAX_DOCUMENTS:
            return self._send(
                400, {"detail": f"The number of documents cannot exceed {RERANK_MAX_DOCUMENTS}."}
            )
        if query_tokens > RERANK_QUERY_TOKENS.get(body["model"], 2000):
            return self._send(400, {"detail": "The query is too long."})
        if total > RERANK_TOTAL_TOKENS:
            return self._send(
                400, {"detail": f"The total number of tokens {total} exceeds {RERANK_TOTAL_TOKENS}."}
            )
        if malformed:
            return self._send_raw(200, b'{"object": "list", "data": [', {})
        query = fake_terms(body["query"])
        scores = [len(query & fake_terms(doc)) / max(1, len(query)) for doc in documents]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])
        data = [{"index": i, "relevance_score": round(0.05 + 0.9 * scores[i], 4)} for i in order]
        self._send(
            200, {"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": total}}
        )

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers or {})

    def _send_raw(self, status: int, raw: bytes, headers: dict[str, str]) -> None:
        with self.server.lock:
            self.server.statuses.append(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)
