#!/usr/bin/env bash
# PostgreSQL's server programs for the tests and benchmarks that run himga over PostgreSQL
# (tests/postgres_cluster.py starts servers of its own with them; nothing runs as a service).
# Installs Debian's postgresql-15 when no server programs are found, as root on Debian; elsewhere
# it says what to install.
set -euo pipefail
if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then exit 0; fi
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
else
  echo "install PostgreSQL 15's server programs (Debian: postgresql-15) for the PostgreSQL tests" >&2
fi
