#!/usr/bin/env bash
# The tests that need PostgreSQL (the database sink), against a real server.
#
#   scripts/test-pg.sh                  ./sinks/... and the PostgreSQL tests of the runner and the sinks scenario (files tagged `pg`)
#   scripts/test-pg.sh ./pkg [flags]    go test -race of those packages
#   scripts/test-pg.sh -- make test     any command, with ONCEFLOW_PG_DSN set
#
# With ONCEFLOW_PG_DSN set, the tests use that server and nothing is
# started. Without it, the server of scripts/install-postgres.sh is used
# (Debian's postgresql, installed when missing): one already running is
# left running; one this script starts is stopped when the script exits.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

if [ -z "${ONCEFLOW_PG_DSN:-}" ]; then
	if scripts/install-postgres.sh status >/dev/null 2>&1; then
		log "using the PostgreSQL that is already running (left running afterwards)"
	else
		trap 'scripts/install-postgres.sh stop || true' EXIT
	fi
	ONCEFLOW_PG_DSN="$(scripts/install-postgres.sh | tail -n 1)"
	[ -n "$ONCEFLOW_PG_DSN" ] || die "scripts/install-postgres.sh printed no DSN"
fi
export ONCEFLOW_PG_DSN
log "ONCEFLOW_PG_DSN=$ONCEFLOW_PG_DSN"

if [ "${1:-}" = "--" ]; then
	shift
	"$@"
	exit
fi
if [ $# -eq 0 ]; then
	# The sinks, then the runner's end-to-end tests against PostgreSQL.
	"${GO:-go}" test -race -count=1 ./sinks/...
	exec scripts/test-tagged.sh pg ./internal/sinkrunner ./cmd/onceflow/internal/scenario
fi
"${GO:-go}" test -race -count=1 "$@"
