# lockproxy — the usual entry points. `make run` and `make test` are the two
# commands a newcomer needs (see README).
GO       ?= go
CONFIG   ?= config.example.yaml
FUZZTIME ?= 30s
# The version lockproxy reports (lockproxy version, INFO, /metrics).
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
BIN      ?= bin
# The CA roots the image carries at /etc/ssl/certs/ca-certificates.crt.
CA_ROOTS ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: build image deps run test ops-check valkey-suite bench fuzz fuzz-grammar lint chaos clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/lockproxy ./cmd/lockproxy

# The container image as an OCI image layout in bin/image, without a
# container engine (deploy/container/Containerfile builds the same with one):
# `podman load -i bin/image` or `skopeo copy oci:bin/image docker://...`.
image: build
	$(GO) run ./cmd/ociimage -binary $(BIN)/lockproxy -ca-roots $(CA_ROOTS) -version $(VERSION) -out $(BIN)/image

# valkey-server, valkey-cli/benchmark/sentinel and redis-server, when missing
# (apt-get on Debian 12; bookworm-backports for Valkey 8).
deps:
	scripts/deps.sh

# Starts a local valkey-server when none answers on the config's upstream
# address, then lockproxy in front of it.
run: deps
	scripts/run.sh $(CONFIG)

# Unit and end-to-end tests against a real valkey-server, with the race
# detector; then every Go benchmark once, as its set-up checks that it still
# measures what it says (timings are make bench's, not the tests').
test: deps lint
	$(GO) test -race -count=1 -timeout 30m ./...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime 1x ./...

# The operations kit in deploy/: promtool check/test rules, systemd-analyze
# verify, lockproxy check-config over deploy/examples/*.yaml, the image;
# built in a temporary directory (bin/ stays as it was).
ops-check:
	scripts/deps.sh ops
	scripts/ops-check.sh

# Valkey's own test suite (../shared/valkey-suite, or VALKEY_SUITE_DIR):
# directly against a fresh valkey-server, then through lockproxy in front of
# another, one pass each; fails when a test that passed directly did not pass
# through lockproxy and scripts/valkey-suite-exceptions.tsv does not excuse
# it (docs/valkey-suite.md).
valkey-suite: deps
	scripts/deps.sh suite
	scripts/valkey-suite.sh

# valkey-benchmark direct vs through lockproxy, in one run, as ratios, with
# twemproxy measured in the same rounds as the reference.
bench:
	scripts/deps.sh bench
	scripts/bench.sh

# Every fuzz target for FUZZTIME each (go test runs one target at a time);
# scripts/fuzz.sh says how it treats Go's own fuzz-deadline race.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# The grammar fuzzer (cmd/fuzzgrammar, docs/fuzz-grammar.md): command lines
# generated from Valkey's own COMMAND DOCS, sent by a client that holds
# nothing through lockproxy (plain, in EVAL, in FCALL) in front of held
# locks, fenced data and lockproxy's keys, standalone and in a cluster;
# fails on any change the rules do not allow it. FUZZ_GRAMMAR_TIME (default
# 5m); FUZZ_GRAMMAR_ARGS for more flags (-seed N repeats a run).
fuzz-grammar: deps
	$(GO) run ./cmd/fuzzgrammar -duration $(or $(FUZZ_GRAMMAR_TIME),5m) $(FUZZ_GRAMMAR_ARGS)

# The chaos test (cmd/chaos): worker processes contend for locks through
# lockproxy while they stall, are SIGSTOPped and the proxy and Valkey restart,
# then the same run against plain Valkey; prints the checker's totals.
# CHAOS_DURATION per run (default 60s); CHAOS_ARGS for more flags
# (CHAOS_ARGS=-instances=2: two lockproxy processes, one kill -9ed at random).
chaos: deps
	$(GO) build -o bin/chaos ./cmd/chaos
	bin/chaos -duration $(or $(CHAOS_DURATION),60s) $(CHAOS_ARGS)

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin bench-results.tsv
