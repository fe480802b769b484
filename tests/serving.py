"""Servers started as processes for tests: a free loopback port, and a process waited for on /healthz."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(
    argv: Callable[[int], list[str]],
    *,
    env: Mapping[str, str],
    log: Path,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start `argv(port)` on a free port (output to `log`), wait until /healthz answers 200, and yield
    (base URL, process); the process is terminated (then killed) on exit. Fails with the log when the
    process dies or does not come up within `timeout` seconds."""
    port = free_port()
    with log.open("wb") as sink:
        proc = subprocess.Popen(argv(port), env=dict(env), cwd=cwd, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"the server did not start: {log.read_text()}"
            time.sleep(0.1)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
