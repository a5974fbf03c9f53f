#!/usr/bin/env bash
# Regenerates the plugin protocol code from plugins/proto/lcl.proto:
#   Go:     plugins/proto/lcl.pb.go, plugins/proto/lcl_grpc.pb.go
#   Python: examples/lcl-similarity-py/lcl_pb2.py and examples/lcl-strategy-py/lcl_pb2.py
#           (messages only; the Python examples register their gRPC handlers
#           by hand, so no grpcio-tools)
#   the released protocols' baselines: plugins/proto/testdata/vN/lcl.binpb from the lcl.proto beside it
# and the TensorBoard event messages from internal/tensorboard/tbpb/tensorboard.proto:
#   Go:     internal/tensorboard/tbpb/tensorboard.pb.go
#   Python: internal/tensorboard/testdata/tensorboard_pb2.py (the tests' independent reader)
# Needs protoc (Debian: protobuf-compiler); installs the pinned Go generators.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_GEN_GO=v1.36.12      # = google.golang.org/protobuf in go.mod
PROTOC_GEN_GO_GRPC=v1.5.1

command -v protoc >/dev/null || { echo "proto: protoc missing; apt-get install protobuf-compiler" >&2; exit 1; }
bin="$(go env GOPATH)/bin"
want() { [ -x "$bin/$1" ] && "$bin/$1" --version 2>/dev/null | grep -q "${2#v}"; }
want protoc-gen-go "$PROTOC_GEN_GO" || go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO"
want protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC" || go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC"

PATH="$bin:$PATH" protoc -I plugins/proto \
  --go_out=plugins/proto --go_opt=paths=source_relative \
  --go-grpc_out=plugins/proto --go-grpc_opt=paths=source_relative \
  --python_out=examples/lcl-similarity-py \
  plugins/proto/lcl.proto
cp examples/lcl-similarity-py/lcl_pb2.py examples/lcl-strategy-py/lcl_pb2.py
# The released protocols' lcl.proto, kept as they were (a release copies
# plugins/proto/lcl.proto to plugins/proto/testdata/vN/), compiled to the
# FileDescriptorSet that `make lint` (TestProtocolOnlyGrows) compares with.
for v in plugins/proto/testdata/v*/; do
  protoc -I "$v" --descriptor_set_out="$v/lcl.binpb" "$v/lcl.proto"
done
PATH="$bin:$PATH" protoc -I internal/tensorboard/tbpb \
  --go_out=internal/tensorboard/tbpb --go_opt=paths=source_relative \
  --python_out=internal/tensorboard/testdata \
  internal/tensorboard/tbpb/tensorboard.proto
echo "proto: regenerated plugins/proto/*.pb.go, the examples' lcl_pb2.py and internal/tensorboard/tbpb" >&2
