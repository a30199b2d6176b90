#!/usr/bin/env bash
# Runs exactly the tests of the test files whose build constraint names a
# tag, and no other test: `go test -run` gets the names of their Test
# functions (found by grep, so a new test needs no listing here), and the
# packages that hold them.
#
#   scripts/test-tagged.sh long          files with `long` (not `!race`), under -race, with -tags long
#   scripts/test-tagged.sh norace        files with `!race` (not `long`), without -race
#   scripts/test-tagged.sh long-norace   files with both, without -race, with -tags long
#
# Go test flags after the mode are passed on (-v, -count, -timeout ...).
# The `long` files are the slow fault, timeout and eviction tests that
# `make test` leaves to `make test-long`; the `!race` files drive sarama
# through failures where sarama has a data race of its own (see
# internal/engine/producer_errors_test.go). One `go test` runs every
# package, so a name must be unique among the tests of those packages: the
# script stops when another test file of one of them has a Test function
# of the same name (it would run twice).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

[ $# -ge 1 ] || die "usage: $0 long|norace|long-norace [go test flags]"
mode="$1"
shift
case "$mode" in
long) want_long=1 want_norace=0 flags=(-race -tags long) ;;
norace) want_long=0 want_norace=1 flags=() ;;
long-norace) want_long=1 want_norace=1 flags=(-tags long) ;;
*) die "unknown mode $mode (long, norace or long-norace)" ;;
esac

# constraint prints the //go:build line of a file (empty when none).
constraint() { sed -n '/^package /q; s|^//go:build ||p' "$1"; }

# has_long and has_norace say whether a constraint names `long` (not
# negated: "long", "long && !race") or `!race`.
has_long() { grep -Eq '(^|[^!A-Za-z0-9_])long([^A-Za-z0-9_]|$)' <<<"$1"; }
has_norace() { grep -Eq '!race([^A-Za-z0-9_]|$)' <<<"$1"; }

names=()
pkgs=()
others=() # "dir name" of every test in the packages' other test files
while read -r dir; do
	found=0
	for f in "$dir"/*_test.go; do
		[ -e "$f" ] || continue
		c="$(constraint "$f")"
		l=0 n=0
		if [ -n "$c" ] && has_long "$c"; then l=1; fi
		if [ -n "$c" ] && has_norace "$c"; then n=1; fi
		tests=$(grep -o '^func Test[A-Za-z0-9_]*(' "$f" | sed 's/^func //; s/($//' || true)
		if [ "$l" = "$want_long" ] && [ "$n" = "$want_norace" ]; then
			for t in $tests; do names+=("$t"); done
			[ -z "$tests" ] || found=1
		else
			for t in $tests; do others+=("$dir $t"); done
		fi
	done
	if [ "$found" = 1 ]; then pkgs+=("$dir"); fi
done < <("${GO:-go}" list -f '{{.Dir}}' ./...)

if [ ${#names[@]} -eq 0 ]; then
	# Files both long and !race may come and go; the other two sets not.
	[ "$mode" = long-norace ] || die "no tests in files tagged for $mode"
	log "$mode: no tests"
	exit 0
fi

# A name shared with another test of these packages would run it too.
dup=$(printf '%s\n' "${names[@]}" | sort | uniq -d)
[ -z "$dup" ] || die "tests of the same name in several $mode files: $dup"
clash=()
for o in ${others[@]+"${others[@]}"}; do
	read -r dir name <<<"$o"
	printf '%s\n' "${pkgs[@]}" | grep -qxF "$dir" || continue
	printf '%s\n' "${names[@]}" | grep -qxF "$name" && clash+=("${dir#"$ONCEFLOW_ROOT"/} $name")
done
[ ${#clash[@]} -eq 0 ] || die "$mode tests share a name with other tests of their packages (rename one): ${clash[*]}"

run="^($(
	IFS='|'
	echo "${names[*]}"
))\$"
rel=()
for p in "${pkgs[@]}"; do rel+=("./${p#"$ONCEFLOW_ROOT"/}"); done
log "$mode: ${#names[@]} tests in ${rel[*]}"
exec "${GO:-go}" test "${flags[@]}" -count=1 "$@" -run "$run" "${rel[@]}"
