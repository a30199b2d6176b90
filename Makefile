# onceflow build and test entry points. `make test` is what CI and newcomers run.
GO ?= go

.PHONY: test test-long test-pg test-registry lint build bench-full fuzz chaos kafka-up kafka-down kafka-cluster-up kafka-cluster-down test-kafka test-security kafka-secure-up kafka-secure-down compose-check test-browser

# test: every package's tests under the race detector, then the tests of
# the files built only without it (`//go:build !race`: they drive sarama's
# producer through failed produce requests, where sarama itself has a data
# race, see internal/engine/producer_errors_test.go), each once, without
# it. About 3 minutes on 2 cores. The slow fault, timeout, eviction and
# SIGKILL tests sit in files with the `long` build tag, which this target
# does not build. Most packages' tests wait on a broker's timers far more
# than they compute (under a third of two cores busy, one package per
# core): TEST_P packages run at once (go test -p; its default is the
# number of cores).
TEST_P ?= 4
test:
	$(GO) test -race -count=1 -p $(TEST_P) ./...
	@scripts/test-tagged.sh norace

# test-long: exactly the tests of the `long` files (under the race
# detector; those also tagged `!race` without it), none of the tests
# `make test` runs. scripts/test-tagged.sh finds their names. .ci/run runs
# it after `make test`, with a PostgreSQL (the runner's fencing test
# against the database sink skips without ONCEFLOW_PG_DSN).
test-long:
	@scripts/test-tagged.sh long
	@scripts/test-tagged.sh long-norace

# staticcheck runs at a pinned version through `go run pkg@version`: that
# exact version, verified against the checksum database, built with its own
# go.mod. It stays out of our go.mod, where a `tool` directive would add its
# dependencies to the requirements every user of the library resolves. Its
# checks are listed, with reasons, in staticcheck.conf. The import rules
# (which layer may import which) are a test, internal/testrig/archtest. The kafka
# build tag brings the real-Kafka tests into vet and staticcheck, the chaos
# tag the allstages chaos test (cmd/onceflow/internal/chaos, run with -tags chaos), the
# long tag the tests of `make test-long`, the registry and confluent tags
# the tests of make test-registry.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags kafka,kafkasecure,chaos,long,registry,confluent ./...
	$(STATICCHECK) -tags kafka,kafkasecure,chaos,long,registry,confluent ./...
	$(GO) test -count=1 ./internal/testrig/archtest
	cd deploy/kubernetes && $(GO) vet ./... && $(STATICCHECK) ./...

build:
	$(GO) build -o bin/onceflow ./cmd/onceflow

# The full benchmark of the performance targets on a real Kafka broker of its
# own (about an hour on 2 cores; see benchmarks/README.md): every step under
# benchmarks/results/<date>-full/, then its TARGETS.md. BENCH_FULL_FLAGS=--quick
# is a smoke run of a few minutes.
bench-full:
	@scripts/bench-full.sh $(BENCH_FULL_FLAGS)

# Every fuzz target (found by scripts/fuzz.sh: each func FuzzXxx in a test
# file) for FUZZTIME each, one after the other. A failing input stays in the
# package's testdata/fuzz/<target>/ as a seed. FUZZ_PKGS narrows it down.
FUZZTIME ?= 10s
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh $(FUZZ_PKGS)

# The database sink's tests against a real PostgreSQL (ONCEFLOW_PG_DSN, or
# the server scripts/install-postgres.sh starts; see scripts/test-pg.sh).
test-pg:
	@scripts/test-pg.sh

# serde/registry against a real schema registry (Apicurio Registry, built
# from Maven Central and started by scripts/apicurio.sh, or
# ONCEFLOW_REGISTRY_URL), and Confluent's own serializers when
# ONCEFLOW_CONFLUENT_PYTHON names a python with confluent-kafka; see
# docs/serdes.md.
test-registry:
	@scripts/test-registry.sh

# A single-node KRaft Apache Kafka from Maven Central (see scripts/kafka.sh).
kafka-up:
	@scripts/kafka.sh up

kafka-down:
	@scripts/kafka.sh down

# A three-broker KRaft cluster on loopback (replication factor 3,
# min.insync.replicas 2); prints the bootstrap list last. It lives in
# .kafka-cluster unless ONCEFLOW_KAFKA_DIR says otherwise, so it can run
# next to the single broker.
KAFKA_CLUSTER_DIR ?= $(or $(ONCEFLOW_KAFKA_DIR),.kafka-cluster)

kafka-cluster-up:
	@ONCEFLOW_KAFKA_DIR=$(KAFKA_CLUSTER_DIR) scripts/kafka.sh up --brokers 3

kafka-cluster-down:
	@ONCEFLOW_KAFKA_DIR=$(KAFKA_CLUSTER_DIR) scripts/kafka.sh down

# The integration suite against real Kafka; the broker address comes from
# ONCEFLOW_KAFKA_BROKERS, or from the broker `make kafka-up` started.
test-kafka:
	@scripts/test-kafka.sh

# The security suite: every command over SASL PLAIN, SCRAM-SHA-256/512, TLS
# with a client certificate and SASL_SSL, ACLs, secrets kept out of output,
# against the broker of scripts/kafka-secure.sh (see docs/security.md).
test-security:
	@scripts/test-security.sh

# A single broker with SASL, TLS and ACLs; prints the path of its env file.
kafka-secure-up:
	@scripts/kafka-secure.sh up

kafka-secure-down:
	@scripts/kafka-secure.sh down

compose-check:
	@scripts/compose-check.sh

# The status page in headless Chromium (Debian's chromium package, which
# scripts/install-chromium.sh installs when absent). UPDATE=1 rewrites
# docs/status-page.png. The Mermaid charts of Topology.DescribeMermaid are
# rendered by Mermaid too: ONCEFLOW_MERMAID_JS, or the mermaid.min.js that
# scripts/install-mermaid.sh fetches (npm package mermaid).
test-browser:
	ONCEFLOW_CHROMIUM="$$(scripts/install-chromium.sh | tail -n 1)" && export ONCEFLOW_CHROMIUM && \
	GO=$(GO) scripts/test-tagged.sh browser ./processor $(if $(UPDATE),-args -update-screenshot)
	ONCEFLOW_MERMAID_JS="$${ONCEFLOW_MERMAID_JS:-$$(scripts/install-mermaid.sh | tail -n 1)}" && export ONCEFLOW_MERMAID_JS && \
	GO=$(GO) scripts/test-tagged.sh browser ./topology

# onceflow chaos: three replicas under random SIGKILLs, SIGSTOP pauses past
# the session timeout and (on a cluster) broker kill -9s, then a
# read_committed check against the truth. With CHAOS_CLUSTER_DIR (the
# ONCEFLOW_KAFKA_DIR of `make kafka-cluster-up`) it runs on that cluster and
# kills its brokers; otherwise on the embedded broker. CHAOS_ARGS adds flags
# (--rate, --seed, --keep-logs, --json, ...).
CHAOS_DURATION ?= 60s
chaos: build
	bin/onceflow chaos --duration $(CHAOS_DURATION) $(if $(CHAOS_CLUSTER_DIR),--cluster-dir $(CHAOS_CLUSTER_DIR),--embedded) $(CHAOS_ARGS)

# On a three-broker cluster that scripts/with-cluster.sh starts for the run
# and stops afterwards (folder .kafka-cluster-run unless ONCEFLOW_KAFKA_DIR
# says otherwise; KAFKA_PORT and KAFKA_CONTROLLER_PORT move its ports):
#
.PHONY: chaos-cluster test-cluster ci-cluster chaos-allstages-cluster

# chaos-cluster: onceflow chaos with every fault kind that applies
# (replica kills and pauses, broker kills, network faults), CHAOS_DURATION
# long, CHAOS_ARGS added.
chaos-cluster: build
	@scripts/with-cluster.sh sh -c 'bin/onceflow chaos --cluster-dir "$$ONCEFLOW_KAFKA_CLUSTER_DIR" --duration $(CHAOS_DURATION) $(CHAOS_ARGS)'

# test-cluster: the engine's real-Kafka tests of the state-loss scenarios
# (a task moving while its changelog has a transaction open, markers not yet
# written; a commit against a hung transaction coordinator, and a stop during
# one; a killed owner, then two moves) and the transaction coordinator's
# kill -9, where markers are written by other brokers than the coordinator.
# They are the tests of the files tagged `cluster` (written `cluster ||
# !cluster`, so that make test and make test-kafka run them too);
# `scripts/test-tagged.sh -n cluster` lists them.
test-cluster:
	@scripts/with-cluster.sh scripts/test-tagged.sh cluster -v

# ci-cluster: all on one cluster (what .ci/run runs): the tests, then a
# 3-minute chaos run of the orders topology, then one of the allstages
# topology (see chaos-allstages-cluster).
CI_CHAOS_DURATION ?= 180s
ci-cluster: build
	@scripts/with-cluster.sh sh -c 'scripts/test-tagged.sh cluster && bin/onceflow chaos --cluster-dir "$$ONCEFLOW_KAFKA_CLUSTER_DIR" --duration $(CI_CHAOS_DURATION) $(CHAOS_ARGS) && $(ALLSTAGES_CHAOS)'

# chaos-allstages-cluster: the allstages topology (every kind of stage, sinks
# delivered to a receiver that is not idempotent, operator commands among the
# faults, parked deliveries settled in batches before the verdict) at 200
# events/s on a cluster of its own. It waits ALLSTAGES_DRAIN after its faults,
# twice: for its input to be committed, then for its sinks to settle (runs
# and their backlogs: benchmarks/results/2026-12-04-chaos-allstages).
ALLSTAGES_DURATION ?= 180s
ALLSTAGES_DRAIN ?= 5m
ALLSTAGES_CHAOS = bin/onceflow chaos --topology allstages --rate 200 --cluster-dir "$$ONCEFLOW_KAFKA_CLUSTER_DIR" --duration $(ALLSTAGES_DURATION) --drain-timeout $(ALLSTAGES_DRAIN) $(CHAOS_ARGS)
chaos-allstages-cluster: build
	@scripts/with-cluster.sh sh -c '$(ALLSTAGES_CHAOS)'
