#!/usr/bin/env bash
# Runs a command against a three-broker KRaft cluster of scripts/kafka.sh,
# started here and stopped (its data removed) when the command ends,
# however it ends:
#
#   scripts/with-cluster.sh CMD [ARG...]
#
# The command gets ONCEFLOW_KAFKA_BROKERS (the bootstrap list) and
# ONCEFLOW_KAFKA_CLUSTER_DIR (the cluster's folder, which tests and
# onceflow chaos --cluster-dir use to kill and restart its brokers). The
# folder is ONCEFLOW_KAFKA_DIR, default .kafka-cluster-run; KAFKA_PORT and
# KAFKA_CONTROLLER_PORT choose the ports as for scripts/kafka.sh. A cluster
# already running in that folder is refused: this script owns its cluster.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

[ $# -gt 0 ] || die "usage: $0 CMD [ARG...]"
export ONCEFLOW_KAFKA_DIR="${ONCEFLOW_KAFKA_DIR:-.kafka-cluster-run}"
case "$ONCEFLOW_KAFKA_DIR" in /*) ;; *) ONCEFLOW_KAFKA_DIR="$PWD/$ONCEFLOW_KAFKA_DIR" ;; esac
if scripts/kafka.sh status >/dev/null 2>&1; then
	die "a broker already runs in $ONCEFLOW_KAFKA_DIR; stop it (scripts/kafka.sh down) or choose another ONCEFLOW_KAFKA_DIR"
fi

# Set before `up`, so that a start that fails half-way is cleaned too.
trap 'scripts/kafka.sh down >&2 || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
ONCEFLOW_KAFKA_BROKERS="$(scripts/kafka.sh up --brokers 3 | tail -n 1)"
[ -n "$ONCEFLOW_KAFKA_BROKERS" ] || die "scripts/kafka.sh up --brokers 3 printed no address"
export ONCEFLOW_KAFKA_BROKERS ONCEFLOW_KAFKA_CLUSTER_DIR="$ONCEFLOW_KAFKA_DIR"
log "cluster $ONCEFLOW_KAFKA_BROKERS in $ONCEFLOW_KAFKA_CLUSTER_DIR; running: $*"

# As in test-kafka.sh: the command runs in a process group of its own, which
# INT or TERM to this script ends before the cluster is stopped.
setsid "$@" &
pid=$!
trap 'kill -TERM -- "-$pid" 2>/dev/null || true' INT TERM
while :; do
	rc=0
	wait "$pid" || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done
exit "$rc"
