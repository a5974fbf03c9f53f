// Package shimloss is the training loss of trainer/torch's shim
// (loss.hpp) on its own, with its gradient, for the tests that hold it
// against internal/lossref and PyTorch's cross-entropy. The shim defines
// the two functions it calls (losscheck.h, compiled into shim.cpp, no part
// of the shim's C ABI); only tests import it.
package shimloss
