#!/usr/bin/env bash
# The state scenario with the CLI processes alone:
#
#   scripts/orders-scenario.sh [--brokers HOST:PORT] [--records N] [--kills K]
#
# N order events (10% duplicates, 1% conflicts, 5% out of order) with their
# ground truth, three `onceflow run orders` replicas with their own state
# directories, one killed with SIGKILL and restarted on its state K times
# while events flow; then `onceflow verify --truth`, the restarted replica's
# onceflow_restored_records_total, and a cold restore (an empty state
# directory restoring every task) to measure the restore rate.
# Without --brokers an embedded `onceflow broker` is started and stopped.
records=500000 kills=3
# shellcheck source=scripts/scenario-lib.sh
. "$(dirname "$0")/scenario-lib.sh"
run_id=$(date +%s)
app="orders-$run_id" in="orders-in-$run_id" out="orders-totals-$run_id"
echo "brokers $brokers; work dir $work"

example=orders
base_port=$((20000 + RANDOM % 20000))

$of produce --example orders -b "$brokers" --topic "$in" --records "$records" --partitions 6 \
  --duplicates 0.10 --conflicts 0.01 --out-of-order 0.05 --truth "$work/truth.json" --no-progress
run_replicas_with_kills
$of lag -b "$brokers" -g "$app" -t "$in" --wait 1200s
echo "restarted r3: onceflow_restored_records_total $(metric $((base_port + 3)) onceflow_restored_records_total)"
for p in "${rp[@]:0:2}" "$victim"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${rp[@]:0:2}" "$victim"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done

echo "onceflow verify --truth $work/truth.json --input $in --output $out --rejected $app-rejected"
$of verify --truth "$work/truth.json" -b "$brokers" --input "$in" --output "$out" --rejected "$app-rejected" --json | tee "$work/verify.json"
echo

# Cold restore: one replica with an empty state directory restores every task.
t0=$(date +%s.%N)
cold=$(start_replica r1 $((base_port + 9)) "$work/state-cold")
pids+=("$cold")
wait_ready $((base_port + 9))
t1=$(date +%s.%N)
n=$(metric $((base_port + 9)) onceflow_restored_records_total)
echo "cold restore: $n changelog records in $(python3 -c "print(round($t1-$t0,2))") s to ready (process start, group join and restore) = $(python3 -c "print(round($n/($t1-$t0)))") records/s"
grep -h '"restored\|restored:' "$work/r1.log" | tail -3 || true
