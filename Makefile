# toolhost — the Makefile mirrors CI (.ci/run calls `make test`).
GO      ?= go
BIN     := build/toolhost
PLUGINS := time fs fetch guard notes
AS_PLUGINS := text
GOFLAGS_TEST ?= -race -count=1 -timeout 8m
FUZZTIME ?= 10s

.PHONY: all build plugins run test lint check bench fuzz clean conformance mcpclients

all: build plugins

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/toolhost

# One unsigned bundle per sample plugin: build/plugins/<name>.plugin
plugins: build $(PLUGINS:%=build/plugins/%.plugin) $(AS_PLUGINS:%=build/plugins/%.plugin)

build/plugins/%.plugin: $(BIN) sample-plugins/%/plugin.json $(wildcard sample-plugins/*/*.go sample-plugins/internal/*/*.go) sample-plugins/go.mod
	@mkdir -p build/plugins/$*
	cd sample-plugins/$* && GOOS=wasip1 GOARCH=wasm $(GO) build -trimpath -buildmode=c-shared -o ../../build/plugins/$*/plugin.wasm .
	cp sample-plugins/$*/plugin.json build/plugins/$*/plugin.json
	$(BIN) plugin pack build/plugins/$* -o $@

# AssemblyScript samples: the compiler and @extism/as-pdk come from the
# committed package-lock.json (npm ci), never from whatever is newest.
sample-plugins/%/node_modules/.package-lock.json: sample-plugins/%/package-lock.json
	cd sample-plugins/$* && npm ci --no-audit --no-fund --loglevel=error

build/plugins/text.plugin: $(BIN) sample-plugins/text/plugin.json sample-plugins/text/asconfig.json $(wildcard sample-plugins/text/assembly/*.ts) sample-plugins/text/node_modules/.package-lock.json
	@mkdir -p build/plugins/text
	cd sample-plugins/text && npx --no-install asc assembly/index.ts --config asconfig.json --target release --outFile ../../build/plugins/text/plugin.wasm
	cp sample-plugins/text/plugin.json build/plugins/text/plugin.json
	$(BIN) plugin pack build/plugins/text -o $@

# The MCP client CLIs the end-to-end tests drive: the official TypeScript
# SDK v1 (test/mcpclient) and v2 (test/mcpclient2, both protocol revisions),
# each pinned by its package-lock.json; no install scripts run.
MCPCLIENTS := mcpclient mcpclient2
mcpclients: $(MCPCLIENTS:%=test/%/node_modules/.package-lock.json)

test/%/node_modules/.package-lock.json: test/%/package-lock.json
	cd test/$* && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error

# The main job on the embedded default: a demo curator signs the samples, a
# demo home trusts the key, installs them and calls a tool.
run: plugins
	./scripts/demo.sh

# The CLI journeys run without -race: their sandbox workers re-execute the
# test binary, and compiling a Go guest with the race-instrumented compiler
# takes minutes instead of seconds. Everything else runs with -race.
test: plugins mcpclients
	$(GO) test $(GOFLAGS_TEST) $$($(GO) list ./... | grep -v '/cmd/toolhost$$')
	$(GO) test -count=1 ./cmd/toolhost
	$(MAKE) fuzz FUZZTIME=5s

lint:
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

check: lint
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo 'gofmt needed'; exit 1)
	$(GO) mod tidy && git diff --exit-code go.mod go.sum
	cd sample-plugins && $(GO) mod tidy && git diff --exit-code go.mod go.sum

# The side-by-side table (test/bench): one BENCH line per row, each figure
# the median of BENCHCOUNT runs; the raw `go test -bench` output stays in
# build/bench.txt.
BENCHTIME ?= 1s
BENCHCOUNT ?= 3
bench: plugins
	@mkdir -p build
	@$(GO) test -v -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -timeout 20m ./test/bench/ > build/bench.txt; \
	  status=$$?; awk -f scripts/benchfmt.awk build/bench.txt; exit $$status

# The official MCP conformance suite (0.1.16 and 0.2.0-alpha, pinned in
# test/conformance/package-lock.json with the Node 22 it needs) against a
# real serve with the signed fixture plugin; expected failures, each with a
# reason, are in test/conformance/baseline-*.yaml.
conformance: test/conformance/node_modules/.package-lock.json
	TOOLHOST_CONFORMANCE=1 $(GO) test -count=1 -timeout 20m -v -run TestConformance ./test/conformance

# Every fuzz target, FUZZTIME each (make fuzz FUZZTIME=10m for long runs).
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

clean:
	rm -rf build
