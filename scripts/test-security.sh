#!/usr/bin/env bash
# The security suite (build tag `kafkasecure`, cmd/onceflow) against a real
# Apache Kafka with SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), TLS with
# client certificates, SASL_SSL and ACLs: scripts/kafka-secure.sh.
#
#   scripts/test-security.sh              the whole suite
#   scripts/test-security.sh -run Matrix  go test flags are passed on
#
# With ONCEFLOW_SECURE_ENV set (the env file of a running kafka-secure.sh),
# that broker is used and nothing is started. Otherwise the broker of
# scripts/kafka-secure.sh is used: one already running is left running; one
# this script starts is stopped (and its data removed) when the script exits.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

if [ -z "${ONCEFLOW_SECURE_ENV:-}" ]; then
	if scripts/kafka-secure.sh status >/dev/null 2>&1; then
		log "using the secured broker that is already running (left running afterwards)"
	else
		trap 'scripts/kafka-secure.sh down || true' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
	fi
	ONCEFLOW_SECURE_ENV="$(scripts/kafka-secure.sh up | tail -n 1)"
	[ -f "$ONCEFLOW_SECURE_ENV" ] || die "scripts/kafka-secure.sh up printed no env file"
fi
export ONCEFLOW_SECURE_ENV
log "ONCEFLOW_SECURE_ENV=$ONCEFLOW_SECURE_ENV"

# As in scripts/test-kafka.sh: go test in a process group of its own, ended
# with SIGTERM on INT or TERM; the EXIT trap then stops a broker started here.
# By default the tests of the files tagged kafkasecure.
[ $# -gt 0 ] || set -- -run "$(scripts/test-tagged.sh -r kafkasecure ./cmd/onceflow)"
setsid "${GO:-go}" test -v -count=1 -tags kafkasecure -timeout 20m "$@" ./cmd/onceflow &
gopid=$!
trap 'kill -TERM -- "-$gopid" 2>/dev/null || true' INT TERM
while :; do
	rc=0
	wait "$gopid" || rc=$?
	kill -0 "$gopid" 2>/dev/null || break
done
exit "$rc"
