#!/usr/bin/env bash
# The integration suite (build tag `kafka`) against a real Apache Kafka,
# with the slow tests of `make test-long` (build tag `long`) among the
# tests of `make test`.
#
#   scripts/test-kafka.sh                 all packages (./...)
#   scripts/test-kafka.sh ./internal/...  only these packages (go test flags work too)
#
# With ONCEFLOW_KAFKA_BROKERS set, the tests use that cluster and nothing is
# started. Without it, the broker of scripts/kafka.sh is used: one already
# running is left running; one this script starts is stopped (and its data
# removed) when the script exits, however it exits.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

# Tests may use kcat as an independent read_committed checker.
ensure_kcat

if [ -z "${ONCEFLOW_KAFKA_BROKERS:-}" ]; then
	if scripts/kafka.sh status >/dev/null 2>&1; then
		log "using the broker that is already running (left running afterwards)"
	else
		# Set before `up`, so that a start that fails half-way is cleaned too.
		trap 'scripts/kafka.sh down || true' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
	fi
	ONCEFLOW_KAFKA_BROKERS="$(scripts/kafka.sh up | tail -n 1)"
	[ -n "$ONCEFLOW_KAFKA_BROKERS" ] || die "scripts/kafka.sh up printed no address"
else
	log "using ONCEFLOW_KAFKA_BROKERS=$ONCEFLOW_KAFKA_BROKERS"
	if ! "$(kcat_bin)" -L -b "${ONCEFLOW_KAFKA_BROKERS%%,*}" -m 10 >/dev/null 2>&1; then
		log "warning: kcat got no metadata from ${ONCEFLOW_KAFKA_BROKERS%%,*} (SASL/TLS clusters need more settings; carrying on)"
	fi
fi
export ONCEFLOW_KAFKA_BROKERS
log "ONCEFLOW_KAFKA_BROKERS=$ONCEFLOW_KAFKA_BROKERS"

if [ $# -eq 0 ]; then
	set -- ./...
fi
# go test runs in a process group of its own (setsid; bash without job
# control does not fork for it, so $! is both its pid and its group), and an
# INT or TERM to this script ends that whole group, test binaries included,
# with SIGTERM (a command started with & has SIGINT ignored, so INT would not
# reach it). The script waits and exits with go test's status, after which
# the EXIT trap stops a broker this script started.
# Without the race detector: `make test` runs the same tests with it; here
# sarama's own data race on failed produce requests (see
# internal/engine/producer_errors_test.go) would fail runs that real
# brokers push onto that path.
setsid "${GO:-go}" test -count=1 -tags kafka,long -timeout 30m "$@" &
gopid=$!
trap 'kill -TERM -- "-$gopid" 2>/dev/null || true' INT TERM
while :; do
	rc=0
	wait "$gopid" || rc=$?
	# wait also returns when a trapped signal arrives; go on until go test is gone.
	kill -0 "$gopid" 2>/dev/null || break
done
exit "$rc"
