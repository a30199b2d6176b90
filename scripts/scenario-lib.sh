# Shared by the scenario scripts: flags, the CLI build, clean-up of the
# processes they start, and an embedded broker when no --brokers is given.
# Before sourcing, set records and kills to the script's defaults.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

brokers=""
while [ $# -gt 0 ]; do
  case "$1" in
    --brokers) brokers="$2"; shift 2 ;;
    --records) records="$2"; shift 2 ;;
    --kills) kills="$2"; shift 2 ;;
    *) echo "usage: $0 [--brokers B] [--records N] [--kills K]" >&2; exit 2 ;;
  esac
done

go build -o bin/onceflow ./cmd/onceflow
of=bin/onceflow
work=$(mktemp -d "/tmp/onceflow-$(basename "$0" .sh).XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

if [ -z "$brokers" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  brokers="127.0.0.1:$port"
  $of broker --addr "$brokers" >"$work/broker.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q listening "$work/broker.log" && break; sleep 0.1; done
fi
