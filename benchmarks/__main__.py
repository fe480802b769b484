"""Run every `benchmarks/bench_*.py` module's `main()` in name order, or only those named on the command line.

Usage: python -m benchmarks [NAME ...]   (NAME like `ingest` for bench_ingest.py)
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    wanted = [n for n in names if not argv or n.removeprefix("bench_") in argv]
    failed = 0
    for name in wanted:
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"benchmarks.{name}").main()
        except Exception as exc:  # a broken benchmark must not hide the others' figures
            failed += 1
            print(f"{name} failed: {type(exc).__name__}: {exc}", flush=True)
        print(f"({name}: {time.perf_counter() - started:.1f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
