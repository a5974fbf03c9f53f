// Package shimloss is the training loss of trainer/torch's shim
// (loss.hpp) built on its own, with its gradient, for the tests that hold
// it against internal/lossref and PyTorch's cross-entropy. It is not part
// of the shim's C ABI (shim.h): only tests import it.
//
// It imports trainer/torch, which it uses for Coefs, and which makes Go
// rebuild it whenever the shim's sources change (loss.hpp is one of them:
// Go's build cache does not follow a C++ file's includes outside its
// package).
package shimloss
