package shimloss

import (
	"fmt"
	"os"
	"testing"

	"github.com/lcl-project/lcl/trainer/torch/torchtest"
)

// TestMain runs the tests on the runtime lcl runs with (torchtest.Init).
func TestMain(m *testing.M) {
	if err := torchtest.Init(); err != nil {
		fmt.Fprintln(os.Stderr, "shimloss tests:", err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}
