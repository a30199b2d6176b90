#!/usr/bin/env bash
# Validates docker-compose.yml (and the Prometheus config it mounts) without a
# container engine: `docker-compose config` only parses, merges and checks.
# Installs Debian's docker-compose package when no docker-compose is there.
set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$ONCEFLOW_ROOT"

if ! command -v docker-compose >/dev/null 2>&1; then
	apt_install docker-compose
fi
log "$(docker-compose version --short 2>/dev/null || docker-compose version 2>&1 | head -n 1)"

docker-compose -f docker-compose.yml config -q
log "docker-compose.yml: valid"

# Every service the file names must be there (a typo in a merge key or a
# dropped service would still be valid YAML).
services="$(docker-compose -f docker-compose.yml config --services | sort | tr '\n' ' ')"
want="kafka kafka-init postgres prometheus replica-1 replica-2 replica-3 "
[ "$services" = "$want" ] || die "services are '$services', expected '$want'"

# The Prometheus config is mounted, not parsed by docker-compose: check it is
# YAML with the three replicas as targets.
for r in replica-1 replica-2 replica-3; do
	grep -q -- "- $r:9100" deploy/prometheus.yml || die "deploy/prometheus.yml does not scrape $r:9100"
done
if command -v python3 >/dev/null 2>&1 && python3 -c 'import yaml' 2>/dev/null; then
	python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' deploy/prometheus.yml
elif /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
	/usr/bin/python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' deploy/prometheus.yml
fi
log "deploy/prometheus.yml: valid"
