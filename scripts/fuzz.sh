#!/usr/bin/env bash
# Runs every fuzz target of the module (each `func FuzzXxx` in a _test.go
# file, found by grep, so a new target needs no listing here) for FUZZTIME
# each (default 10s), one after the other, and reports which failed. A
# failing input is written by `go test` to the package's
# testdata/fuzz/<target>/ and stays there as a seed: commit it with the fix.
#
#   scripts/fuzz.sh                 every target
#   scripts/fuzz.sh ./serde         the targets of some packages
#   FUZZTIME=1m scripts/fuzz.sh     longer
set -euo pipefail

. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

FUZZTIME="${FUZZTIME:-10s}"
if [ $# -eq 0 ]; then
	set -- .
fi

targets=()
while IFS=: read -r file line; do
	name="${line#func }"
	name="${name%%(*}"
	targets+=("./$(dirname "${file#./}") $name")
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*(' "$@" | grep -v '/\.cache/' | sort -u)

[ ${#targets[@]} -gt 0 ] || die "no fuzz targets under $*"
log "${#targets[@]} fuzz targets, $FUZZTIME each"

failed=()
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	log "$pkg $name"
	if ! "${GO:-go}" test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		failed+=("$pkg $name")
	fi
done

if [ ${#failed[@]} -gt 0 ]; then
	log "failed (inputs kept in each package's testdata/fuzz/):"
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
log "all ${#targets[@]} fuzz targets passed"
