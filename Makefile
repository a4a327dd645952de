# minibroker — `make run` starts a broker, `make test` runs every test.
SHELL := /bin/bash
GO    ?= go
BIN   := bin/minibroker
PKGS_RACE := ./internal/... ./minibrokertest/...
# The packages `make test` runs without the race detector: every package the race pass does not
# run (so each test runs once), and internal/protocol, whose memory test (reqmem_test.go) measures
# RSS, which the race detector's shadow memory makes meaningless, so it runs only without it.
PKGS_NORACE = $(shell $(GO) list ./... | grep -v -e /internal/ -e /minibrokertest) ./internal/protocol
FUZZTIME ?= 5s
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: ecosystem all build run test test-unit test-race test-integration fuzz-smoke deps tools vet fmt lint bench bench-micro soak compat clean docker demo demo-if-docker drill-docker

all: build

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/minibroker

## run: build and start a broker with embedded defaults (./data, 127.0.0.1:9092, http 127.0.0.1:9644)
run: build
	./$(BIN) serve

## deps: what the tests need, installed when missing: kcat (client tests), promtool (Debian's prometheus
## package: the alert rules' tests), kafka-python (Debian's python3-kafka, run with /usr/bin/python3)
deps:
	@command -v kcat >/dev/null 2>&1 || { \
	  echo "installing kcat"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq kcat; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq kcat; fi; }
	@command -v promtool >/dev/null 2>&1 || { \
	  echo "installing promtool (package prometheus)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends prometheus; fi; }
	@/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || { \
	  echo "installing kafka-python (package python3-kafka)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-kafka; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq --no-install-recommends python3-kafka; fi; }

vet:
	$(GO) vet ./...

## lint: go.mod and go.sum tidy (go mod tidy would change nothing), imports grouped as goimports -local
## groups them (standard library, others, this module), and staticcheck's checks (staticcheck.conf says
## which and why). Both tools are run at pinned versions through the Go module proxy: nothing to install.
GOIMPORTS_VERSION   ?= v0.52.0
STATICCHECK_VERSION ?= v0.8.2
MODULE              := github.com/minibroker/minibroker
lint:
	$(GO) mod tidy -diff
	@out=$$($(GO) run golang.org/x/tools/cmd/goimports@$(GOIMPORTS_VERSION) -l -local $(MODULE) $$(git ls-files '*.go')); \
	  if [ -n "$$out" ]; then echo "goimports -local $(MODULE) would regroup:"; echo "$$out"; exit 1; fi
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## test: every test — formatting, vet, lint, unit tests, race tests, fuzz seeds, integration with real clients,
## and the docker-compose failover demo end to end when a Docker engine answers (else it says it skipped it)
test: deps fmt vet lint build
	$(GO) test -count=1 -parallel 4 -timeout 15m $(PKGS_NORACE)
	$(GO) test -count=1 -race -timeout 10m $(PKGS_RACE)
	@$(MAKE) --no-print-directory demo-if-docker

## compat: the client compatibility matrix (kgo, sarama, kafka-go, confluent-kafka-go, kcat); rewrites
## its table in docs/COMPATIBILITY.md. `make test` runs the same test and fails when that table differs.
compat: deps
	MINIBROKER_UPDATE_COMPAT=1 $(GO) test -count=1 -run '^TestCompatMatrix$$' ./test/integration/clients/
	@git diff --stat -- docs/COMPATIBILITY.md

## ecosystem: the Kafka tools people use (kcat, kafka-python, Burrow, kafkactl, and the Go tools the Go module
## proxy serves), installed as a fresh machine can and run as a user would against this build; prints the table
## tool × command → result and rewrites it in docs/ECOSYSTEM.md. Not part of make test (a few minutes).
ecosystem: build
	$(GO) run ./test/ecosystem -broker $(BIN) -tools bin/tools -out docs/ECOSYSTEM.md

## bench: minibroker beside kfake on this machine (< 15 min, plus about 10 min for the client quota section and a few for compaction), regenerates docs/PERFORMANCE.md.
## BENCH_STARTUP_MB sets the data held in the start-up-with-data measurement.
BENCH_RUNS       ?= 5
BENCH_DURATION   ?= 3s
BENCH_STARTUP_MB ?= 1024
BENCH_MIRROR_MB  ?= 1024
BENCH_CONSUME_MB ?= 256
## BENCH_MIRROR_COMPARE: a minibroker binary (e.g. built from an older commit) whose mirror catch-up runs beside this tree's
## in the same runs; the catch-up table then has its row and the per-run ratio this tree / it.
BENCH_MIRROR_COMPARE ?=
## BENCH_TXN_COMPARE: a minibroker binary built from an older commit whose transaction benchmarks (section txn) run beside this tree's
BENCH_TXN_COMPARE ?=
## BENCH_PRODUCE_COMPARE: a minibroker binary built from an older commit run as a fourth broker in every produce run
## (its latency, share and CPU per MB beside this tree's in the produce tables).
BENCH_PRODUCE_COMPARE ?=
bench: build
	$(GO) run ./test/bench -runs $(BENCH_RUNS) -duration $(BENCH_DURATION) -startup-mb $(BENCH_STARTUP_MB) \
		-consume-mb $(BENCH_CONSUME_MB) -mirror-backlog-mb $(BENCH_MIRROR_MB) -mirror-compare "$(BENCH_MIRROR_COMPARE)" \
		-txn-compare "$(BENCH_TXN_COMPARE)" -produce-compare "$(BENCH_PRODUCE_COMPARE)" -out docs/PERFORMANCE.md

## bench-micro: the hot-path Go benchmarks with allocation counts
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./internal/protocol ./internal/partition ./internal/broker ./internal/psm | tee bench.out

## soak: SOAK_DURATION of mixed load (idempotent, transactional, group) with the broker SIGTERMed and SIGKILLed
## every 2–4 min; checks every acknowledged record and the goroutine/RSS curve (bin/soak-curve.csv). Not in make test.
SOAK_DURATION ?= 30m
SOAK_ARGS     ?=
soak: build
	$(GO) run ./test/soak -broker $(BIN) -duration $(SOAK_DURATION) -csv bin/soak-curve.csv $(SOAK_ARGS)

## docker: the minibroker:dev image, FROM scratch: static binaries built here (CGO off) and copied in
## with the host's CA bundle and a non-root user (uid 65532). No image is pulled.
DOCKER_IMAGE ?= minibroker:dev
CA_BUNDLE    ?= $(firstword $(wildcard /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem))
docker:
	@test -n "$(CA_BUNDLE)" || { echo "no CA bundle found; set CA_BUNDLE=/path/to/ca-certificates.crt"; exit 1; }
	rm -rf bin/docker && mkdir -p bin/docker/data
	CGO_ENABLED=0 GOOS=linux $(GO) build -ldflags "-s -w -X main.version=$(VERSION)" -o bin/docker/minibroker ./cmd/minibroker
	CGO_ENABLED=0 GOOS=linux $(GO) build -ldflags "-s -w" -o bin/docker/minibroker-demo ./cmd/minibroker-demo
	cp $(CA_BUNDLE) bin/docker/ca-certificates.crt
	printf 'root:x:0:0:root:/:/sbin/nologin\nminibroker:x:65532:65532:minibroker:/data:/sbin/nologin\n' > bin/docker/passwd
	printf 'root:x:0:\nminibroker:x:65532:\n' > bin/docker/group
	@if docker buildx version >/dev/null 2>&1; then b="docker build"; else b="env DOCKER_BUILDKIT=0 docker build"; fi; \
	  echo "$$b -t $(DOCKER_IMAGE) -f docker/Dockerfile bin/docker"; $$b -t $(DOCKER_IMAGE) -f docker/Dockerfile bin/docker

## demo: the docker-compose failover demo (docker/demo.sh): three clusters, a network cut, failover, failback,
## on the documented host ports (19091-19093, 19641-19643); DEMO_PORTS=docker lets Docker choose them
DEMO_PORTS ?= fixed
demo: docker
	$(GO) build -o bin/minibroker-demo ./cmd/minibroker-demo
	DEMO_PORTS=$(DEMO_PORTS) docker/demo.sh

## drill-docker: `minibroker drill --failback` against the compose demo's a and b (docker/drill.sh: unique project, Docker-chosen host ports; exits non-zero unless the drill passed)
drill-docker: docker
	DRILL_IMAGE=$(DOCKER_IMAGE) docker/drill.sh

## demo-if-docker: `make demo` when a Docker engine and compose answer, else a line saying it was skipped;
## Docker chooses the host ports and the project name is unique (DEMO_PORTS=docker), so no fixed port must be free
demo-if-docker:
	@if docker info >/dev/null 2>&1 && { docker compose version >/dev/null 2>&1 || docker-compose version >/dev/null 2>&1; }; then \
	  $(MAKE) --no-print-directory demo DEMO_PORTS=docker; \
	else echo "SKIPPED the docker-compose failover demo (docker/demo.sh): no Docker engine with compose answers here"; fi

clean:
	rm -rf bin data
