#!/usr/bin/env bash
# System services the suite needs: Chromium for the browser test, PostgreSQL with pgvector for the
# store suite. Each step is best-effort: a test that needs a missing service says so and is skipped.
set -uo pipefail
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq >/dev/null 2>&1 || true
fi

# Chromium for tests/test_browser.py (Debian's package; Playwright never downloads a browser).
if [ -x /usr/bin/chromium ]; then
  echo "services: chromium present ($(/usr/bin/chromium --version 2>/dev/null || echo unknown version))"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "services: installing chromium with apt-get"
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
      >/tmp/services-chromium.log 2>&1; then
    echo "services: chromium installed"
  else
    echo "services: chromium install failed (see /tmp/services-chromium.log); the browser test will skip" >&2
    tail -n 5 /tmp/services-chromium.log >&2 || true
  fi
else
  echo "services: /usr/bin/chromium missing and cannot apt-get install as non-root; the browser test will skip" >&2
fi
