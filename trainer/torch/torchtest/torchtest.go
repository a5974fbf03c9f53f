// Package torchtest sets libtorch's runtime for a test binary as lcl's main
// does, so that tests train on what users run.
package torchtest

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// Init applies torch.DefaultRuntime (the caching allocator, one OpenBLAS
// thread) without its re-execution for OMP_WAIT_POLICY (make test sets the
// variable). Call it first in TestMain. Without it a test binary trains on
// libtorch's defaults: OpenBLAS's idle thread spins in sched_yield and every
// step faults its buffers in again. A build without libtorch is no error:
// the tests that need none still run.
func Init() error {
	rt, err := torch.DefaultRuntime()
	if err != nil {
		return err
	}
	rt.OMPWaitPolicy = ""
	if err := torch.Init(rt); err != nil && !errors.Is(err, torch.ErrNoLibtorch) && !errors.Is(err, torch.ErrABIMismatch) {
		return err
	}
	return nil
}

// Main is the whole TestMain of a package whose tests train and need
// nothing else first: Init, then the tests, then exit with their status.
func Main(m *testing.M) {
	if err := Init(); err != nil {
		fmt.Fprintln(os.Stderr, "torchtest:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
