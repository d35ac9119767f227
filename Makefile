# flightgw — the entry points are `make run`, `make test` and `make bench`.
# Each part of the project adds its own targets in mk/*.mk:
#   TEST_TARGETS  += targets that `make test` runs after the Go tests
#   BENCH_TARGETS += targets that `make bench` runs
SHELL := /bin/bash
GO    ?= go
BIN   := bin/flightgw
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/flightgw/flightgw/server.Version=$(VERSION)

TEST_TARGETS  :=
BENCH_TARGETS :=

.PHONY: all build run test test-go bench fmt vet deps clean
all: build

include $(wildcard mk/*.mk)

deps:
	$(GO) mod download

build: deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/flightgw

# Starts the embedded default: an Iceberg lake on SQLite and local files in ./data.
# exec: the recipe's process is the gateway itself, so the SIGTERM make forwards
# to its child (kill -TERM <make>) and Ctrl-C reach it and it drains and stops.
run: build
	exec ./$(BIN) serve

test-go: deps
	@unformatted=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...

test: test-go $(TEST_TARGETS)

bench: $(BENCH_TARGETS)

fmt:
	gofmt -w $$(git ls-files -co --exclude-standard '*.go')

vet:
	$(GO) vet ./...

clean:
	rm -rf bin .venv
