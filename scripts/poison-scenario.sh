#!/usr/bin/env bash
# A poison record among ordinary ones, with the CLI processes alone.
#
#   scripts/poison-scenario.sh [--brokers HOST:PORT] [--records N]
#
# The input topic accepts records up to 4 MiB (max.message.bytes), the
# output and rejected topics the broker's default (1 MiB). Three `onceflow
# run copy` replicas start; N ordinary records are produced with one record
# of 2 MiB in the middle: its copy can never be produced. Expected: the
# poison record is in <app-id>-rejected with reason too-large (cut to fit,
# with its lineage), every ordinary record is in the output exactly once
# (`onceflow verify` and kcat, read_committed), and no replica restarted its
# session more than a handful of times.
#
# Without --brokers an embedded `onceflow broker` is started and stopped.
records=100000 kills=0
# shellcheck source=scripts/scenario-lib.sh
. "$(dirname "$0")/scenario-lib.sh"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
ensure_kcat
kcat=$(kcat_bin)
echo "brokers $brokers; logs in $work"
run_id=$(date +%s)
app="poison-$run_id" in="poison-in-$run_id" out="poison-out-$run_id"
poison_size=$((2 << 20))
max_sessions=${MAX_SESSIONS:-6}

start_replica() { # instance port
  $of run copy --brokers "$brokers" --app-id "$app" --input "$in" --output "$out" --instance-id "$1" \
    --guarantee exactly_once --metrics-addr "127.0.0.1:$2" --log-level info >>"$work/$1.log" 2>&1 &
  echo $!
}
wait_ready() { # ports...
  for p in "$@"; do
    for _ in $(seq 300); do curl -sf "http://127.0.0.1:$p/readyz" >/dev/null && break; sleep 0.1; done
  done
}
metric() { # port name [label="value"]: the sum of the metric's series (with that label)
  curl -sf "http://127.0.0.1:$1/metrics" |
    awk -v n="$2" -v l="${3:-}" '($1 == n || index($1, n "{") == 1) && index($1, l) { s += $2 } END { print s + 0 }'
}

# The topic is created by the first record, with the raised limit.
$of produce -b "$brokers" --topic "$in" --records 1 --partitions 6 \
  --topic-config max.message.bytes=$((4 << 20)) --no-progress >/dev/null
base_port=$((20000 + RANDOM % 20000))
rp=()
for i in 1 2 3; do rp+=("$(start_replica "r$i" $((base_port + i)))"); done
pids+=("${rp[@]}")
wait_ready $((base_port + 1)) $((base_port + 2)) $((base_port + 3))
half=$((records / 2))
$of produce -b "$brokers" --topic "$in" --records $((half - 1)) --no-progress >/dev/null
$of produce -b "$brokers" --topic "$in" --records 1 --value-size "$poison_size" --no-progress >/dev/null
$of produce -b "$brokers" --topic "$in" --records $((records - half)) --no-progress >/dev/null
echo "produced $records ordinary records to $in with one of $poison_size bytes after the first $half"
$of lag -b "$brokers" -g "$app" -t "$in" --wait 600s

fail=0
check() { # description condition...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}

echo "== onceflow verify --input $in --output $out --rejected $app-rejected (the poison record's outcome is its rejection)"
rep=$($of verify --brokers "$brokers" --input "$in" --output "$out" --rejected "$app-rejected" --json || true)
echo "$rep"
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$rep" "$1"; }
check "verify: input $((records + 1)), output $records, 1 rejected only, 0 missing, 0 doubled, 0 unexpected" \
  test "$(field input)/$(field output)/$(field rejected_only)/$(field missing)/$(field doubled)/$(field unexpected)" = "$((records + 1))/$records/1/0/0/0"

echo "== kcat, read_committed"
poison=$($kcat -C -b "$brokers" -t "$in" -X isolation.level=read_committed -o beginning -e -q -f '%p/%o %S\n' |
  awk -v n="$poison_size" '$2 > n - 4096 { print $1 }')
echo "poison record: $in/$poison"
$kcat -C -b "$brokers" -t "$out" -X isolation.level=read_committed -o beginning -e -q -f '%s\n' >"$work/out.values"
total=$(wc -l <"$work/out.values") distinct=$(sort -u "$work/out.values" | wc -l)
echo "output: $total records, $distinct distinct values"
check "kcat: $records output records, all distinct" test "$total/$distinct" = "$records/$records"
$kcat -C -b "$brokers" -t "$app-rejected" -X isolation.level=read_committed -o beginning -e -q \
  -f '%S bytes; headers: %h\n' >"$work/rejected.txt"
sed 's/onceflow-reject-error=\([^,]*\)/onceflow-reject-error=\1/' "$work/rejected.txt"
check "kcat: one rejected record" test "$(wc -l <"$work/rejected.txt")" = 1
check "rejected: reason too-large" grep -q 'onceflow-reject-reason=too-large' "$work/rejected.txt"
check "rejected: lineage $in/$poison" grep -q "onceflow-source=$in/$poison" "$work/rejected.txt"
check "rejected: truncated from $poison_size bytes" grep -q "onceflow-reject-truncated=value=$poison_size" "$work/rejected.txt"

echo "== sessions per replica"
for i in 1 2 3; do
  port=$((base_port + i))
  s=$(metric "$port" onceflow_rebalances_total) a=$(metric "$port" onceflow_transactions_total 'outcome="aborted"')
  c=$(metric "$port" onceflow_transactions_total 'outcome="committed"')
  r=$(metric "$port" onceflow_rejected_records_total 'reason="too-large"')
  started=$(grep -c 'session started' "$work/r$i.log" || true)
  failed=$(grep -c 'transaction failed' "$work/r$i.log" || true)
  echo "r$i: log: $started sessions started, $failed transactions failed; metrics: $s sessions, $c committed, $a aborted, $r rejected too-large"
  check "r$i: at most $max_sessions sessions, no failed transaction" test "$started" -le "$max_sessions" -a "$failed" -eq 0
done
exit "$fail"
