# lcl: label-similarity curriculum learning.
#   make demo   the main job on embedded defaults (installs what is missing)
#   make test   the unit tests (installs what is missing)
GO      ?= go
BIN     := bin/lcl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/lcl-project/lcl/cmd/lcl/internal/cli.Version=$(VERSION)

.PHONY: all build test demo demo-full bench e2e deps build-deps bench-deps lint proto clean fuzz gpu-bundle

all: build

# deps: what the tests need; build-deps: only what the build and the demo need.
deps:
	@scripts/deps.sh

build-deps:
	@scripts/deps.sh build

bench-deps:
	@scripts/deps.sh bench

# bin/plugins: the example plugins, built, beside lcl (LCL_PLUGIN_PATH=bin/plugins).
build: build-deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/lcl
	$(GO) build -o bin/plugins/ ./examples/lcl-strategy-annealls ./examples/lcl-similarity-lexical
	install -m 755 examples/lcl-similarity-py/lcl-similarity-bigram.py examples/lcl-strategy-py/lcl-strategy-pyannealls.py bin/plugins/
	install -m 644 examples/lcl-strategy-py/lcl_pb2.py bin/plugins/

test: deps
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Every fuzz target for FUZZTIME each (seed corpora also run in `make test`).
FUZZTIME ?= 60s
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The demo times its stages, the build included (LCL_DEMO_START).
demo:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && LCL_DEMO_START=$$start scripts/demo.sh

demo-full:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && LCL_DEMO=full LCL_DEMO_START=$$start scripts/demo.sh

e2e: build
	@scripts/deps.sh e2e
	$(GO) test -count=1 -tags e2e -timeout 60m ./...

bench: build bench-deps
	@scripts/bench.sh

# The bundle scripts/gpu-check.sh runs on a GPU machine without Go (.gpucheck/).
gpu-bundle: deps
	@scripts/gpu-bundle.sh

proto:
	@scripts/deps.sh proto
	@scripts/proto.sh

clean:
	rm -rf bin .gpucheck
