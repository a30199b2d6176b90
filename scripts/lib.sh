# shellcheck shell=bash
# Helpers shared by the scripts in this folder. Source it, do not run it:
#   . "$(dirname "$0")/lib.sh"

# The repository root (the folder above scripts/).
ONCEFLOW_ROOT="${ONCEFLOW_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"

# log prints to stderr, so that stdout stays for the one value a script returns.
log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# now_ms prints the wall clock in milliseconds.
now_ms() { date +%s%3N; }

# as_root runs a command as root: directly when we are root, else through sudo.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

# apt_install PKG... installs Debian packages; when the first try fails (an
# old or missing package list), it runs apt-get update once and tries again.
apt_install() {
	command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install $* by hand"
	log "installing Debian package(s): $*"
	if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
		log "apt-get install failed; running apt-get update and trying again"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
	fi
}

# ensure_kcat installs kcat (librdkafka's command-line client) when absent.
# Older Debian releases ship it as kafkacat; either name is accepted.
ensure_kcat() {
	if command -v kcat >/dev/null 2>&1; then
		return 0
	fi
	if command -v kafkacat >/dev/null 2>&1; then
		log "kcat not found, kafkacat is there; use it under that name"
		return 0
	fi
	apt_install kcat
	command -v kcat >/dev/null 2>&1 || die "kcat still not found after installing it"
}

# kcat_bin prints the name of the kcat binary (kcat or kafkacat).
kcat_bin() {
	if command -v kcat >/dev/null 2>&1; then echo kcat; else echo kafkacat; fi
}

# port_in_use PORT succeeds when something on 127.0.0.1 accepts connections on PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port START prints the first port from START upwards that nothing listens on.
free_port() {
	local p="$1"
	while port_in_use "$p"; do
		p=$((p + 1))
		[ "$p" -lt 65535 ] || die "no free port from $1 upwards"
	done
	echo "$p"
}
