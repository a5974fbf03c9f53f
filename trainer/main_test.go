package trainer

import (
	"testing"

	"github.com/lcl-project/lcl/trainer/torch/torchtest"
)

// TestMain runs the tests on the runtime lcl runs with (torchtest.Init).
func TestMain(m *testing.M) { torchtest.Main(m) }
