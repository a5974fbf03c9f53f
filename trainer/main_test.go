package trainer

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch"
)

// TestMain runs the tests on the runtime lcl runs with (torch.DefaultRuntime:
// the caching allocator, one OpenBLAS thread), as cmd/lcl's main sets it,
// without its re-execution for OMP_WAIT_POLICY (make test sets it). On
// libtorch's defaults OpenBLAS's idle thread spins in sched_yield and every
// step faults its buffers in again: not what users run, and slower.
func TestMain(m *testing.M) {
	rt, err := torch.DefaultRuntime()
	if err == nil {
		rt.OMPWaitPolicy = ""
		if err = torch.Init(rt); errors.Is(err, torch.ErrNoLibtorch) || errors.Is(err, torch.ErrABIMismatch) {
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainer tests:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
