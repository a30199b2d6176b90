#!/usr/bin/env bash
# The full benchmark of the performance targets, on a real Kafka 4.4.0 broker
# of its own, every step one after the other, then TARGETS.md: each target
# with its measured figures, ratio and met / not met (onceflow bench-targets).
#
#   scripts/bench-full.sh [--quick] [--out DIR] [--steps S1,S2,...]
#                         [--orders-records N] [--orders-large-records N]
#                         [--copy-records N] [--repeats N] [--cold-records N]
#                         [--restore-records N]
#
# Steps, each a directory of DIR (default benchmarks/results/<UTC date>-full)
# with command.txt (the command, the commit, start and end, the load average
# before and after, the exit status) and output.txt (and, for the bench
# steps, results.json, the chart and CPU profiles under profiles/):
#
#   orders-300k           orders, eos, alos, kstreams_eos, kstreams_alos;
#                         latency at 2,000 events/s
#   orders-300k-half-max  orders, eos and alos; latency at half the eos maximum
#   orders-3m             orders, 3,000,000 events, eos, alos, kstreams_eos;
#                         throughput only
#   orders-300k-threads2  orders, eos and kstreams_eos at two threads each
#   orders-3m-threads2    (onceflow: two processors in the process; Kafka
#                         Streams: num.stream.threads=2); throughput only
#   copy                  copy, 100 B and 1 KB, every variant;
#                         latency at 20,000 records/s
#
# Every bench step runs --repeats (default 3) repeats in rotated order and
# reports medians with their min-max; the throughput steps with Kafka
# Streams measure each run after a cold window of --cold-records (default
# 100,000) records, the JIT's warm-up of its fresh JVM, reported apart.
#   copy-half-max         copy, 100 B, eos, alos, sarama; latency at half max
#   scale-r1, -r2, -r3    orders eos on 12 partitions with 1, 2, 3 replicas
#   restore               onceflow scenario orders: 3 SIGKILLs of a replica
#                         (kill -> ready, restart -> ready) and a cold restore
#
# A step that fails is recorded (its exit status in command.txt, its name in
# DIR/command.txt) and the next one runs. The broker is stopped and its data
# removed at the end, however the script ends. --quick runs every step with
# tiny sizes (a smoke test of the whole run, a few minutes; its figures mean
# nothing).
#
# Environment: BENCH_KAFKA_PORT (default 29092; the controller listens on
# the next port), BENCH_KAFKA_DIR (the broker's folder, default
# /tmp/onceflow-bench-full-kafka).
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

args="$*"
quick=0
out=""
steps=""
orders_records=300000
orders_large_records=3000000
copy_records=500000
repeats=3
cold_records=100000
restore_records=300000
scale_records=300000
latency_window=10s
warmup=100000
usage() {
	sed -n '5,9p' "$0" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--quick)
		quick=1
		orders_records=5000 orders_large_records=20000 copy_records=20000 repeats=1 cold_records=1000
		restore_records=5000 scale_records=5000 latency_window=2s warmup=2000
		shift
		;;
	--out) out="$2"; shift 2 ;;
	--steps) steps=",$2,"; shift 2 ;;
	--orders-records) orders_records="$2"; shift 2 ;;
	--orders-large-records) orders_large_records="$2"; shift 2 ;;
	--copy-records) copy_records="$2"; shift 2 ;;
	--repeats) repeats="$2"; shift 2 ;;
	--cold-records) cold_records="$2"; shift 2 ;;
	--restore-records) restore_records="$2"; shift 2 ;;
	*) usage ;;
	esac
done
if [ -z "$out" ]; then
	out="benchmarks/results/$(date -u +%F)-full"
	[ "$quick" = 0 ] || out="/tmp/onceflow-bench-full-quick-$(date -u +%H%M%S)"
fi
# A second full run into the same folder would mix its steps with the
# first's; --steps reruns some steps into it on purpose.
if [ -z "$steps" ] && [ -e "$out/command.txt" ]; then
	die "$out holds a run already: pass another --out, or --steps to rerun some steps into it"
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

export ONCEFLOW_KAFKA_DIR="${BENCH_KAFKA_DIR:-/tmp/onceflow-bench-full-kafka}"
export KAFKA_PORT="${BENCH_KAFKA_PORT:-29092}"
export KAFKA_CONTROLLER_PORT="$((KAFKA_PORT + 1))"

# The broker keeps a deleted topic's files for log.segment.delete.delay.ms
# (one minute by default) and every run writes fresh topics: the orders
# 3M step alone holds about 9 GB, and the full run once filled the disk.
# Its own broker removes them after a second, and the run refuses to start
# without room for its largest step.
need_gb=15
if [ "$quick" = 1 ]; then need_gb=1; fi
for dir in "$ONCEFLOW_KAFKA_DIR" "${TMPDIR:-/tmp}"; do
	while [ ! -d "$dir" ]; do dir="$(dirname "$dir")"; done
	free_gb="$(df -Pk "$dir" | awk 'NR == 2 {printf "%d", $4 / 1048576}')"
	if [ "$free_gb" -lt "$need_gb" ]; then
		die "only $free_gb GiB free under $dir; the run needs about $need_gb GiB (the broker's topics and the replicas' state)"
	fi
done

commit="$(git rev-parse --short HEAD)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then commit="$commit (with uncommitted changes)"; fi
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
stamp() { date -u +%FT%TZ; }

failed=()
{
	echo "scripts/bench-full.sh $args"
	echo "commit $commit"
	echo "started $(stamp)"
	echo "load average before: $(loadavg)"
} >"$out/command.txt"

stop_broker() {
	scripts/kafka.sh down >&2 || true
	{
		echo "finished $(stamp)"
		echo "load average after: $(loadavg)"
		echo "failed steps: ${failed[*]:-none}"
	} >>"$out/command.txt"
}
# Set before `up`, so that a start that fails half-way is cleaned too.
trap stop_broker EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "building bin/onceflow at $commit"
go build -o bin/onceflow ./cmd/onceflow
# The Kafka Streams peer is built (with Maven, once) before the broker
# starts; if it cannot be, the bench steps say why they skipped it.
if ! benchmarks/peers/kstreams/build.sh >&2; then
	log "warning: the Kafka Streams peer did not build; its variants will be skipped"
fi
extra_config="$(mktemp)"
echo "log.segment.delete.delay.ms=1000" >"$extra_config"
export KAFKA_EXTRA_CONFIG="$extra_config"
brokers="$(scripts/kafka.sh up | tail -n 1)"
rm -f "$extra_config"
[ -n "$brokers" ] || die "scripts/kafka.sh up printed no address"
broker_pid="$(cat "$ONCEFLOW_KAFKA_DIR/broker.pid")"
log "broker $brokers (pid $broker_pid, folder $ONCEFLOW_KAFKA_DIR); results in $out"

# wanted NAME succeeds when --steps is not given or lists NAME.
wanted() { [ -z "$steps" ] || [[ "$steps" == *",$1,"* ]]; }

# step NAME COMMAND... runs one step into $out/NAME, recording it.
step() {
	local name="$1" dir="$out/$1" rc=0
	shift
	wanted "$name" || return 0
	mkdir -p "$dir"
	{
		echo "$*"
		echo "commit $commit"
		echo "started $(stamp)"
		echo "load average before: $(loadavg)"
	} >"$dir/command.txt"
	log "step $name: $*"
	"$@" >"$dir/output.txt" 2>&1 || rc=$?
	{
		echo "finished $(stamp)"
		echo "load average after: $(loadavg)"
		echo "exit $rc"
	} >>"$dir/command.txt"
	if [ "$rc" != 0 ]; then
		failed+=("$name")
		log "step $name failed (exit $rc); see $dir/output.txt"
	fi
}

# bench NAME FLAGS... is a step of `onceflow bench` on the broker, with the
# broker's CPU counted and CPU profiles kept.
bench() {
	local name="$1"
	shift
	step "$name" bin/onceflow bench --brokers "$brokers" --broker-pids "$broker_pid" --no-progress \
		--profile "$out/$name/profiles" --out "$out/$name" "$@"
}

bench orders-300k --workload orders --peers --variants eos,alos,kstreams_eos,kstreams_alos \
	--records "$orders_records" --repeats "$repeats" --cold-records "$cold_records" \
	--rate 2000 --latency-window "$latency_window" --warmup "$warmup"
bench orders-300k-half-max --workload orders --variants eos,alos \
	--records "$orders_records" --repeats "$repeats" --latency-window "$latency_window" --warmup 0
bench orders-3m --workload orders --peers --variants eos,alos,kstreams_eos \
	--records "$orders_large_records" --repeats "$repeats" --cold-records "$cold_records" --no-latency --warmup 0
bench orders-300k-threads2 --workload orders --peers --variants eos,kstreams_eos --threads 2 \
	--records "$orders_records" --repeats "$repeats" --cold-records "$cold_records" --no-latency --warmup 0
bench orders-3m-threads2 --workload orders --peers --variants eos,kstreams_eos --threads 2 \
	--records "$orders_large_records" --repeats "$repeats" --cold-records "$cold_records" --no-latency --warmup 0
bench copy --workload copy --peers --value-size 100,1000 \
	--records "$copy_records" --repeats "$repeats" --cold-records "$cold_records" \
	--rate 20000 --latency-window "$latency_window" --warmup "$warmup"
bench copy-half-max --workload copy --peers --variants eos,alos,sarama --value-size 100 \
	--records "$copy_records" --repeats "$repeats" --latency-window "$latency_window" --warmup 0
for n in 1 2 3; do
	bench "scale-r$n" --workload orders --variants eos --partitions 12 --replicas "$n" \
		--records "$scale_records" --repeats "$repeats" --no-latency --warmup 0
done
step restore bin/onceflow scenario orders --brokers "$brokers" --records "$restore_records" --kills 3

log "writing $out/TARGETS.md"
bin/onceflow bench-targets "$out" >/dev/null || failed+=("targets")
if [ ${#failed[@]} -gt 0 ]; then
	log "done with failed steps: ${failed[*]}; results in $out"
	exit 1
fi
log "done; results in $out"
