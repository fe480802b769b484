"""The ask log and the coverage-gap queue, written off the request path.

A request only appends its row to an in-memory queue (`LogWriter.submit`, microseconds); one
background thread per store writes what has queued up in batches, one transaction per batch. The
thread is woken by the first row of a batch and then lingers `LINGER` seconds for others.
So an ask never waits for the database's write lock, and under load many rows share one commit.

Nothing is lost on shutdown: `close()` (called by the store's `close()`) writes every queued row
before it returns, and an `atexit` hook does the same for a store that was never closed. Reads of
the log (`flush_pending`, called by `Store.ask_log` and `Store.gaps`) first wait until every writer
in this process has written what it holds, so a caller reads its own writes.

Faults: when the database is unavailable (`StoreUnavailable`) the batch stays queued and is
retried with backoff; a row the database rejects for any other reason is written alone, and
logged and skipped if it still fails, so one bad row never takes its batch with it. At most
`max_pending` rows wait; beyond that new rows are dropped with a warning (memory stays bounded
while a database is down).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.errors import StoreUnavailable
from rag.types import AskRecord

__all__ = ["AskRow", "GapRow", "LogRow", "LogWriter", "flush_pending"]

logger = logging.getLogger(__name__)

# Rows per transaction at most.
MAX_BATCH = 512
# Seconds the writer waits after the first queued row for others to join its batch.
LINGER = 0.005
# Rows that may wait while the database is unavailable; more are dropped (and counted in the log).
MAX_PENDING = 50_000
# Retry delays while the database is unavailable: doubled from the first up to the last.
RETRY_FIRST, RETRY_MAX = 0.05, 2.0
# Seconds `close()` waits for queued rows to be written, and a read of the log at most.
FLUSH_TIMEOUT = 10.0
READ_FLUSH_TIMEOUT = 2.0


@dataclass(frozen=True, slots=True)
class AskRow:
    """One ask-log row; `ts` is the time the request finished (ISO, UTC), not the time it was written."""

    record: AskRecord
    ts: str


@dataclass(frozen=True, slots=True)
class GapRow:
    """One coverage-gap hit (a line-1 refusal) at `ts`."""

    question: str
    top_score: float
    closest: tuple[str, ...]
    ts: str
    principal: str = ""


LogRow = AskRow | GapRow
WriteBatch = Callable[[Sequence[LogRow]], None]

_writers: weakref.WeakSet[LogWriter] = weakref.WeakSet()
_writers_lock = threading.Lock()


def flush_pending(timeout: float = READ_FLUSH_TIMEOUT) -> None:
    """Wait until every writer in this process has written the rows queued so far (or `timeout`)."""
    with _writers_lock:
        writers = list(_writers)
    deadline = time.monotonic() + timeout
    for writer in writers:
        writer.flush(max(0.0, deadline - time.monotonic()))


class LogWriter:
    """A queue of log rows and the background thread that writes them with `write(batch)`.

    `write` runs one transaction for the whole batch and raises on failure (nothing written).
    Thread-safe; the thread starts with the first row and ends at `close()`.
    """

    def __init__(
        self,
        write: WriteBatch,
        *,
        name: str = "rag-log",
        max_batch: int = MAX_BATCH,
        linger: float = LINGER,
        max_pending: int = MAX_PENDING,
    ) -> None:
        self._write = write
        self.name = name
        self.max_batch = max(1, max_batch)
        self.linger = linger
        self.max_pending = max_pending
        self._rows: deque[LogRow] = deque()
        self._cond = threading.Condition()
        self._in_flight = 0
        self._closed = False
        self._idle = False  # the thread waits for a first row (not lingering for more)
        self._thread: threading.Thread | None = None
        self.written = 0  # rows written so far
        self.batches = 0  # transactions so far
        self.dropped = 0  # rows dropped (queue full, rejected by the database, or unwritable at close)
        with _writers_lock:
            _writers.add(self)
        ref = weakref.ref(self)

        def close_at_exit() -> None:
            writer = ref()
            if writer is not None:
                writer.close()

        self._atexit = close_at_exit
        atexit.register(close_at_exit)

    def submit(self, row: LogRow) -> None:
        """Queue one row; returns at once. After `close()` the row is written synchronously."""
        with self._cond:
            if self._closed:
                closed = True
            else:
                closed = False
                if len(self._rows) >= self.max_pending:
                    self.dropped += 1
                    if self.dropped == 1 or self.dropped % 1000 == 0:
                        logger.error("%s: %d log rows dropped: the queue is full", self.name, self.dropped)
                    return
                self._rows.append(row)
                if self._thread is None or not self._thread.is_alive():  # first row, or a forked child
                    self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                    self._thread.start()
                # wake the thread only when it waits for a first row or a batch is full: a row joining
                # a batch that lingers waits with it (waking the thread per row cost a transaction,
                # a thread switch and a GIL hand-over per request)
                if self._idle or len(self._rows) >= self.max_batch:
                    self._cond.notify_all()
        if closed:
            self._write_each([row])

    @property
    def pending(self) -> int:
        """Rows queued or being written."""
        with self._cond:
            return len(self._rows) + self._in_flight

    def flush(self, timeout: float = FLUSH_TIMEOUT) -> bool:
        """Wait until every row queued so far is written (or given up on); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._cond.notify_all()  # a lingering batch is written now
            while self._rows or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0 or self._thread is None or not self._thread.is_alive():
                    return not (self._rows or self._in_flight)
                self._cond.wait(left)
        return True

    def close(self, timeout: float = FLUSH_TIMEOUT) -> None:
        """Write every queued row, then stop the thread. Idempotent."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._cond.notify_all()
        atexit.unregister(self._atexit)
        if thread is not None:
            thread.join(timeout)
        with self._cond:  # the thread could not finish in time, or never started
            rest = list(self._rows)
            self._rows.clear()
        if rest:
            self._write_each(rest)

    # the background thread

    def _run(self) -> None:
        delay = RETRY_FIRST
        while True:
            batch = self._next_batch()
            if batch is None:
                return  # closed and drained
            try:
                self._write(batch)
            except StoreUnavailable as exc:
                if self._requeue(batch):
                    return  # close() writes what is left, or reports it lost
                if delay == RETRY_FIRST:
                    logger.warning("%s: the log database is unavailable (%s); retrying", self.name, exc)
                time.sleep(delay)
                delay = min(RETRY_MAX, delay * 2)
                continue
            except Exception:
                self._write_each(batch)
            else:
                self._done(len(batch), batches=1)
            delay = RETRY_FIRST
            with self._cond:
                self._in_flight = 0
                self._cond.notify_all()

    def _next_batch(self) -> list[LogRow] | None:
        """Wait for rows (lingering for a fuller batch) and take up to `max_batch` of them as in
        flight; None once closed with nothing left."""
        with self._cond:
            while not self._rows and not self._closed:
                self._idle = True
                self._cond.wait()
            self._idle = False
            if not self._rows:
                return None
            if self.linger > 0 and len(self._rows) < self.max_batch and not self._closed:
                self._cond.wait(self.linger)
            batch = [self._rows.popleft() for _ in range(min(self.max_batch, len(self._rows)))]
            self._in_flight = len(batch)
        return batch

    def _requeue(self, batch: list[LogRow]) -> bool:
        """Put a batch that could not be written back at the head of the queue; True when closed."""
        with self._cond:
            self._rows.extendleft(reversed(batch))
            self._in_flight = 0
            self._cond.notify_all()
            return self._closed

    def _write_each(self, rows: Sequence[LogRow]) -> None:
        """Write rows one at a time, logging and counting each one that fails."""
        for row in rows:
            try:
                self._write([row])
            except Exception:
                with self._cond:
                    self.dropped += 1
                logger.exception("%s: a log row could not be written and is dropped: %r", self.name, row)
            else:
                self._done(1, batches=1)

    def _done(self, rows: int, *, batches: int) -> None:
        with self._cond:
            self.written += rows
            self.batches += batches
