//go:build cgo

package torch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCachingAllocatorReusesBlocks: after the first training step every
// large buffer of a step comes from the allocator's free lists (no malloc,
// hence no page faults), and what it keeps stays within twice the peak working
// set.
func TestCachingAllocatorReusesBlocks(t *testing.T) {
	if os.Getenv("LCL_CPU_ALLOCATOR") == "system" { // TestAllocatorCanBeDisabled runs this so
		if _, ok, _ := CPUAllocStats(); ok {
			t.Fatal("LCL_CPU_ALLOCATOR=system: the caching allocator is installed anyway")
		}
		return
	}
	m, err := NewModel(cnnSpec(1, 28, 28, 10, []int{32, 64}, 128, 0), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o, err := NewSGD(m, 0.9, 5e-4, true)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	n := 64
	x := make([]float32, n*28*28)
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i % 10)
		x[i*28*28+i] = 1
	}
	e := newEngine(t)
	step := &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: 0.01}
	in := Input{X: x, N: n, C: 1, H: 28, W: 28, Y: y}
	for range 2 { // the first step allocates, the second settles (the engine's sums exist now)
		if _, err := trainStep(e, step, in); err != nil {
			t.Fatal(err)
		}
	}
	before, ok, err := CPUAllocStats()
	if err != nil || !ok {
		t.Fatal("the caching allocator is not installed")
	}
	for range 3 {
		if _, err := trainStep(e, step, in); err != nil {
			t.Fatal(err)
		}
	}
	after, _, _ := CPUAllocStats()
	if after.Misses != before.Misses {
		t.Errorf("steady-state steps missed the cache %d times (hits %d)", after.Misses-before.Misses, after.Hits-before.Hits)
	}
	if after.Hits <= before.Hits {
		t.Errorf("no allocation was served from the cache: %+v → %+v", before, after)
	}
	if after.CachedBytes > 2*after.PeakBytes || after.LiveBytes < 0 {
		t.Errorf("cache holds %d bytes, peak live %d, live %d", after.CachedBytes, after.PeakBytes, after.LiveBytes)
	}
}

// TestAllocatorCanBeDisabled runs the test above in a child process with
// LCL_CPU_ALLOCATOR=system: libtorch's own allocator stays, and the binding
// reports it.
func TestAllocatorCanBeDisabled(t *testing.T) {
	if os.Getenv("LCL_CPU_ALLOCATOR") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestCachingAllocatorReusesBlocks$", "-test.v")
	cmd.Env = append(os.Environ(), "LCL_CPU_ALLOCATOR=system")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child with LCL_CPU_ALLOCATOR=system: %v\n%s", err, out)
	}
}
