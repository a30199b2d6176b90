# onceflow build and test entry points. `make test` is what CI and newcomers run.
GO ?= go

.PHONY: test lint build kafka-up kafka-down test-kafka compose-check

# Everything under the race detector, then the tests that drive sarama's
# producer through failed produce requests, where sarama itself has a data
# race (see internal/engine/producer_errors_test.go), without it.
test:
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run 'TestFencedProducerIsRecreated|TestProduceErrorsAbortAndRewind|TestHungCoordinatorCommitTimesOut|TestStopWithHungCoordinatorIsBounded' ./internal/engine
	$(GO) test -count=1 -run 'TestHealthzFailsWhileStalled' ./processor

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -o bin/onceflow ./cmd/onceflow

# A single-node KRaft Apache Kafka from Maven Central (see scripts/kafka.sh).
kafka-up:
	@scripts/kafka.sh up

kafka-down:
	@scripts/kafka.sh down

# The integration suite against real Kafka; the broker address comes from
# ONCEFLOW_KAFKA_BROKERS, or from the broker `make kafka-up` started.
test-kafka:
	@scripts/test-kafka.sh

compose-check:
	@scripts/compose-check.sh
