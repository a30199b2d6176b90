#!/usr/bin/env bash
# Mermaid's browser bundle for the browser test of Topology.DescribeMermaid:
# mermaid.min.js of the npm package mermaid (one pinned version), fetched
# with `npm pack` (the package alone, none of its dependencies) into the
# cache when absent. Prints the file's path as the last line of stdout.
#
#   scripts/install-mermaid.sh
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

VERSION="${ONCEFLOW_MERMAID_VERSION:-12.3.0}"
DIR="$ONCEFLOW_ROOT/.cache/mermaid/$VERSION"
JS="$DIR/mermaid.min.js"

if [ ! -s "$JS" ]; then
	command -v npm >/dev/null 2>&1 || apt_install npm
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	log "fetching mermaid@$VERSION with npm pack"
	(cd "$tmp" && npm pack --silent "mermaid@$VERSION" >/dev/null)
	tar -xzf "$tmp/mermaid-$VERSION.tgz" -C "$tmp" package/dist/mermaid.min.js
	mkdir -p "$DIR"
	mv "$tmp/package/dist/mermaid.min.js" "$JS.part"
	mv "$JS.part" "$JS"
fi
log "mermaid $VERSION: $JS"
echo "$JS"
