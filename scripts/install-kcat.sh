#!/usr/bin/env bash
# Installs kcat (librdkafka's command-line client, Debian package `kcat`)
# when it is absent. The other scripts call ensure_kcat from lib.sh directly.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
ensure_kcat
"$(kcat_bin)" -V 2>&1 | head -n 1 >&2
