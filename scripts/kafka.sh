#!/usr/bin/env bash
# A single-node Apache Kafka (KRaft, broker and controller in one process) on
# loopback, for development and the integration suite; or a cluster of such
# nodes, for tests that need replication and failover. See docs/kafka.md.
#
#   scripts/kafka.sh up      start it (fetching the jars once) and print its
#                            bootstrap address as the last line of stdout
#   scripts/kafka.sh up --brokers 3
#                            start a three-node cluster instead: each node a
#                            broker and a voter of the controller quorum;
#                            replication factor 3 and min.insync.replicas 2
#                            for every topic, the offsets and transaction
#                            logs included; last line: the bootstrap list
#   scripts/kafka.sh down    stop it (every node) and remove its data
#   scripts/kafka.sh status  tell whether it runs (exit 0) or not (exit 1)
#   scripts/kafka.sh kill N  kill -9 node N of the cluster (data kept)
#   scripts/kafka.sh stop N  stop node N cleanly (SIGTERM; data kept)
#   scripts/kafka.sh start N start node N again on its data, wait until the
#                            cluster lists it
#
# Environment (all optional):
#   KAFKA_PORT             broker port; default 19092, or the next free one
#                          (a cluster: the first of N consecutive ports)
#   KAFKA_CONTROLLER_PORT  controller port; default 19093, or the next free one
#                          (a cluster: the first of N consecutive ports,
#                          default the N ports after the brokers')
#   KAFKA_JAVA             the java binary to run (default: a Java 17 JDK)
#   KAFKA_HEAP_OPTS        default -Xms256m -Xmx1g (a cluster: -Xms128m -Xmx512m a node)
#   KAFKA_START_TIMEOUT    seconds to wait for the broker, default 120
#   KAFKA_MVN_FLAGS        extra flags for the one Maven run (e.g. -Dmaven.repo.local=...)
#   KAFKA_CDS              0 turns off the class-data-sharing archive (see cds_archive)
#   ONCEFLOW_KAFKA_DIR     state folder (config, data, log, pid); default .kafka
#   KAFKA_EXTRA_CONFIG     a file appended to a single broker's server.properties
#                          (a later key wins: listeners, SASL, TLS, ACLs; see
#                          scripts/kafka-secure.sh)
#   KAFKA_FORMAT_ARGS_FILE a file of extra arguments to the storage format step,
#                          one a line (e.g. --add-scram ...)
#   KAFKA_KCAT_CONFIG      a librdkafka properties file kcat uses to check that
#                          a single broker is ready (a listener with SASL or TLS)
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The one place the Kafka version is pinned. 4.4.0 is the newest 4.x release
# Maven Central serves here (docs/kafka.md says how it was chosen).
KAFKA_VERSION=4.4.0
SCALA_BINARY=2.13
# The SLF4J-to-Log4j2 binding is not a dependency of any Kafka module (the
# Kafka distribution adds it by hand); keep it at the Log4j version Kafka uses.
LOG4J_VERSION=2.25.5

CACHE_DIR="$ONCEFLOW_ROOT/.cache/kafka/$KAFKA_VERSION"
LIBS="$CACHE_DIR/libs"
STATE_DIR="${ONCEFLOW_KAFKA_DIR:-$ONCEFLOW_ROOT/.kafka}"
case "$STATE_DIR" in /*) ;; *) STATE_DIR="$PWD/$STATE_DIR" ;; esac
STATE_DIR="${STATE_DIR%/}"
# up and down remove this folder whole: refuse the obvious wrong ones.
case "$STATE_DIR" in "" | / | "$ONCEFLOW_ROOT" | "$HOME" | /tmp | /work) die "refusing ONCEFLOW_KAFKA_DIR=${ONCEFLOW_KAFKA_DIR:-} as state folder" ;; esac
DATA_DIR="$STATE_DIR/data"
CONFIG="$STATE_DIR/server.properties"
LOG4J_CONFIG="$STATE_DIR/log4j2.properties"
LOG_FILE="$STATE_DIR/broker.log"
PID_FILE="$STATE_DIR/broker.pid"
BOOTSTRAP_FILE="$STATE_DIR/bootstrap"
# A cluster keeps each node in $STATE_DIR/node<i>; this file holds N.
NODES_FILE="$STATE_DIR/nodes"
LOCK_FILE="$ONCEFLOW_ROOT/.cache/kafka/lock"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"

usage() {
	echo "usage: $0 up [--brokers N] | down | status | kill N | stop N | start N" >&2
	exit 2
}

# find_java prints a Java 17 binary (Kafka 4 brokers need 17 or newer; 17 is
# the one this project tests with).
find_java() {
	if [ -n "${KAFKA_JAVA:-}" ]; then
		echo "$KAFKA_JAVA"
		return
	fi
	local j
	if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java_major "$JAVA_HOME/bin/java" | grep -qx 17; then
		echo "$JAVA_HOME/bin/java"
		return
	fi
	for j in /usr/lib/jvm/*17*/bin/java; do
		if [ -x "$j" ]; then
			echo "$j"
			return
		fi
	done
	if command -v java >/dev/null 2>&1; then
		local major
		major="$(java_major java)"
		if [ -n "$major" ] && [ "$major" -ge 17 ]; then
			log "no Java 17 found; using java on PATH (version $major)"
			command -v java
			return
		fi
	fi
	die "no Java 17 found (looked at KAFKA_JAVA, JAVA_HOME, /usr/lib/jvm/*17*, PATH)"
}

# java_major JAVA prints the major version of a java binary (17, 21, ...).
java_major() {
	"$1" -XshowSettings:properties -version 2>&1 |
		sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n1
}

# fetch_jars brings Kafka and its runtime dependencies from Maven Central into
# $LIBS, once: a later call finds the marker file and does nothing.
fetch_jars() {
	if [ -f "$LIBS/.complete" ]; then
		log "using cached Kafka $KAFKA_VERSION jars in ${LIBS#"$ONCEFLOW_ROOT"/}"
		return
	fi
	command -v mvn >/dev/null 2>&1 || die "mvn not found (install Debian's maven package)"
	mkdir -p "$CACHE_DIR"
	local dep deps=""
	# kafka_2.13 (the broker, kafka.Kafka and kafka.tools.StorageTool) brings
	# most of these in transitively; naming them keeps them all at one version
	# and makes sure the broker's modules are there even if that changes.
	for dep in kafka_$SCALA_BINARY kafka-server kafka-server-common kafka-metadata kafka-raft \
		kafka-storage kafka-group-coordinator kafka-transaction-coordinator \
		kafka-share-coordinator kafka-coordinator-common kafka-clients kafka-tools; do
		deps+="    <dependency><groupId>org.apache.kafka</groupId><artifactId>$dep</artifactId><version>$KAFKA_VERSION</version></dependency>
"
	done
	deps+="    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>$LOG4J_VERSION</version></dependency>
"
	cat >"$CACHE_DIR/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by scripts/kafka.sh: only used to fetch the broker's jars. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.onceflow</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>$KAFKA_VERSION</version>
  <packaging>pom</packaging>
  <dependencies>
$deps  </dependencies>
</project>
EOF
	log "fetching Kafka $KAFKA_VERSION and its dependencies from Maven Central (once)"
	local tmp="$CACHE_DIR/libs.tmp"
	rm -rf "$tmp"
	# shellcheck disable=SC2086 # KAFKA_MVN_FLAGS is a list of flags
	# (Maven 3.8 prints colour codes even in batch mode; sed drops them.)
	(cd "$CACHE_DIR" && mvn -B -q ${KAFKA_MVN_FLAGS:-} -f pom.xml \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp") 2>&1 9>&- |
		sed 's/\x1b\[[0-9;]*m//g' >&2
	[ -f "$tmp/kafka_$SCALA_BINARY-$KAFKA_VERSION.jar" ] || die "Maven did not bring kafka_$SCALA_BINARY-$KAFKA_VERSION.jar"
	touch "$tmp/.complete"
	rm -rf "$LIBS" "$CACHE_DIR/cds" # a CDS archive is only good for the jars it was made from
	mv "$tmp" "$LIBS"
	log "cached $(find "$LIBS" -name '*.jar' | wc -l) jars ($(du -sh "$LIBS" | cut -f1)) in ${LIBS#"$ONCEFLOW_ROOT"/}"
}

# running succeeds when the pid file names a live broker of ours.
running() {
	[ -f "$PID_FILE" ] || return 1
	local pid
	pid="$(cat "$PID_FILE")"
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	# Guard against a recycled pid: it must be our kafka.Kafka process.
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $CONFIG" || return 1
}

write_config() {
	local port="$1" cport="$2"
	write_server_config "$CONFIG" "a single-node KRaft broker for tests, on loopback" \
		1 "$port" "$cport" "1@127.0.0.1:$cport" "$DATA_DIR" 1 1
	if [ -n "${KAFKA_EXTRA_CONFIG:-}" ]; then
		{
			echo "# From KAFKA_EXTRA_CONFIG ($KAFKA_EXTRA_CONFIG); a later key wins."
			cat "$KAFKA_EXTRA_CONFIG"
		} >>"$CONFIG" || die "cannot read KAFKA_EXTRA_CONFIG=$KAFKA_EXTRA_CONFIG"
	fi
	write_log4j_config "$LOG4J_CONFIG"
}

# format_args prints the extra arguments of the format step, one a line.
format_args() {
	[ -z "${KAFKA_FORMAT_ARGS_FILE:-}" ] || cat "$KAFKA_FORMAT_ARGS_FILE"
}

# write_server_config FILE WHAT NODE_ID PORT CONTROLLER_PORT VOTERS DATA_DIR RF MIN_ISR
# writes the config of one node, broker and controller in one process.
write_server_config() {
	local file="$1" what="$2" id="$3" port="$4" cport="$5" voters="$6" data="$7" rf="$8" isr="$9"
	cat >"$file" <<EOF
# Written by scripts/kafka.sh: $what.
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=$data
num.partitions=6
default.replication.factor=$rf
min.insync.replicas=$isr
auto.create.topics.enable=true
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=6
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
transaction.state.log.num.partitions=6
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
# Tests run short; keep the broker's own bookkeeping light.
log.retention.check.interval.ms=300000
num.recovery.threads.per.data.dir=1
EOF
}

# write_log4j_config FILE writes the logging config: everything to stdout,
# which the script sends to the node's broker.log.
write_log4j_config() {
	cat >"$1" <<'EOF'
# Written by scripts/kafka.sh: everything to stdout, which goes to broker.log.
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.coordinator.name = org.apache.kafka.coordinator
logger.coordinator.level = INFO
EOF
}

# random_cluster_id prints a Kafka cluster id: 16 random bytes, URL-safe
# base64 without padding (what `kafka-storage.sh random-uuid` prints). Like
# Kafka's Uuid.randomUuid it avoids ids starting with '-'.
random_cluster_id() {
	local id
	while :; do
		id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
		case "$id" in -*) ;; *) echo "$id"; return ;; esac
	done
}

# metadata_ok ADDR succeeds when the broker at ADDR answers a metadata request
# and lists itself.
metadata_ok() {
	"$(kcat_bin)" ${KAFKA_KCAT_CONFIG:+-F "$KAFKA_KCAT_CONFIG"} -L -b "$1" -m 5 \
		-X topic.metadata.refresh.interval.ms=-1 2>/dev/null | grep -q "broker 1 at"
}

# A class-data-sharing (AppCDS) archive of the broker's classes takes about
# 40% off the broker's start and half off the format step. The first broker
# records it when it exits (on `down`); later JVMs map it. It belongs to one
# JDK and one set of jars, so it lives in the jar cache, named after the JDK.
# A JVM that cannot use it says so in the log and starts without it.

# cds_archive JAVA prints the archive's path for that java binary.
cds_archive() {
	local home jdk
	home="$(dirname "$(dirname "$(readlink -f "$1")")")"
	# The JDK's folder name, and its libjvm's mtime for updates in place.
	jdk="$(basename "$home")-$(stat -c %Y "$home/lib/server/libjvm.so" 2>/dev/null || echo 0)"
	echo "$CACHE_DIR/cds/broker-$jdk.jsa"
}

# cds_use_flags JAVA prints the flag that maps the archive, if there is one.
cds_use_flags() {
	[ "${KAFKA_CDS:-1}" != 0 ] || return 0
	local archive
	archive="$(cds_archive "$1")"
	if [ -s "$archive" ]; then echo "-XX:SharedArchiveFile=$archive"; fi
}

# cds_broker_flags JAVA prints the broker's flags: map the archive, or record
# it at exit under a temporary name that `down` renames once the JVM has
# exited cleanly, so that a half-written archive is never used.
cds_broker_flags() {
	[ "${KAFKA_CDS:-1}" != 0 ] || return 0
	local archive
	archive="$(cds_archive "$1")"
	if [ -s "$archive" ]; then
		echo "-XX:SharedArchiveFile=$archive"
	else
		mkdir -p "$(dirname "$archive")"
		rm -f "$archive.tmp"
		echo "$archive" >"$STATE_DIR/cds-pending"
		echo "-XX:ArchiveClassesAtExit=$archive.tmp"
	fi
}

cmd_up() {
	if running; then
		log "already running (pid $(cat "$PID_FILE"))"
		cat "$BOOTSTRAP_FILE"
		return
	fi
	local t0 t_fetch t_format t_ready java port cport
	t0="$(now_ms)"
	ensure_kcat
	fetch_jars
	t_fetch="$(now_ms)"
	java="$(find_java)"

	if [ -n "${KAFKA_PORT:-}" ]; then
		port="$KAFKA_PORT"
		! port_in_use "$port" || die "KAFKA_PORT=$port is in use"
	else
		port="$(free_port 19092)"
	fi
	if [ -n "${KAFKA_CONTROLLER_PORT:-}" ]; then
		cport="$KAFKA_CONTROLLER_PORT"
		! port_in_use "$cport" || die "KAFKA_CONTROLLER_PORT=$cport is in use"
	else
		cport="$(free_port $((port + 1)))"
	fi
	[ "$port" != "$cport" ] || die "broker and controller ports are both $port"

	# A broker left dead (killed, machine restarted) leaves data behind; every
	# start begins from an empty, freshly formatted log folder.
	rm -rf "$STATE_DIR"
	mkdir -p "$DATA_DIR"
	write_config "$port" "$cport"

	local cluster_id extra=()
	cluster_id="$(random_cluster_id)"
	mapfile -t extra < <(format_args)
	log "formatting $DATA_DIR (cluster id $cluster_id)"
	# shellcheck disable=SC2046 # the CDS flag, if any, is one word
	"$java" $(cds_use_flags "$java") -XX:TieredStopAtLevel=1 -Xmx256m \
		-Dlog4j2.configurationFile="file:$LOG4J_CONFIG" -cp "$LIBS/*" \
		kafka.tools.StorageTool format -t "$cluster_id" -c "$CONFIG" --ignore-formatted ${extra[@]+"${extra[@]}"} \
		>>"$LOG_FILE" 2>&1 9>&- || { tail -n 30 "$LOG_FILE" >&2; die "formatting the storage failed"; }
	t_format="$(now_ms)"
	# The format step mapped the CDS archive, if any; one the JVM refused (a
	# JDK update, jars replaced by hand) is dropped, and this broker records
	# a new one.
	if grep -q 'Unable to use shared archive' "$LOG_FILE"; then
		log "the class-data-sharing archive is stale; recording a new one"
		rm -f "$(cds_archive "$java")"
	fi

	local cds
	cds="$(cds_broker_flags "$java")"
	log "starting Kafka $KAFKA_VERSION with $java on 127.0.0.1:$port (controller $cport)${cds:+ ($cds)}"
	# setsid: the broker gets its own session, so it outlives this script and
	# the shell or make that ran it. Its output goes to the log file only.
	# shellcheck disable=SC2086 # KAFKA_HEAP_OPTS and $cds are lists of flags
	setsid "$java" ${KAFKA_HEAP_OPTS:--Xms256m -Xmx1g} $cds \
		-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
		-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="file:$LOG4J_CONFIG" -Dkafka.logs.dir="$STATE_DIR" \
		-cp "$LIBS/*" kafka.Kafka "$CONFIG" \
		</dev/null >>"$LOG_FILE" 2>&1 9>&- &
	local pid=$!
	echo "$pid" >"$PID_FILE"

	local addr="127.0.0.1:$port" deadline=$(($(date +%s) + START_TIMEOUT))
	until port_in_use "$port" && metadata_ok "$addr"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 40 "$LOG_FILE" >&2
			rm -f "$PID_FILE"
			die "the broker exited during start; log: $LOG_FILE"
		fi
		if [ "$(date +%s)" -ge "$deadline" ]; then
			tail -n 40 "$LOG_FILE" >&2
			kill -KILL "$pid" 2>/dev/null || true
			rm -f "$PID_FILE"
			die "the broker did not answer within ${START_TIMEOUT}s; log: $LOG_FILE"
		fi
		sleep 0.2
	done
	t_ready="$(now_ms)"
	echo "$addr" >"$BOOTSTRAP_FILE"
	log "broker ready in $(((t_ready - t0) / 1000)).$(printf '%03d' $(((t_ready - t0) % 1000)))s" \
		"(jars $((t_fetch - t0)) ms, format $((t_format - t_fetch)) ms, start $((t_ready - t_format)) ms); pid $pid, log $LOG_FILE"
	echo "$addr"
}

# cmd_down_cluster stops every node at once and removes the cluster's data.
cmd_down_cluster() {
	stop_nodes
	log "stopped the cluster; removing $STATE_DIR"
	rm -rf "$STATE_DIR"
}

cmd_down() {
	if [ -f "$PID_FILE" ] && running; then
		local pid i
		pid="$(cat "$PID_FILE")"
		log "stopping the broker (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 300; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "still running after 30s; sending SIGKILL"
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			rm -f "$STATE_DIR/cds-pending"
		fi
		if [ -f "$STATE_DIR/cds-pending" ]; then
			local archive
			archive="$(cat "$STATE_DIR/cds-pending")"
			if [ -s "$archive.tmp" ]; then
				mv -f "$archive.tmp" "$archive"
				log "recorded the class-data-sharing archive ${archive#"$ONCEFLOW_ROOT"/} for later starts"
			fi
		fi
	else
		log "no broker of ours is running"
	fi
	rm -rf "$STATE_DIR"
}

cmd_status() {
	if is_cluster; then
		cluster_status
		return
	fi
	if running; then
		echo "running: pid $(cat "$PID_FILE"), bootstrap $(cat "$BOOTSTRAP_FILE" 2>/dev/null || echo '(starting)')"
	else
		echo "not running"
		return 1
	fi
}

# ---- A cluster of N nodes --------------------------------------------------
#
# Node i lives in $STATE_DIR/node<i>: server.properties, log4j2.properties,
# data/, broker.log, broker.pid. Every node is a broker and a voter of the
# controller quorum (combined mode, static voters), so a quorum of N/2+1
# voters must run for the cluster to elect a controller: all nodes are
# launched first, and only then waited for.

# is_cluster succeeds when $STATE_DIR holds a cluster (up --brokers N > 1).
is_cluster() { [ -f "$NODES_FILE" ]; }

# node_count prints N of the cluster in $STATE_DIR.
node_count() { cat "$NODES_FILE"; }

node_dir() { echo "$STATE_DIR/node$1"; }

# node_port I prints node I's broker port (from its config).
node_port() {
	sed -n 's|^advertised.listeners=PLAINTEXT://127.0.0.1:\([0-9]*\)$|\1|p' "$(node_dir "$1")/server.properties"
}

# node_running I succeeds when node I's pid file names a live node of ours.
node_running() {
	local dir pid
	dir="$(node_dir "$1")"
	[ -f "$dir/broker.pid" ] || return 1
	pid="$(cat "$dir/broker.pid")"
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $dir/server.properties" || return 1
}

# started_count I prints how many starts node I's log reports as complete
# (a broker's start completes once the controller has unfenced it).
started_count() {
	local n
	n="$(grep -c 'Kafka Server started' "$(node_dir "$1")/broker.log" 2>/dev/null || true)"
	echo "${n:-0}"
}

# node_ready I N succeeds when node I finished the start launch_node made
# (right after a kill -9 the others may still list the dead broker) and
# answers a metadata request that lists all N brokers.
node_ready() {
	[ "$(started_count "$1")" -gt "$(cat "$(node_dir "$1")/starts-before")" ] || return 1
	"$(kcat_bin)" -L -b "127.0.0.1:$(node_port "$1")" -m 5 -X topic.metadata.refresh.interval.ms=-1 2>/dev/null |
		grep -q "^ *$2 brokers:"
}

# consecutive_free FROM N succeeds when ports FROM..FROM+N-1 are all free.
consecutive_free() {
	local i
	for ((i = 0; i < $2; i++)); do
		! port_in_use $(($1 + i)) || return 1
	done
}

# cluster_ports N prints "BROKER_BASE CONTROLLER_BASE": N consecutive free
# ports for the brokers and N for the controllers.
cluster_ports() {
	local n="$1" port cport
	if [ -n "${KAFKA_PORT:-}" ]; then
		port="$KAFKA_PORT"
		consecutive_free "$port" "$n" || die "a port of KAFKA_PORT=$port..$((port + n - 1)) is in use"
	else
		port=19092
		until consecutive_free "$port" "$n"; do port=$((port + 1)); done
	fi
	if [ -n "${KAFKA_CONTROLLER_PORT:-}" ]; then
		cport="$KAFKA_CONTROLLER_PORT"
		consecutive_free "$cport" "$n" || die "a port of KAFKA_CONTROLLER_PORT=$cport..$((cport + n - 1)) is in use"
	else
		cport=$((port + n))
		until consecutive_free "$cport" "$n"; do cport=$((cport + 1)); done
	fi
	if ((cport < port + n && port < cport + n)); then
		die "broker ports $port.. and controller ports $cport.. overlap"
	fi
	[ "$((port + n - 1))" -lt 65536 ] && [ "$((cport + n - 1))" -lt 65536 ] || die "ports beyond 65535"
	echo "$port $cport"
}

# launch_node JAVA I starts node I in the background, in a session of its
# own (it outlives the script), stdin from /dev/null, output to its own
# broker.log, without the script's lock (fd 9). A CDS archive, if one was
# recorded by a single broker, is only mapped (never recorded here: several
# JVMs would write it at once).
launch_node() {
	local java="$1" i="$2" dir
	dir="$(node_dir "$i")"
	started_count "$i" >"$dir/starts-before"
	# shellcheck disable=SC2086,SC2046 # KAFKA_HEAP_OPTS and the CDS flag are lists of flags
	setsid "$java" ${KAFKA_HEAP_OPTS:--Xms128m -Xmx512m} $(cds_use_flags "$java") \
		-XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
		-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true \
		-Dlog4j2.configurationFile="file:$dir/log4j2.properties" -Dkafka.logs.dir="$dir" \
		-cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
		</dev/null >>"$dir/broker.log" 2>&1 9>&- &
	echo $! >"$dir/broker.pid"
}

# wait_nodes N I... waits until each node I answers with all N brokers
# listed; a node that exits, or the timeout, fails the wait (after printing
# the tail of that node's log).
wait_nodes() {
	local n="$1" i deadline=$(($(date +%s) + START_TIMEOUT))
	shift
	for i in "$@"; do
		until node_ready "$i" "$n"; do
			# kill -0, not node_running: right after the launch the pid may
			# not have become java yet.
			if ! kill -0 "$(cat "$(node_dir "$i")/broker.pid")" 2>/dev/null; then
				tail -n 40 "$(node_dir "$i")/broker.log" >&2
				log "node $i exited during start; log: $(node_dir "$i")/broker.log"
				return 1
			fi
			if [ "$(date +%s)" -ge "$deadline" ]; then
				tail -n 40 "$(node_dir "$i")/broker.log" >&2
				log "node $i did not answer with $n brokers within ${START_TIMEOUT}s; log: $(node_dir "$i")/broker.log"
				return 1
			fi
			sleep 0.3
		done
	done
}

cmd_up_cluster() {
	local n="$1" i
	if is_cluster; then
		[ "$(node_count)" = "$n" ] || die "a cluster of $(node_count) nodes runs in $STATE_DIR ('down' first)"
		local down=()
		for ((i = 1; i <= n; i++)); do node_running "$i" || down+=("$i"); done
		if [ ${#down[@]} -eq 0 ]; then
			log "already running"
			cat "$BOOTSTRAP_FILE"
			return
		fi
		# Nodes killed or stopped (or all of them, say after a reboot) start
		# again on their data; `down` is what removes it.
		log "node(s) ${down[*]} not running; starting them on their data"
		start_nodes "${down[@]}"
		cat "$BOOTSTRAP_FILE"
		return
	elif running; then
		die "a single broker runs in $STATE_DIR ('down' first, or set ONCEFLOW_KAFKA_DIR)"
	fi
	local t0 t_format t_ready java ports port cport voters="" addrs="" isr=$((n < 3 ? 1 : 2))
	t0="$(now_ms)"
	ensure_kcat
	fetch_jars
	java="$(find_java)"
	ports="$(cluster_ports "$n")"
	port="${ports% *}"
	cport="${ports#* }"
	for ((i = 0; i < n; i++)); do
		voters+="${voters:+,}$((i + 1))@127.0.0.1:$((cport + i))"
		addrs+="${addrs:+,}127.0.0.1:$((port + i))"
	done

	rm -rf "$STATE_DIR"
	mkdir -p "$STATE_DIR"
	echo "$n" >"$NODES_FILE"
	local cluster_id dir
	cluster_id="$(random_cluster_id)"
	log "formatting $n nodes in $STATE_DIR (cluster id $cluster_id)"
	for ((i = 1; i <= n; i++)); do
		dir="$(node_dir "$i")"
		mkdir -p "$dir/data"
		write_server_config "$dir/server.properties" "node $i of a $n-node KRaft cluster for tests, on loopback" \
			"$i" $((port + i - 1)) $((cport + i - 1)) "$voters" "$dir/data" "$n" "$isr"
		write_log4j_config "$dir/log4j2.properties"
		# shellcheck disable=SC2046 # the CDS flag, if any, is one word
		"$java" $(cds_use_flags "$java") -XX:TieredStopAtLevel=1 -Xmx256m \
			-Dlog4j2.configurationFile="file:$dir/log4j2.properties" -cp "$LIBS/*" \
			kafka.tools.StorageTool format -t "$cluster_id" -c "$dir/server.properties" --ignore-formatted \
			>>"$dir/broker.log" 2>&1 9>&- || { tail -n 30 "$dir/broker.log" >&2; die "formatting node $i failed"; }
	done
	if grep -q 'Unable to use shared archive' "$(node_dir 1)/broker.log"; then
		log "the class-data-sharing archive is stale; dropping it (a single broker records a new one)"
		rm -f "$(cds_archive "$java")"
	fi
	t_format="$(now_ms)"

	log "starting a $n-node Kafka $KAFKA_VERSION cluster with $java on $addrs (controllers $voters)"
	for ((i = 1; i <= n; i++)); do launch_node "$java" "$i"; done
	local all=()
	for ((i = 1; i <= n; i++)); do all+=("$i"); done
	if ! wait_nodes "$n" "${all[@]}"; then
		stop_nodes
		die "the cluster did not come up ('down' removes $STATE_DIR)"
	fi
	t_ready="$(now_ms)"
	echo "$addrs" >"$BOOTSTRAP_FILE"
	log "cluster ready in $(((t_ready - t0) / 1000)).$(printf '%03d' $(((t_ready - t0) % 1000)))s" \
		"(format $((t_format - t0)) ms, start $((t_ready - t_format)) ms):" \
		"replication factor $n, min.insync.replicas $isr; logs in $STATE_DIR/node*/broker.log"
	echo "$addrs"
}

# start_nodes I... starts stopped nodes of the cluster on their data and
# waits until each is back in the cluster.
start_nodes() {
	local java i n
	n="$(node_count)"
	java="$(find_java)"
	for i in "$@"; do
		[ -d "$(node_dir "$i")/data" ] || die "node $i has no data in $(node_dir "$i")"
		log "starting node $i on its data (broker 127.0.0.1:$(node_port "$i"))"
		launch_node "$java" "$i"
	done
	wait_nodes "$n" "$@" || die "node(s) $* did not rejoin the cluster"
	log "node(s) $* back in the cluster"
}

# stop_node I SIGNAL stops node I: with KILL at once; with TERM, then KILL
# after 30 s.
stop_node() {
	local i="$1" sig="$2" pid t
	pid="$(cat "$(node_dir "$i")/broker.pid")"
	kill "-$sig" "$pid" 2>/dev/null || true
	for ((t = 0; t < 300; t++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	log "node $i (pid $pid) still running after 30s; sending SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
}

# stop_nodes stops every running node of the cluster, all at once.
stop_nodes() {
	local i n
	n="$(node_count)"
	for ((i = 1; i <= n; i++)); do
		if node_running "$i"; then
			log "stopping node $i (pid $(cat "$(node_dir "$i")/broker.pid"))"
			stop_node "$i" TERM &
		fi
	done
	wait
}

# node_arg I checks that I names a node of the cluster.
node_arg() {
	is_cluster || die "no cluster in $STATE_DIR (up --brokers N starts one)"
	case "$1" in '' | *[!0-9]*) die "node must be a number from 1 to $(node_count), not '$1'" ;; esac
	[ "$1" -ge 1 ] && [ "$1" -le "$(node_count)" ] || die "node must be a number from 1 to $(node_count), not '$1'"
}

cmd_kill() {
	node_arg "$1"
	node_running "$1" || die "node $1 is not running"
	local pid
	pid="$(cat "$(node_dir "$1")/broker.pid")"
	stop_node "$1" KILL
	log "killed node $1 (pid $pid) with SIGKILL; 'start $1' restarts it on its data"
}

cmd_stop() {
	node_arg "$1"
	node_running "$1" || die "node $1 is not running"
	log "stopping node $1 (pid $(cat "$(node_dir "$1")/broker.pid"))"
	stop_node "$1" TERM
}

cmd_start() {
	node_arg "$1"
	if node_running "$1"; then
		log "node $1 is already running (pid $(cat "$(node_dir "$1")/broker.pid"))"
		return
	fi
	start_nodes "$1"
}

# cluster_status prints the bootstrap list and one line per node; it
# succeeds when at least one node runs.
cluster_status() {
	local i n up=0 line
	n="$(node_count)"
	for ((i = 1; i <= n; i++)); do node_running "$i" && up=$((up + 1)); done
	if [ "$up" -eq 0 ]; then
		echo "not running (a cluster of $n nodes, all stopped, in $STATE_DIR)"
		return 1
	fi
	echo "running: cluster, $up of $n nodes, bootstrap $(cat "$BOOTSTRAP_FILE" 2>/dev/null || echo '(starting)')"
	for ((i = 1; i <= n; i++)); do
		line="node $i: 127.0.0.1:$(node_port "$i")"
		if node_running "$i"; then
			echo "$line running, pid $(cat "$(node_dir "$i")/broker.pid")"
		else
			echo "$line stopped"
		fi
	done
}

BROKERS=1
case "$*" in
"up --brokers "*)
	[ $# -eq 3 ] || usage
	BROKERS="$3"
	case "$BROKERS" in [1-9]) ;; *) die "--brokers wants a number from 1 to 9" ;; esac
	set -- up
	;;
esac
case "$1" in
kill | stop | start) [ $# -eq 2 ] || usage ;;
*) [ $# -eq 1 ] || usage ;;
esac
mkdir -p "$(dirname "$LOCK_FILE")"
# One up/down/start at a time. The broker itself must not hold the lock,
# hence `9>&-` on everything started in the background.
exec 9>"$LOCK_FILE"
case "$1" in
up)
	flock -w 300 9 || die "another scripts/kafka.sh holds $LOCK_FILE"
	if [ "$BROKERS" -gt 1 ]; then
		cmd_up_cluster "$BROKERS"
	elif is_cluster; then
		cmd_up_cluster "$(node_count)"
	else
		cmd_up
	fi
	;;
down)
	flock -w 300 9 || die "another scripts/kafka.sh holds $LOCK_FILE"
	if is_cluster; then cmd_down_cluster; else cmd_down; fi
	;;
status) cmd_status ;;
kill) cmd_kill "$2" ;;
stop) cmd_stop "$2" ;;
start)
	flock -w 300 9 || die "another scripts/kafka.sh holds $LOCK_FILE"
	cmd_start "$2"
	;;
*) usage ;;
esac
