#!/usr/bin/env bash
# Make sure the PostgreSQL server the tests use answers at $JUDGEWATCH_TEST_POSTGRES_URL (called by run_tests.sh).
# - A server already answers there (and lets the URL's role into its database): use it, change nothing.
# - Nothing answers on a local host: install Debian's `postgresql` if missing (apt-get; root or sudo), start the
#   cluster on the URL's port (create one, `judgewatch`, if none uses that port), then create the URL's role and
#   database if missing and let that role into that database from the loopback address without a password
#   (one `trust` line in that cluster's pg_hba.conf, for that database and role only).
# - Anything else (a remote host, a server that answers but refuses the URL): stop with the reason.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
url=${JUDGEWATCH_TEST_POSTGRES_URL:-postgresql+psycopg://postgres@127.0.0.1:5432/test}
py=${PYTHON:-$here/.venv/bin/python}

# host port role database, from the SQLAlchemy URL
read -r pg_host pg_port pg_role pg_db < <("$py" - "$url" <<'PY'
import sys
from sqlalchemy.engine import make_url
u = make_url(sys.argv[1])
print(u.host or "127.0.0.1", u.port or 5432, u.username or "postgres", u.database or "test")
PY
)

# prints "ok", "refused" (nothing listens) or "error: <message>" (a server answered and said no)
probe() {
  "$py" - "$url" <<'PY'
import sys
import psycopg
from sqlalchemy.engine import make_url
u = make_url(sys.argv[1])
try:
    psycopg.connect(host=u.host or "127.0.0.1", port=u.port or 5432, user=u.username or "postgres",
                    password=u.password, dbname=u.database or "test", connect_timeout=5).close()
    print("ok")
except psycopg.OperationalError as exc:
    text = " ".join(str(exc).split())
    print("refused" if "refused" in text or "No such file" in text else f"error: {text}")
PY
}

state=$(probe)
if [ "$state" = ok ]; then
  echo "[tests] PostgreSQL answers at $pg_host:$pg_port (database $pg_db, role $pg_role): using it as it is"
  exit 0
fi
if [ "$state" != refused ]; then
  echo "[tests] PostgreSQL at $pg_host:$pg_port answers but refuses $pg_role/$pg_db: ${state#error: }" >&2
  echo "[tests] fix JUDGEWATCH_TEST_POSTGRES_URL or that server; nothing was changed" >&2
  exit 1
fi
case "$pg_host" in
  127.0.0.1 | localhost | ::1) ;;
  *) echo "[tests] nothing answers at $pg_host:$pg_port, and a remote server cannot be set up from here" >&2; exit 1 ;;
esac

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
  echo "[tests] setting up PostgreSQL needs root (or sudo) for: $*" >&2; exit 1; fi; }
as_postgres() { as_root runuser -u postgres -- "$@"; }

if ! command -v pg_ctlcluster >/dev/null; then
  echo "[tests] installing Debian's postgresql (apt-get) for the database tests"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

# the cluster on the URL's port, else a new one named judgewatch
cluster=$(pg_lsclusters --no-header 2>/dev/null | awk -v port="$pg_port" '$3 == port {print $1 " " $2; exit}')
if [ -z "$cluster" ]; then
  version=$(ls /etc/postgresql | sort -V | tail -1)
  echo "[tests] creating PostgreSQL $version cluster 'judgewatch' on port $pg_port"
  as_root pg_createcluster "$version" judgewatch --port "$pg_port" >/dev/null
  cluster="$version judgewatch"
fi
read -r version name <<<"$cluster"
echo "[tests] starting PostgreSQL cluster $version/$name on port $pg_port"
as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start 2>/dev/null || true

psql_admin() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -p "$pg_port" -d postgres "$@"; }
for _ in $(seq 30); do psql_admin -c 'select 1' >/dev/null 2>&1 && break; sleep 1; done
if [ -z "$(psql_admin -tA -c "select 1 from pg_roles where rolname = '$pg_role'")" ]; then
  echo "[tests] creating role $pg_role"
  psql_admin -c "create role \"$pg_role\" login superuser"
fi
if [ -z "$(psql_admin -tA -c "select 1 from pg_database where datname = '$pg_db'")" ]; then
  echo "[tests] creating database $pg_db"
  psql_admin -c "create database \"$pg_db\" owner \"$pg_role\""
fi
hba=$(psql_admin -tA -c 'show hba_file')
rule="host $pg_db $pg_role 127.0.0.1/32 trust"
if ! as_root grep -qxF "$rule" "$hba"; then
  echo "[tests] letting $pg_role into $pg_db from 127.0.0.1 without a password ($hba)"
  as_root sed -i "1i $rule\nhost $pg_db $pg_role ::1/128 trust" "$hba"
  psql_admin -c 'select pg_reload_conf()' >/dev/null
fi

state=$(probe)
if [ "$state" != ok ]; then
  echo "[tests] PostgreSQL still does not let $pg_role into $pg_db at $pg_host:$pg_port: $state" >&2
  exit 1
fi
echo "[tests] PostgreSQL ready at $pg_host:$pg_port (database $pg_db, role $pg_role)"
