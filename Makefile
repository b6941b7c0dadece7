# lockproxy — the usual entry points. `make run` and `make test` are the two
# commands a newcomer needs (see README).
GO       ?= go
CONFIG   ?= config.example.yaml
FUZZTIME ?= 30s

.PHONY: build run test bench fuzz lint chaos clean

build:
	$(GO) build -o bin/lockproxy ./cmd/lockproxy

# Starts a local valkey-server when none answers on the config's upstream
# address, then lockproxy in front of it.
run:
	scripts/run.sh $(CONFIG)

# Unit and end-to-end tests against a real valkey-server, with the race detector.
test: lint
	$(GO) test -race -count=1 ./...

# valkey-benchmark direct vs through lockproxy, in one run, as ratios.
bench:
	scripts/bench.sh

# Every fuzz target for FUZZTIME each (go test runs one target at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1; }
	$(GO) vet ./...

clean:
	rm -rf bin bench-results.tsv
