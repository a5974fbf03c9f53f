//go:build cgo && !ltshim

package torch

// The only place that names libtorch. Debian's libtorch-dev needs nothing
// else; another libtorch (a pip PyTorch's torch/ folder, a CUDA build) is
// selected with CGO_CXXFLAGS / CGO_LDFLAGS, which go build puts before these
// flags (see docs/trainer.md), plus the cuda build tag for its CUDA libraries.

// #cgo CXXFLAGS: -std=c++17 -O2 -I/usr/include/torch/csrc/api/include
// #cgo LDFLAGS: -ltorch -ltorch_cpu -lc10
import "C"
