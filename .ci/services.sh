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

# PostgreSQL for tests/test_store_backends.py: Debian's server (plus pgvector when the archive has
# it), a cluster on 127.0.0.1, role/password rag/rag and database rag_test. The URL goes to
# .ci/pg.env, which .ci/run sources; without it the PostgreSQL tests skip and say why.
PG_ENV=.ci/pg.env
rm -f "$PG_ENV"
pg_setup() {
  local version port
  if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      echo "services: PostgreSQL missing and cannot apt-get install as non-root" >&2
      return 1
    fi
    echo "services: installing postgresql with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql \
      >/tmp/services-postgresql.log 2>&1 || { tail -n 5 /tmp/services-postgresql.log >&2; return 1; }
  fi
  version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && [ ! -e "/usr/share/postgresql/$version/extension/vector.control" ]; then
    if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "postgresql-$version-pgvector" \
        >/tmp/services-pgvector.log 2>&1; then
      echo "services: pgvector installed"
    else
      echo "services: postgresql-$version-pgvector not available; the test suite starts the pgserver wheel's PostgreSQL 16 with pgvector (tests/pg_server.py)"
    fi
  fi
  if ! pg_lsclusters -h 2>/dev/null | awk -v v="$version" '$1 == v && $2 == "main"' | grep -q .; then
    pg_createcluster "$version" main >/tmp/services-pgcluster.log 2>&1 || { tail -n 5 /tmp/services-pgcluster.log >&2; return 1; }
  fi
  pg_ctlcluster "$version" main start >/dev/null 2>&1 || true
  port=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $3}')
  for _ in $(seq 1 30); do
    pg_isready -q -h 127.0.0.1 -p "$port" && break
    sleep 1
  done
  pg_isready -q -h 127.0.0.1 -p "$port" || { echo "services: PostgreSQL $version did not start" >&2; return 1; }
  runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 >/tmp/services-pgsql.log 2>&1 <<'SQL' || { tail -n 5 /tmp/services-pgsql.log >&2; return 1; }
SELECT 'CREATE ROLE rag LOGIN PASSWORD ''rag''' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'rag')\gexec
SELECT 'CREATE DATABASE rag_test OWNER rag' WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'rag_test')\gexec
SQL
  runuser -u postgres -- psql -q -p "$port" -d rag_test -c "CREATE EXTENSION IF NOT EXISTS vector" >/dev/null 2>&1 \
    && echo "services: pgvector enabled in rag_test"
  echo "export RAG_TEST_DATABASE_URL=postgresql://rag:rag@127.0.0.1:$port/rag_test" >"$PG_ENV"
  echo "services: PostgreSQL $version on 127.0.0.1:$port, database rag_test (URL in $PG_ENV)"
}
if [ "$(id -u)" = 0 ]; then
  pg_setup || echo "services: PostgreSQL unavailable; the PostgreSQL store tests will skip" >&2
else
  echo "services: not root, PostgreSQL not set up; the PostgreSQL store tests will skip" >&2
fi
