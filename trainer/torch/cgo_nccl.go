//go:build cgo && cuda && nccl && !ltshim && !ltlazy

package torch

// NCCL for data-parallel training on CUDA devices (--dist-backend nccl):
// dist.cpp includes c10d's ProcessGroupNCCL, which needs nccl.h and CUDA's
// runtime headers on the include path (CGO_CXXFLAGS="-I...": a pip
// PyTorch's nvidia-nccl and nvidia-cuda-runtime wheels, or /usr/local/cuda);
// its code is in libtorch_cuda, which the cuda tag links.

// #cgo CXXFLAGS: -DLT_NCCL
import "C"
