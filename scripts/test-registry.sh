#!/usr/bin/env bash
# serde/registry against a real schema registry and Confluent's own
# serializers: the tests of build tags `registry` (the Apicurio Registry of
# scripts/apicurio.sh, or the one ONCEFLOW_REGISTRY_URL names) and
# `confluent` (the python ONCEFLOW_CONFLUENT_PYTHON names, with
# confluent-kafka; opt-in), and internal/engine's
# topology through that registry. A registry this script
# starts is stopped when it exits, however it exits.
#
#   scripts/test-registry.sh [go test flags]
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

if [ -z "${ONCEFLOW_REGISTRY_URL:-}" ]; then
	if ! scripts/apicurio.sh status >/dev/null 2>&1; then
		# Set before `up`, so that a start that fails half-way is cleaned too.
		trap 'scripts/apicurio.sh down || true' EXIT
		trap 'exit 130' INT
		trap 'exit 143' TERM
	fi
	ONCEFLOW_REGISTRY_URL="$(scripts/apicurio.sh up | tail -n 1)"
	[ -n "$ONCEFLOW_REGISTRY_URL" ] || die "scripts/apicurio.sh up printed no URL"
fi
# Confluent's serializers come from PyPI, which CI does not install from:
# the interop tests run only when ONCEFLOW_CONFLUENT_PYTHON names a python
# with confluent-kafka (scripts/install-confluent-python.sh makes one). The
# wire format is checked in every run against the bytes those serializers
# wrote (serde/registry/testdata/confluent).
tags=registry
if [ -n "${ONCEFLOW_CONFLUENT_PYTHON:-}" ]; then
	tags=registry,confluent
	export ONCEFLOW_CONFLUENT_PYTHON
fi
export ONCEFLOW_REGISTRY_URL
log "ONCEFLOW_REGISTRY_URL=$ONCEFLOW_REGISTRY_URL tags=$tags"
go test -count=1 -tags "$tags" "$@" ./serde/registry
# A topology through the registry on the embedded broker.
# Its tests are those of the files tagged registry there.
scripts/test-tagged.sh registry ./internal/engine "$@"
