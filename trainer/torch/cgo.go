//go:build cgo && !ltshim && !ltlazy

package torch

// The only place that names libtorch. Debian's libtorch-dev (1.13 on Debian
// 12, 2.6 on Debian 13) needs nothing else; another libtorch (a pip
// PyTorch's torch/ folder, a CUDA build) is selected with CGO_CXXFLAGS /
// CGO_LDFLAGS, which go build puts before these flags, plus the cuda build
// tag for its CUDA libraries: `make LIBTORCH=DIR` sets all three
// (scripts/libtorch-flags.sh; docs/trainer.md).
//
// No -std here: a package flag comes after CGO_CXXFLAGS and would win, and
// PyTorch 2.14's headers need -std=c++20 where older ones take C++17 (the
// default of g++ 11 and later).

// #cgo CXXFLAGS: -O2 -I/usr/include/torch/csrc/api/include
// #cgo LDFLAGS: -ltorch -ltorch_cpu -lc10
import "C"
