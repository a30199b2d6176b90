#!/usr/bin/env bash
# Validates docker-compose.yml (and the Prometheus config, alert rules and
# Grafana dashboard it mounts) without a container engine: `docker-compose
# config` only parses, merges and checks; promtool checks the Prometheus
# config, the rules and their unit tests, and every query of the dashboard.
# Installs Debian's docker-compose and prometheus (for promtool) packages when
# they are not there.
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
want="grafana kafka kafka-init postgres prometheus replica-1 replica-2 replica-3 "
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

# The replicas run the stateful example with a state volume and a health
# check each.
config="$(docker-compose -f docker-compose.yml config)"
for r in replica-1 replica-2 replica-3; do
	svc="$(printf '%s\n' "$config" | awk -v s="  $r:" '$0 == s {on=1; next} on && /^  [^ ]/ {exit} on')"
	printf '%s\n' "$svc" | grep -q -- '- orders$' || die "$r does not run the orders example"
	printf '%s\n' "$svc" | grep -q -- '/var/lib/onceflow' || die "$r has no state volume"
	printf '%s\n' "$svc" | grep -q -- 'healthz' || die "$r has no /healthz health check"
done
log "replicas: orders, state volumes, health checks"

if ! command -v promtool >/dev/null 2>&1; then
	apt_install prometheus
fi
# promtool checks the config with its rule files at the paths the container
# mounts them on: check a copy that names the files here.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed "s|/etc/prometheus/prometheus-rules.yml|$ONCEFLOW_ROOT/deploy/prometheus-rules.yml|" deploy/prometheus.yml >"$tmp/prometheus.yml"
promtool check config "$tmp/prometheus.yml" >&2 # and the rule files it names
(cd deploy && promtool test rules prometheus-rules.test.yml >&2)
log "deploy/prometheus-rules.yml: valid, unit tests pass"

# Every query of the Grafana dashboard parses (the template variables
# replaced by a match-all): promtool checks them as recording rules.
python3 - "$tmp/dashboard-rules.yml" <<'PY'
import json, sys
d = json.load(open("deploy/grafana/dashboards/onceflow.json"))
exprs = []
def walk(panels):
    for p in panels:
        walk(p.get("panels", []))
        for t in p.get("targets", []):
            exprs.append(t["expr"].replace("$app", ".*").replace("$instance", ".*"))
walk(d["panels"])
if not exprs:
    sys.exit("deploy/grafana/dashboards/onceflow.json: no queries")
with open(sys.argv[1], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write("      - record: dashboard:query%d\n        expr: %s\n" % (i, json.dumps(e)))
PY
promtool check rules "$tmp/dashboard-rules.yml" >&2
log "deploy/grafana/dashboards/onceflow.json: every query parses"

# The Kubernetes manifests decode strictly against the API types and give
# onceflow what it needs (deploy/kubernetes is a module of its own, so the
# API types stay out of onceflow's go.mod).
(cd deploy/kubernetes && go test -count=1 ./... >&2)
if command -v kubectl >/dev/null 2>&1; then
	kubectl kustomize deploy/kubernetes >/dev/null
fi
log "deploy/kubernetes: valid"
