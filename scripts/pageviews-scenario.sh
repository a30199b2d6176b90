#!/usr/bin/env bash
# The windowed example end to end with the CLI processes alone:
#
#   scripts/pageviews-scenario.sh [--brokers HOST:PORT] [--records N] [--kills K]
#
# N page views (5 % out of order within the 5-minute grace, 1 % beyond it)
# with their truth, three `onceflow run pageviews` replicas with their own
# state directories, one killed with SIGKILL and restarted on its state K
# times while views flow; then `onceflow pageviews verify`: every user-hour
# window's final count once, equal to the truth, and every late view in the
# rejected topic. Without --brokers an embedded `onceflow broker` is used.
# METRICS_PORT (default 25150) is the first of the four metrics ports.
records=1000000 kills=2
# shellcheck source=scripts/scenario-lib.sh
. "$(dirname "$0")/scenario-lib.sh"
run_id=$(date +%s)
app="pageviews-$run_id" in="pageviews-in-$run_id" out="pageviews-hourly-$run_id"
echo "brokers $brokers; work dir $work"

example=pageviews
base_port=${METRICS_PORT:-25150}

t0=$(date +%s.%N)
$of pageviews produce -b "$brokers" --topic "$in" --events "$records" --partitions 6 \
  --out-of-order 0.05 --late 0.01 --truth "$work/truth.json" --no-progress
run_replicas_with_kills
$of lag -b "$brokers" -g "$app" -t "$in" --wait 1200s
t1=$(date +%s.%N)
for i in 1 2; do echo "r$i: late rejections $(curl -sf "http://127.0.0.1:$((base_port + i))/metrics" | awk '/onceflow_rejected_records_total.*late/ {s += $2} END {printf "%d", s}')"; done
for p in "${rp[@]:0:2}" "$victim"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${rp[@]:0:2}" "$victim"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
echo "produced and processed in $(python3 -c "print(round($t1-$t0,1))") s"

echo "onceflow pageviews verify --truth $work/truth.json --output $out --rejected $app-rejected"
$of pageviews verify -b "$brokers" --truth "$work/truth.json" --output "$out" --rejected "$app-rejected" --json | tee "$work/verify.json"
