#!/usr/bin/env bash
# Headless Chromium for the browser tests (the status page screenshot):
# Debian's chromium package, with a font for the page's text, installed
# when absent. Prints the browser's path as the last line of stdout.
#
#   scripts/install-chromium.sh
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# chromium_bin prints the first Chromium on PATH, or nothing.
chromium_bin() {
	local name
	for name in chromium chromium-browser; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
}

bin="$(chromium_bin)"
if [ -z "$bin" ]; then
	apt_install chromium fonts-dejavu-core
	bin="$(chromium_bin)"
	[ -n "$bin" ] || die "no chromium on PATH after installing it"
fi
log "$("$bin" --version 2>/dev/null || echo "$bin")"
echo "$bin"
