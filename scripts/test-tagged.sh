#!/usr/bin/env bash
# Runs exactly the tests of the test files whose build constraint names a
# tag, and no other test: `go test -run` gets the names of their Test
# functions (found by grep, so a new or renamed test needs no listing
# anywhere), and the packages that hold them.
#
#   scripts/test-tagged.sh [-n|-r] MODE [./pkg...] [go test flags]
#
#   long         files with `long` (not `!race`), under -race, with -tags long
#   norace       files with `!race` (not `long`), without -race
#   long-norace  files with both, without -race, with -tags long
#   cluster      files with `cluster`, through scripts/test-kafka.sh (-tags kafka,long,
#                without -race) against the brokers of ONCEFLOW_KAFKA_BROKERS
#   pg           files with `pg`, under -race, with -tags long (they are long ones)
#   TAG          any other tag: files with TAG, with -tags TAG
#
# -n prints the tests it found, per package, and the command, and runs
# nothing; -r prints only the -run pattern (for scripts that run go test
# themselves). Arguments that begin with ./ narrow the search to those
# packages; the other arguments go to go test after the packages (-v,
# -count, -timeout, -args ...).
#
# The `long` files are the slow fault, timeout and eviction tests that
# `make test` leaves to `make test-long`; the `!race` files drive sarama
# through failures where sarama has a data race of its own (see
# internal/engine/producer_errors_test.go). A tag that selects tests which
# also run everywhere else (`cluster`: the engine's state-loss tests, also
# run on the embedded broker by `make test`; `pg`: the runner's tests
# against PostgreSQL, also in `make test-long`) is written `cluster ||
# !cluster`, true in every build: the tag marks the file and excludes it
# from nothing. One `go test` runs every package, so a name must be unique
# among the tests of those packages: the script stops when another test
# file of one of them has a Test function of the same name (it would run
# too).
set -euo pipefail

. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

usage="usage: $0 [-n|-r] MODE [./pkg...] [go test flags]"
out=run
case "${1:-}" in
-n)
	out=dry
	shift
	;;
-r)
	out=pattern
	shift
	;;
esac
[ $# -ge 1 ] || die "$usage"
mode="$1"
shift
[[ "$mode" =~ ^[A-Za-z0-9_.-]+$ ]] || die "$usage"
tag="$mode" want_norace=any
cmd=("${GO:-go}" test -count=1)
case "$mode" in
long) want_norace=0 cmd+=(-race -tags long) ;;
norace) tag="" want_norace=1 ;;
long-norace) tag=long want_norace=1 cmd+=(-tags long) ;;
cluster) cmd=(scripts/test-kafka.sh) ;;
pg) cmd+=(-race -tags long) ;;
-*) die "$usage" ;;
*) cmd+=(-tags "$mode") ;;
esac

patterns=()
while [ $# -gt 0 ] && [[ "$1" == ./* ]]; do
	patterns+=("$1")
	shift
done
[ ${#patterns[@]} -gt 0 ] || patterns=(./...)

# constraint prints the //go:build line of a file (empty when none).
constraint() { sed -n '/^package /q; s|^//go:build ||p' "$1"; }

# names_tag says whether a constraint names a tag, not only negated
# ("long", "long && !race", "cluster || !cluster"); has_norace whether it
# names `!race`.
names_tag() { grep -Eq "(^|[^!A-Za-z0-9_.])$1([^A-Za-z0-9_.]|\$)" <<<"$2"; }
has_norace() { grep -Eq '!race([^A-Za-z0-9_]|$)' <<<"$1"; }

# selected says whether a file with constraint $1 belongs to the mode.
selected() {
	local c="$1" n=0
	if [ -n "$tag" ]; then
		names_tag "$tag" "$c" || return 1
	elif names_tag long "$c"; then
		return 1 # norace: the long-norace files are test-long's
	fi
	[ "$want_norace" = any ] && return 0
	has_norace "$c" && n=1
	[ "$n" = "$want_norace" ]
}

names=()
pkgs=()
others=() # "dir name" of every test in the packages' other test files
declare -A per_pkg=()
while read -r dir; do
	found=0
	for f in "$dir"/*_test.go; do
		[ -e "$f" ] || continue
		tests=$(grep -o '^func Test[A-Za-z0-9_]*(' "$f" | sed 's/^func //; s/($//' | grep -vx TestMain || true)
		if selected "$(constraint "$f")"; then
			for t in $tests; do
				names+=("$t")
				per_pkg[$dir]+=" $t"
			done
			[ -z "$tests" ] || found=1
		else
			for t in $tests; do others+=("$dir $t"); done
		fi
	done
	if [ "$found" = 1 ]; then pkgs+=("$dir"); fi
done < <("${GO:-go}" list -f '{{.Dir}}' "${patterns[@]}")

if [ ${#names[@]} -eq 0 ]; then
	# Files both long and !race may come and go; the other sets not.
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
case "$out" in
pattern)
	echo "$run"
	exit 0
	;;
dry)
	for p in "${pkgs[@]}"; do
		echo "./${p#"$ONCEFLOW_ROOT"/}:"
		printf '  %s\n' ${per_pkg[$p]}
	done
	echo "would run: ${cmd[*]} -run '$run' ${rel[*]} $*"
	exit 0
	;;
esac
log "$mode: ${#names[@]} tests in ${rel[*]}"
exec "${cmd[@]}" -run "$run" "${rel[@]}" "$@"
