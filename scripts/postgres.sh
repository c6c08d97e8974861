#!/usr/bin/env bash
# A local PostgreSQL for `make test-postgres`, which runs this when
# AGENTDEV_PG is its default (a user who points AGENTDEV_PG at another
# server gets nothing installed). Debian's postgresql package (bookworm:
# 15) and its cluster on port 5432, started, with the role the URL names,
# LOGIN CREATEDB with the URL's password (agentdev creates its databases).
#
#   scripts/postgres.sh [postgres://USER:PASSWORD@127.0.0.1:5432]
#
# Safe to re-run: when the role can already log in over TCP and create
# databases it changes nothing and needs no root; an installed package, a
# running cluster and an existing role are kept. Installing, starting and
# creating the role need root, or sudo.
set -euo pipefail
SAY_PREFIX=test-postgres
. "$(dirname "$0")/lib.sh"

url=${1:-postgres://temporal:temporal@127.0.0.1:5432}
[[ $url =~ ^postgres(ql)?://([A-Za-z_][A-Za-z0-9_]*):([^@/]+)@(127\.0\.0\.1|localhost):([0-9]+)/?$ ]] ||
	fail "scripts/postgres.sh sets up a local server only: give postgres://USER:PASSWORD@127.0.0.1:PORT, not $url"
pg_user=${BASH_REMATCH[2]}
pg_password=${BASH_REMATCH[3]}
pg_host=127.0.0.1
pg_port=${BASH_REMATCH[5]}
[[ $pg_password != *"'"* ]] || fail "the password may not hold a single quote"

# ready: the role logs in over TCP with its password and may create databases.
ready() {
	command -v psql >/dev/null 2>&1 &&
		[ "$(PGCONNECT_TIMEOUT=3 psql "postgres://$pg_user:$pg_password@$pg_host:$pg_port/postgres" -tAXqc \
			"SELECT rolcreatedb FROM pg_roles WHERE rolname = current_user" 2>/dev/null)" = t ]
}
if ready; then
	say "PostgreSQL ready on $pg_host:$pg_port (role $pg_user, CREATEDB)"
	exit 0
fi

# The package, when there is no server install (pg_lsclusters lists none).
if ! command -v pg_lsclusters >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
	apt_install "PostgreSQL is not installed" postgresql
fi
can_root || fail "PostgreSQL's cluster and role need root, and this is not root and has no sudo: run, as root: $0 $*"

# The cluster on the port: created when there is none at all, started when down.
if [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
	version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
	say "creating cluster $version/main on port $pg_port…"
	as_root pg_createcluster -p "$pg_port" "$version" main >/dev/null
fi
read -r version cluster _ status _ < <(pg_lsclusters -h | awk -v p="$pg_port" '$3 == p' | head -n 1) ||
	fail "no PostgreSQL cluster listens on port $pg_port (pg_lsclusters lists others): start one there, or set AGENTDEV_PG"
if [ "$status" != online ]; then
	say "starting cluster $version/$cluster…"
	as_root pg_ctlcluster "$version" "$cluster" start
fi
for _ in $(seq 1 30); do
	pg_isready -q -h "$pg_host" -p "$pg_port" && break
	sleep 1
done
pg_isready -q -h "$pg_host" -p "$pg_port" || fail "PostgreSQL on $pg_host:$pg_port is not ready after 30 s"

# The role Temporal connects as; CREATEDB so agentdev creates its databases.
say "creating or updating role $pg_user…"
as_root runuser -u postgres -- psql -v ON_ERROR_STOP=1 -qX -p "$pg_port" -d postgres <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$pg_user') THEN
    CREATE ROLE "$pg_user" LOGIN CREATEDB PASSWORD '$pg_password';
  ELSE
    ALTER ROLE "$pg_user" LOGIN CREATEDB PASSWORD '$pg_password';
  END IF;
END \$\$;
SQL
ready || fail "role $pg_user still cannot log in on $pg_host:$pg_port with its password (see pg_hba.conf)"
say "PostgreSQL ready on $pg_host:$pg_port (role $pg_user, CREATEDB)"
