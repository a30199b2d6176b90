#!/usr/bin/env bash
# Builds the Kafka Streams peer with Java 17 and Maven and prints the jar's
# path as the last line. Reuses the jar when it is newer than every source.
#
#   benchmarks/peers/kstreams/build.sh            build when stale
#   FORCE=1 benchmarks/peers/kstreams/build.sh    build anyway
#
# Environment: JAVA17_HOME (default: the first Java 17 JDK under
# /usr/lib/jvm), MVN (default mvn), MVN_FLAGS (extra Maven flags).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
jar="$here/target/onceflow-kstreams-peer.jar"

stale() {
	[ "${FORCE:-0}" = 1 ] && return 0
	[ -f "$jar" ] || return 0
	[ -n "$(find "$here/pom.xml" "$here/build.sh" "$here/src" -newer "$jar" -print -quit)" ]
}

find_java17() {
	if [ -n "${JAVA17_HOME:-}" ]; then
		echo "$JAVA17_HOME"
		return
	fi
	local d
	for d in /usr/lib/jvm/java-17-openjdk-amd64 /usr/lib/jvm/java-17-openjdk* /usr/lib/jvm/*17*; do
		if [ -x "$d/bin/javac" ]; then
			echo "$d"
			return
		fi
	done
	echo "build.sh: no Java 17 JDK under /usr/lib/jvm (set JAVA17_HOME)" >&2
	exit 1
}

if stale; then
	JAVA_HOME="$(find_java17)"
	export JAVA_HOME
	export PATH="$JAVA_HOME/bin:$PATH"
	# shellcheck disable=SC2086
	# Maven 3.8 writes stray colour resets even with -q -B: strip them.
	(cd "$here" && "${MVN:-mvn}" -q -B -Dstyle.color=never -DskipTests ${MVN_FLAGS:-} package) 2>&1 |
		sed -e 's/\x1b\[[0-9;]*m//g' -e '/^[[:space:]]*$/d' >&2
	[ -f "$jar" ] || { echo "build.sh: maven finished without $jar" >&2; exit 1; }
	touch "$jar"
fi
echo "$jar"
