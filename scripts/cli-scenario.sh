#!/usr/bin/env bash
# The engine core's CLI scenario, with the CLI processes alone.
#
#   scripts/cli-scenario.sh [--brokers HOST:PORT] [--records N] [--kills K]
#
# 1. Throughput, side by side in one run: for each guarantee (exactly_once,
#    then at_least_once) three `onceflow run copy` replicas start on an empty
#    topic, N records are produced into 6 partitions, and the time until the
#    group has committed through the end gives records/s.
# 2. Chaos: N records, three exactly-once replicas, one killed with SIGKILL
#    and restarted K times during the run, then `onceflow verify`.
#
# Without --brokers an embedded `onceflow broker` is started and stopped.
records=200000 kills=2
# shellcheck source=scripts/scenario-lib.sh
. "$(dirname "$0")/scenario-lib.sh"
echo "brokers $brokers; logs in $work"
run_id=$(date +%s)

start_replica() { # app input output instance guarantee port
  $of run copy --brokers "$brokers" --app-id "$1" --input "$2" --output "$3" --instance-id "$4" \
    --guarantee "$5" --metrics-addr "127.0.0.1:$6" --log-level info >>"$work/$1-$4.log" 2>&1 &
  echo $!
}

wait_ready() { # ports...
  for p in "$@"; do
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:$p/readyz" >/dev/null && break; sleep 0.1; done
  done
}

now() { date +%s.%N; }
stop_pid() { # graceful stop of a replica started in a subshell
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 300); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}
base_port=$((20000 + RANDOM % 20000))

declare -A rate
for g in ${GUARANTEES:-exactly_once at_least_once}; do
  app="tp-$g-$run_id" in="tp-in-$g-$run_id" out="tp-out-$g-$run_id"
  $of produce -b "$brokers" --topic "$in" --records 1 --partitions 6 --no-progress >/dev/null
  rp=()
  for i in 1 2 3; do rp+=("$(start_replica "$app" "$in" "$out" "r$i" "$g" $((base_port + i)))"); done
  pids+=("${rp[@]}")
  wait_ready $((base_port + 1)) $((base_port + 2)) $((base_port + 3))
  $of lag -b "$brokers" -g "$app" -t "$in" --wait 60s >/dev/null
  sleep 2
  t0=$(now)
  $of produce -b "$brokers" --topic "$in" --records "$records" --no-progress >/dev/null
  $of lag -b "$brokers" -g "$app" -t "$in" --wait 600s >/dev/null
  t1=$(now)
  rate[$g]=$(python3 -c "print(round($records/($t1-$t0)))")
  echo "throughput $g: $records records in $(python3 -c "print(round($t1-$t0,2))") s = ${rate[$g]} records/s"
  for p in "${rp[@]}"; do stop_pid "$p"; done
  base_port=$((base_port + 10))
done
if [ -n "${rate[exactly_once]:-}" ] && [ -n "${rate[at_least_once]:-}" ]; then
  echo "exactly_once / at_least_once = $(python3 -c "print(round(${rate[exactly_once]}/${rate[at_least_once]},3))")"
fi

# Chaos: exactly-once, one replica killed with SIGKILL and restarted $kills
# times while records flow: the input goes in $kills+1 chunks, and each kill
# lands while the replicas are working through a chunk.
app="chaos-$run_id" in="chaos-in-$run_id" out="chaos-out-$run_id"
chunk=$(( records / (kills + 1) ))
$of produce -b "$brokers" --topic "$in" --records "$chunk" --partitions 6 --no-progress
rp=()
for i in 1 2 3; do rp+=("$(start_replica "$app" "$in" "$out" "r$i" exactly_once $((base_port + i)))"); done
pids+=("${rp[@]}")
victim=${rp[2]}
committed() { $of lag -b "$brokers" -g "$app" -t "$in" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["committed"])'; }
produced=$chunk
for k in $(seq "$kills"); do
  while [ "$(committed)" -lt "$produced" ]; do sleep 0.05; done
  n=$(( k == kills ? records - produced : chunk ))
  $of produce -b "$brokers" --topic "$in" --records "$n" --no-progress >/dev/null
  base=$produced produced=$(( produced + n ))
  while c=$(committed); [ "$c" -le "$base" ]; do sleep 0.02; done
  kill -KILL "$victim"
  while kill -0 "$victim" 2>/dev/null; do sleep 0.01; done
  echo "chaos: killed r3 (pid $victim) with SIGKILL at $c of $produced produced records committed; restarting it"
  victim=$(start_replica "$app" "$in" "$out" r3 exactly_once $((base_port + 3)))
  pids+=("$victim")
done
$of lag -b "$brokers" -g "$app" -t "$in" --wait 600s
echo "chaos: onceflow verify --brokers $brokers --input $in --output $out --json"
$of verify --brokers "$brokers" --input "$in" --output "$out" --json
if command -v kcat >/dev/null 2>&1; then
  kcat -C -b "$brokers" -t "$out" -X isolation.level=read_committed -o beginning -e -q -f '%s\n' >"$work/kcat.out"
  echo "chaos: kcat read_committed: $(wc -l <"$work/kcat.out") records, $(sort -u "$work/kcat.out" | wc -l) distinct values (input $records)"
fi
