// Package boundedtest helps tests assert that crafted input costs little
// memory.
package boundedtest

import (
	"runtime"
	"testing"
)

// MaxAlloc runs f and fails t when f allocated more than limit bytes in
// total (heap allocations, freed or not, of every goroutine; run it outside
// t.Parallel tests). It is how a test says "a 34-byte file that announces
// 256 GiB costs kilobytes".
func MaxAlloc(t testing.TB, limit uint64, what string, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("%s allocated %d bytes, want at most %d", what, got, limit)
	}
}
