"""Faults the store suites inject from outside the process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from rag.store import Store


def kill_ingest_after(store: Store, corpus: Path, env: Mapping[str, str], documents: int) -> None:
    """Start `rag ingest corpus` in a child process and kill -9 it once `store` holds `documents`
    documents (or when it ends by itself); fails if it makes no progress within two minutes."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rag", "ingest", str(corpus)],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while store.stats().documents < documents and proc.poll() is None:
        assert time.monotonic() < deadline, "ingest made no progress"
        time.sleep(0.02)
    proc.kill()
    proc.wait()
