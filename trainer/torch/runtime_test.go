//go:build cgo

package torch

import (
	"strings"
	"testing"
)

func TestDefaultRuntime(t *testing.T) {
	for _, tc := range []struct {
		alloc, blas string
		want        Runtime
		err         string
	}{
		{"", "", Runtime{CPUAllocator: "caching", BLASThreads: 1, OMPWaitPolicy: "PASSIVE"}, ""},
		{"system", "0", Runtime{CPUAllocator: "system", BLASThreads: 0, OMPWaitPolicy: "PASSIVE"}, ""},
		{"malloc", "4", Runtime{CPUAllocator: "malloc", BLASThreads: 4, OMPWaitPolicy: "PASSIVE"}, ""},
		{"jemalloc", "", Runtime{}, `LCL_CPU_ALLOCATOR="jemalloc": want caching, malloc or system`},
		{"", "-1", Runtime{}, `LCL_BLAS_THREADS="-1": want a thread count`},
		{"", "two", Runtime{}, `LCL_BLAS_THREADS="two"`},
	} {
		t.Setenv("LCL_CPU_ALLOCATOR", tc.alloc)
		t.Setenv("LCL_BLAS_THREADS", tc.blas)
		rt, err := DefaultRuntime()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q/%q: error %v, want %q", tc.alloc, tc.blas, err, tc.err)
			}
			continue
		}
		if err != nil || rt != tc.want {
			t.Errorf("%q/%q: %+v, %v; want %+v", tc.alloc, tc.blas, rt, err, tc.want)
		}
	}
}

// TestInitOnce: TestMain set the runtime; a second Init is refused, whatever
// it asks for, and an unknown allocator is named.
func TestInitOnce(t *testing.T) {
	if err := Init(Runtime{CPUAllocator: "caching"}); err == nil || !strings.Contains(err.Error(), "once per process") {
		t.Errorf("second Init: %v", err)
	}
}
