#!/usr/bin/env bash
# A PostgreSQL server for local tests of the database sink, on loopback only.
#
#   scripts/install-postgres.sh         install (Debian's postgresql, when no
#                                       server is installed), start, and print
#                                       the DSN as the last line of stdout
#   scripts/install-postgres.sh stop    stop it (the data stays)
#   scripts/install-postgres.sh status  tell whether it runs (exit 0) or not (exit 1)
#   scripts/install-postgres.sh destroy stop it and remove its data
#
# The cluster has its own data folder (not the system's cluster), listens on
# 127.0.0.1 only, has no Unix socket, trusts every local connection (user
# `postgres`, no password) and has a database `onceflow`. It trades durability
# for speed (fsync off): it is for tests only.
#
# Environment (all optional):
#   ONCEFLOW_PG_PORT  port, default 15432
#   ONCEFLOW_PG_DIR   state folder (data, log); default .cache/postgres
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

PORT="${ONCEFLOW_PG_PORT:-15432}"
DB=onceflow
PG_USER=postgres
STATE_DIR="${ONCEFLOW_PG_DIR:-$ONCEFLOW_ROOT/.cache/postgres}"
DSN="postgres://$PG_USER@127.0.0.1:$PORT/$DB?sslmode=disable"

# pg_bindir prints the newest installed server's bin folder, or nothing.
pg_bindir() {
	local d
	d="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -type d -name bin 2>/dev/null | sort -V | tail -n 1)"
	if [ -n "$d" ] && [ -x "$d/postgres" ]; then echo "$d"; fi
}

# as_pg runs a server command as the postgres user when we are root (the
# server refuses to run as root), else as ourselves.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

setup_dirs() {
	mkdir -p "$STATE_DIR"
	STATE_DIR="$(cd "$STATE_DIR" && pwd)"
	if [ "$(id -u)" -eq 0 ]; then
		id postgres >/dev/null 2>&1 || die "no postgres user (is the postgresql package installed?)"
		# The server runs as postgres: it must reach its folder. If a parent
		# folder bars it, fall back to one under /tmp.
		if ! runuser -u postgres -- test -x "$STATE_DIR"; then
			STATE_DIR="/tmp/onceflow-postgres-$PORT"
			log "postgres cannot reach the state folder; using $STATE_DIR"
			mkdir -p "$STATE_DIR"
		fi
		chown postgres: "$STATE_DIR"
	fi
	DATA="$STATE_DIR/data"
	LOG_FILE="$STATE_DIR/postgres.log"
}

pg_running() {
	[ -f "$DATA/PG_VERSION" ] && as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

cmd_start() {
	local t0
	t0="$(now_ms)"
	BIN="$(pg_bindir)"
	if [ -z "$BIN" ]; then
		apt_install postgresql
		BIN="$(pg_bindir)"
		[ -n "$BIN" ] || die "no PostgreSQL server found after installing postgresql"
	fi
	setup_dirs
	exec 9>"$STATE_DIR/lock"
	flock -w 120 9 || die "another install-postgres.sh holds $STATE_DIR/lock"

	if [ ! -f "$DATA/PG_VERSION" ]; then
		log "initialising a cluster in $DATA ($("$BIN/postgres" --version))"
		mkdir -p "$DATA"
		[ "$(id -u)" -ne 0 ] || chown postgres: "$DATA"
		as_pg "$BIN/initdb" -D "$DATA" -U "$PG_USER" --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
			>>"$LOG_FILE" 2>&1 9>&- || { tail -n 20 "$LOG_FILE" >&2; die "initdb failed"; }
	fi

	if pg_running; then
		log "already running ($DATA)"
	else
		! port_in_use "$PORT" || die "port $PORT is in use by something else (set ONCEFLOW_PG_PORT)"
		[ "$(id -u)" -ne 0 ] || { touch "$LOG_FILE" && chown postgres: "$LOG_FILE"; }
		log "starting PostgreSQL on 127.0.0.1:$PORT"
		# unix_socket_directories='' (TCP only) keeps it off the system
		# cluster's /var/run/postgresql and clear of socket path-length limits.
		as_pg "$BIN/pg_ctl" -D "$DATA" -l "$LOG_FILE" -w -t 60 \
			-o "-c listen_addresses=127.0.0.1 -c port=$PORT -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
			start >&2 9>&- || { tail -n 20 "$LOG_FILE" >&2; die "PostgreSQL did not start"; }
	fi

	local psql=(psql -X -q -h 127.0.0.1 -p "$PORT" -U "$PG_USER")
	command -v psql >/dev/null 2>&1 || psql=("$BIN/psql" "${psql[@]:1}")
	if [ "$("${psql[@]}" -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
		"${psql[@]}" -d postgres -c "CREATE DATABASE $DB" >&2
	fi
	"${psql[@]}" -d "$DB" -tAc 'SELECT 1' >/dev/null || die "cannot connect to $DSN"
	echo "$DSN" >"$STATE_DIR/dsn"
	log "ready in $(($(now_ms) - t0)) ms; log $LOG_FILE"
	echo "$DSN"
}

cmd_stop() {
	BIN="$(pg_bindir)"
	[ -n "$BIN" ] || { log "no PostgreSQL server is installed"; return 0; }
	setup_dirs
	if pg_running; then
		log "stopping PostgreSQL ($DATA)"
		as_pg "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >&2
	else
		log "not running"
	fi
}

cmd_status() {
	BIN="$(pg_bindir)"
	if [ -n "$BIN" ] && { setup_dirs; pg_running; }; then
		echo "running: $(cat "$STATE_DIR/dsn" 2>/dev/null || echo "$DSN")"
	else
		echo "not running"
		return 1
	fi
}

case "${1:-start}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
destroy)
	cmd_stop
	log "removing $STATE_DIR"
	rm -rf "$STATE_DIR"
	;;
*)
	echo "usage: $0 [start|stop|status|destroy]" >&2
	exit 2
	;;
esac
