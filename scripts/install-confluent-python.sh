#!/usr/bin/env bash
# Confluent's own Avro, Protobuf and JSON Schema serializers, for the
# interop test of serde/registry: confluent-kafka-python (one pinned
# version, with its avro, protobuf and json extras) in a virtualenv in the
# cache, made when absent.
# Prints the virtualenv's python as the last line of stdout.
#
#   scripts/install-confluent-python.sh
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

VERSION="${ONCEFLOW_CONFLUENT_PYTHON_VERSION:-2.16.1}"
EXTRAS="avro,protobuf,json"
DIR="$ONCEFLOW_ROOT/.cache/confluent-python/$VERSION-${EXTRAS//,/-}"
PY="$DIR/bin/python"

# The stamp is written last: a run cut short is made again from scratch.
if [ ! -f "$DIR/.complete" ]; then
	command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
	python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv
	rm -rf "$DIR"
	log "installing confluent-kafka[$EXTRAS]==$VERSION into $DIR"
	python3 -m venv "$DIR" >&2
	"$DIR/bin/pip" install -q --disable-pip-version-check "confluent-kafka[$EXTRAS]==$VERSION" >&2
	touch "$DIR/.complete"
fi
log "confluent-kafka-python $VERSION: $PY"
echo "$PY"
