#!/usr/bin/env bash
# System services the suite needs: Chromium for the browser test, PostgreSQL with pgvector for the
# store suite. Each step is best-effort: a test that needs a missing service says so and is skipped.
set -uo pipefail
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq >/dev/null 2>&1 || true
fi
