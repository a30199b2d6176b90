# Shared by the scenario scripts: flags, the CLI build, clean-up of the
# processes they start, and an embedded broker when no --brokers is given.
# Before sourcing, set records and kills to the script's defaults; before
# calling the replica functions, set example (the `onceflow run` topology),
# app, in, out and base_port.
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

start_replica() { # instance port state-dir: prints the pid
  $of run "$example" --brokers "$brokers" --app-id "$app" --input "$in" --output "$out" --instance-id "$1" \
    --state-dir "$3" --metrics-addr "127.0.0.1:$2" --log-level info >>"$work/$1.log" 2>&1 &
  echo $!
}
metric() { # port name: sum of a metric's series
  curl -sf "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 ~ "^"n"({|$)" {s += $2} END {printf "%d\n", s}'
}
committed() { # 0 until the group has committed
  $of lag -b "$brokers" -g "$app" -t "$in" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["committed"])' 2>/dev/null || echo 0
}
# gone PID succeeds once PID has exited: no such process, or a zombie
# whose threads have all exited. A replica started in $(...) is an orphan
# whose reaping by init can take over a second (1.3 s for a killed `sleep`
# on the benchmark machine), which kill -0 would count as exiting. But the
# main thread of a killed Go process turns zombie while its other threads
# still exit, and they hold its files (the metrics port, the state
# directory's lock) until the last one is gone: about 100 ms for a process
# with an 800 MB heap, during which a restart could not bind the port. So
# a zombie counts as gone only at one thread.
gone() {
  local st th
  st=$(awk '/^State:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 0
  th=$(awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 0
  [ -z "$st" ] || { [ "$st" = Z ] && [ "${th:-1}" = 1 ]; }
}
wait_ready() { for _ in $(seq 600); do curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0; sleep 0.1; done; return 1; }

# run_replicas_with_kills starts replicas r1, r2 and r3, then kills r3 with
# SIGKILL $kills times, evenly over the $records input records, restarting
# it on its state each time, and prints how long each kill took to exit
# and the restarted replica to report ready (its /readyz: in a group
# session with its tasks restored). The pids are left in rp (r1, r2) and victim
# (the last r3).
run_replicas_with_kills() {
  rp=()
  for i in 1 2 3; do rp+=("$(start_replica "r$i" $((base_port + i)) "$work/state-r$i")"); done
  pids+=("${rp[@]}")
  victim=${rp[2]}
  for k in $(seq "$kills"); do
    target=$(( records * k / (kills + 1) ))
    while c=$(committed); [ "$c" -lt "$target" ]; do sleep 0.05; done
    t_kill=$(date +%s.%N)
    kill -KILL "$victim"
    until gone "$victim"; do sleep 0.01; done
    t_exit=$(date +%s.%N)
    echo "killed r3 (pid $victim) with SIGKILL at $c of $records committed; restarting it on its state"
    victim=$(start_replica r3 $((base_port + 3)) "$work/state-r3")
    pids+=("$victim")
    wait_ready $((base_port + 3))
    t_ready=$(date +%s.%N)
    echo "  r3 back: restored $(metric $((base_port + 3)) onceflow_restored_records_total) changelog records;" \
      "$(awk -v k="$t_kill" -v e="$t_exit" -v r="$t_ready" 'BEGIN {printf "kill -> exit %.2f s, restart -> ready %.2f s, kill -> ready %.2f s", e-k, r-e, r-k}')"
  done
}
