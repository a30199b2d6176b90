#!/usr/bin/env bash
# The external-sinks scenario with the CLI processes alone:
#
#   ONCEFLOW_PG_DSN=postgres://... scripts/sinks-scenario.sh [--brokers HOST:PORT] [--records N] [--kills K]
#
# N order events (10% duplicates, 1% conflicts, 5% out of order) with their
# ground truth; a webhook receiver that misbehaves (20% of answers dropped
# after applying, 10% 503, 5% 429, Retry-After 1 s); three `onceflow run
# orders --webhook ... --pg ...` replicas, one killed with SIGKILL and
# restarted on its state K times while deliveries are out (at shares of
# the accepted events applied at the receiver). Then, once every
# delivery is settled: effects at the receiver (its /stats) against the
# accepted events, PostgreSQL rows against the accepted events, dead
# letters against the receiver's permanent failures, `onceflow sinks
# status`, and `onceflow verify --truth` for the totals. Exits 1 on a
# mismatch. BAD_REQUEST_RATE (default 0) makes the receiver also answer
# that share of requests 400 (permanent: dead letters, no effect). The
# database named in the DSN gets a fresh database of its own per run
# (sinks_<run id>), dropped at the end unless KEEP_DB=1.
records=200000 kills=2
# shellcheck source=scripts/scenario-lib.sh
. "$(dirname "$0")/scenario-lib.sh"
: "${ONCEFLOW_PG_DSN:?set ONCEFLOW_PG_DSN (scripts/install-postgres.sh prints one)}"
run_id=$(date +%s)
app="sinks-$run_id" in="sinks-in-$run_id" out="sinks-totals-$run_id"
db="sinks_$run_id"
base_dsn=$ONCEFLOW_PG_DSN
dsn=$(python3 -c 'import sys,urllib.parse as u; p=u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/"+sys.argv[2])))' "$base_dsn" "$db")
psql -q "$base_dsn" -c "CREATE DATABASE $db"
drop_db() { [ "${KEEP_DB:-0}" = 1 ] || psql -q "$base_dsn" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; }
trap 'cleanup; drop_db' EXIT
echo "brokers $brokers; database $db; work dir $work"
base_port=$((20000 + RANDOM % 20000))
rport=$((base_port + 10))

$of receiver --addr "127.0.0.1:$rport" --drop-rate 0.20 --unavailable-rate 0.10 --throttle-rate 0.05 \
  --bad-request-rate "${BAD_REQUEST_RATE:-0}" --retry-after 1s --seed "$run_id" >"$work/receiver.log" 2>&1 &
pids+=($!)
stats() { curl -sf "http://127.0.0.1:$rport/stats"; }
for _ in $(seq 100); do stats >/dev/null && break; sleep 0.1; done

start_replica() { # instance port state-dir
  $of run orders --brokers "$brokers" --app-id "$app" --input "$in" --output "$out" --instance-id "$1" \
    --state-dir "$3" --metrics-addr "127.0.0.1:$2" --log-level info \
    --webhook "http://127.0.0.1:$rport/orders" --pg "$dsn" >>"$work/$1.log" 2>&1 &
  echo $!
}

wait_ready() { for _ in $(seq 600); do curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0; sleep 0.1; done; return 1; }
rows() { psql -tA "$dsn" -c "SELECT count(*) FROM onceflow_orders" 2>/dev/null || echo 0; }
effects() { stats | python3 -c 'import json,sys; print(json.load(sys.stdin)["effects"])' 2>/dev/null || echo 0; }

t0=$(date +%s.%N)
$of produce --example orders -b "$brokers" --topic "$in" --records "$records" --partitions 6 \
  --duplicates 0.10 --conflicts 0.01 --out-of-order 0.05 --truth "$work/truth.json" --no-progress
accepted=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["accepted"])' "$work/truth.json")
echo "produced $records events; $accepted accepted by the truth"
rp=()
for i in 1 2 3; do rp+=("$(start_replica "r$i" $((base_port + i)) "$work/state-r$i")"); done
pids+=("${rp[@]}")
victim=${rp[2]}
for k in $(seq "$kills"); do
  # Killed while deliveries are out: at a share of the effects expected.
  target=$(( accepted * k / (kills + 1) * 9 / 10 ))
  while e=$(effects); [ "$e" -lt "$target" ]; do sleep 0.05; done
  kill -KILL "$victim"
  while kill -0 "$victim" 2>/dev/null; do sleep 0.01; done
  echo "killed r3 (pid $victim) with SIGKILL at $e of $accepted effects at the receiver, $(rows) rows; restarting it on its state"
  victim=$(start_replica r3 $((base_port + 3)) "$work/state-r3")
  pids+=("$victim")
  wait_ready $((base_port + 3))
done
$of lag -b "$brokers" -g "$app" -t "$in" --wait 1200s
echo "input processed in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s; waiting for the deliveries"
# Every delivery settled: effects and rows reach the accepted count and
# stay there (retries after 503 and 429 wait at least Retry-After).
deadline=$(( $(date +%s) + 1200 ))
permanent() { stats | python3 -c 'import json,sys; a=json.load(sys.stdin)["answers"]; print(sum(a.get(k, 0) for k in ("400", "401", "422")))' 2>/dev/null || echo 0; }
while e=$(effects); r=$(rows); [ "$e" -lt $((accepted - $(permanent))) ] || [ "$r" -lt "$accepted" ]; do
  if [ "$(date +%s)" -gt "$deadline" ]; then echo "deliveries not settled after 1200 s: $e effects, $r rows, $accepted accepted"; break; fi
  sleep 1
done
echo "deliveries settled in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s (from the first produce)"
sleep 10 # anything more now would be a duplicate
$of sinks status -b "$brokers" --app-id "$app" | tee "$work/sinks-status.txt"
dl_notify=$($of dlq list -b "$brokers" --app-id "$app" --sink order-notifications --json | grep -c . || true)
dl_rows=$($of dlq list -b "$brokers" --app-id "$app" --sink order-rows --json | grep -c . || true)
for p in "${rp[@]:0:2}" "$victim"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${rp[@]:0:2}" "$victim"; do while kill -0 "$p" 2>/dev/null; do sleep 0.05; done; done
stats | tee "$work/receiver-stats.json"
echo

$of verify --truth "$work/truth.json" -b "$brokers" --input "$in" --output "$out" --rejected "$app-rejected" --json >"$work/verify.json" || true
python3 - "$work" "$dsn" "$dl_notify" "$dl_rows" <<'PY'
import json, subprocess, sys
work, dsn, dl_notify, dl_rows = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
truth = json.load(open(f"{work}/truth.json"))
st = json.load(open(f"{work}/receiver-stats.json"))
q = lambda sql: subprocess.run(["psql", "-tA", dsn, "-c", sql], capture_output=True, text=True, check=True).stdout.strip()
rows, distinct_rows = q("SELECT count(*), count(DISTINCT event_id) FROM onceflow_orders").split("|")
keys = q("SELECT count(*) FROM onceflow_sink_keys")
answers = st.get("answers", {})
permanent = sum(answers.get(a, 0) for a in ("400", "401", "422"))
accepted = truth["accepted"]
verify = json.load(open(f"{work}/verify.json"))
checks = [
    ("receiver effects == accepted events - permanent failures", st["effects"], accepted - permanent),
    ("receiver distinct keys == accepted events", st["distinct_keys"], accepted),
    ("receiver duplicate effects == 0", st["duplicate_effects"], 0),
    ("postgres rows == accepted events", int(rows), accepted),
    ("postgres distinct event ids == accepted events", int(distinct_rows), accepted),
    ("postgres idempotency keys == accepted events", int(keys), accepted),
    ("dead letters (webhook) == receiver permanent failures", dl_notify, permanent),
    ("dead letters (postgres) == 0", dl_rows, 0),
]
print(f"receiver: {st['requests']} requests, answers {answers}, {st['duplicate_attempts']} re-sent after an applied attempt, {st.get('fence_regressions', 0)} fence regressions")
print(f"verify --truth: {'ok' if verify.get('ok', verify.get('OK')) else 'see ' + work + '/verify.json'}")
bad = 0
for name, got, want in checks:
    ok = got == want
    bad += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {got} (want {want})")
sys.exit(1 if bad else 0)
PY
