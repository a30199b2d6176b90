#!/usr/bin/env bash
# Apicurio Registry (in-memory storage) on loopback, for the tests of
# serde/registry against a real schema registry: its Confluent-compatible
# API is what the codecs talk to. See docs/serdes.md.
#
#   scripts/apicurio.sh up      start it (building it once) and print the
#                               Confluent-compatible API's URL as the last
#                               line of stdout
#   scripts/apicurio.sh down    stop it and remove its state folder
#   scripts/apicurio.sh status  tell whether it runs (exit 0) or not (exit 1)
#
# Maven Central serves Apicurio Registry's application only as a plain jar
# (io.apicurio:apicurio-registry-app), not as a runnable Quarkus build, so
# `up` builds one the first time: a Maven project of its own in the cache
# that depends on that jar and runs the Quarkus build on it, with the
# settings the registry's own build adds (its beans indexed, the H2
# in-memory datasource, its web.xml). 2.0.2.Final is the one version tried
# whose dependencies Maven Central serves whole here: 2.6.13.Final and 3.3.3
# need io.apicurio:apicurio-registry-schema-util-provider (and 3.3.3
# apicurio-registry-contracts-rules), which it does not serve. One
# dependency of 2.0.2.Final, org.everit.json.schema (JSON Schema
# compatibility checks, not on Maven Central), is left out: JSON Schema
# rules are not used.
#
# Environment (all optional):
#   APICURIO_PORT           HTTP port; default 18081, or the next free one
#   APICURIO_JAVA           the java binary (default: java on PATH, 17 or newer)
#   APICURIO_START_TIMEOUT  seconds to wait for the registry, default 120
#   APICURIO_MVN_FLAGS      extra flags for the Maven build
#   APICURIO_CACHE_DIR      where the build is kept; default .cache/apicurio/<version>
#   ONCEFLOW_APICURIO_DIR   state folder (log, pid, URL); default .apicurio
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# The one place the versions are pinned: the registry, and the Quarkus
# version its parent POM builds it with.
APICURIO_VERSION=2.0.2.Final
QUARKUS_VERSION=1.12.2.Final

CACHE_DIR="${APICURIO_CACHE_DIR:-$ONCEFLOW_ROOT/.cache/apicurio/$APICURIO_VERSION}"
BUILD_DIR="$CACHE_DIR/build"
RUNNER="$BUILD_DIR/target/apicurio-runner-$APICURIO_VERSION-runner.jar"
STATE_DIR="${ONCEFLOW_APICURIO_DIR:-$ONCEFLOW_ROOT/.apicurio}"
case "$STATE_DIR" in /*) ;; *) STATE_DIR="$PWD/$STATE_DIR" ;; esac
STATE_DIR="${STATE_DIR%/}"
case "$STATE_DIR" in "" | / | "$ONCEFLOW_ROOT" | "$HOME" | /tmp | /work) die "refusing ONCEFLOW_APICURIO_DIR=${ONCEFLOW_APICURIO_DIR:-} as state folder" ;; esac
PID_FILE="$STATE_DIR/registry.pid"
URL_FILE="$STATE_DIR/url"
LOG_FILE="$STATE_DIR/registry.log"
START_TIMEOUT="${APICURIO_START_TIMEOUT:-120}"

usage() {
	echo "usage: $0 up | down | status" >&2
	exit 2
}

running() {
	[ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

# build makes the runnable registry in the cache, once: a later call finds
# the runner jar and does nothing.
build() {
	if [ -f "$CACHE_DIR/.complete" ]; then
		log "using the registry built in ${CACHE_DIR#"$ONCEFLOW_ROOT"/}"
		return
	fi
	command -v mvn >/dev/null 2>&1 || die "mvn not found (install Debian's maven package)"
	rm -rf "$BUILD_DIR"
	mkdir -p "$BUILD_DIR/src/main/resources/META-INF"
	cat >"$BUILD_DIR/pom.xml" <<POM
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>onceflow.test</groupId>
  <artifactId>apicurio-runner</artifactId>
  <version>$APICURIO_VERSION</version>
  <packaging>jar</packaging>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>io.apicurio</groupId>
        <artifactId>apicurio-registry</artifactId>
        <version>$APICURIO_VERSION</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>io.apicurio</groupId>
      <artifactId>apicurio-registry-app</artifactId>
      <version>$APICURIO_VERSION</version>
      <exclusions>
        <exclusion>
          <groupId>com.github.everit-org.json-schema</groupId>
          <artifactId>org.everit.json.schema</artifactId>
        </exclusion>
      </exclusions>
    </dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin>
        <groupId>io.quarkus</groupId>
        <artifactId>quarkus-maven-plugin</artifactId>
        <version>$QUARKUS_VERSION</version>
        <executions>
          <execution>
            <goals><goal>build</goal></goals>
          </execution>
        </executions>
      </plugin>
    </plugins>
  </build>
</project>
POM
	log "building Apicurio Registry $APICURIO_VERSION from Maven Central (once; a few minutes)"
	# The registry's own settings and web.xml come from its jar; Quarkus
	# reads them only from the application being built.
	(cd "$BUILD_DIR" && mvn -B -q ${APICURIO_MVN_FLAGS:-} dependency:copy -Dartifact="io.apicurio:apicurio-registry-app:$APICURIO_VERSION" -DoutputDirectory=app-jar) >&2
	local jar="$BUILD_DIR/app-jar/apicurio-registry-app-$APICURIO_VERSION.jar"
	unzip -p "$jar" META-INF/web.xml >"$BUILD_DIR/src/main/resources/META-INF/web.xml"
	{
		unzip -p "$jar" application.properties
		echo
		echo "# Added for a build outside the registry's own: its jar has no bean index,"
		echo "# and in-memory storage is H2 in memory."
		echo "quarkus.index-dependency.registry-app.group-id=io.apicurio"
		echo "quarkus.index-dependency.registry-app.artifact-id=apicurio-registry-app"
		echo "quarkus.datasource.db-kind=h2"
		echo "quarkus.datasource.jdbc.url=jdbc:h2:mem:registry_db"
		echo "quarkus.datasource.username=sa"
		echo "quarkus.datasource.password=sa"
	} >"$BUILD_DIR/src/main/resources/application.properties"
	(cd "$BUILD_DIR" && mvn -B -q ${APICURIO_MVN_FLAGS:-} package -DskipTests) >&2
	[ -f "$RUNNER" ] || die "the build made no $RUNNER"
	touch "$CACHE_DIR/.complete"
}

up() {
	if running; then
		log "already running (pid $(cat "$PID_FILE"))"
		cat "$URL_FILE"
		return
	fi
	build
	local java="${APICURIO_JAVA:-java}" port
	command -v "$java" >/dev/null 2>&1 || die "no java found (set APICURIO_JAVA)"
	port="$(free_port "${APICURIO_PORT:-18081}")"
	rm -rf "$STATE_DIR"
	mkdir -p "$STATE_DIR"
	log "starting Apicurio Registry $APICURIO_VERSION on 127.0.0.1:$port"
	nohup "$java" -Xms64m -Xmx512m -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
		-jar "$RUNNER" >"$LOG_FILE" 2>&1 </dev/null &
	echo $! >"$PID_FILE"
	local url="http://127.0.0.1:$port/apis/ccompat/v6" deadline=$((SECONDS + START_TIMEOUT))
	until curl -sf -m 2 -o /dev/null "$url/subjects"; do
		if ! running; then
			tail -n 30 "$LOG_FILE" >&2 || true
			die "the registry exited during start (log: $LOG_FILE)"
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			tail -n 30 "$LOG_FILE" >&2 || true
			down
			die "the registry did not answer within ${START_TIMEOUT}s"
		fi
		sleep 1
	done
	echo "$url" >"$URL_FILE"
	log "up: $url (pid $(cat "$PID_FILE"), log ${LOG_FILE#"$ONCEFLOW_ROOT"/})"
	echo "$url"
}

down() {
	if running; then
		local pid
		pid="$(cat "$PID_FILE")"
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 30); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -9 "$pid" 2>/dev/null || true
		log "stopped (pid $pid)"
	fi
	rm -rf "$STATE_DIR"
}

case "${1:-}" in
up) up ;;
down) down ;;
status)
	if running; then
		log "running (pid $(cat "$PID_FILE")): $(cat "$URL_FILE" 2>/dev/null)"
		exit 0
	fi
	log "not running"
	exit 1
	;;
*) usage ;;
esac
