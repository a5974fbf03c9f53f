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
	step := cnnStep(t)
	n := 64
	x := make([]float32, n*28*28)
	y := make([]int64, n)
	for i := range y {
		y[i] = int64(i % 10)
		x[i*28*28+i] = 1
	}
	e := newEngine(t)
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

// TestCachingAllocatorFollowsPhases: a run alternates phases whose buffers
// differ in size (training batches, the epoch's last, smaller one,
// evaluation). Once the cache's budget is full of one phase's blocks, the
// next phase's freed blocks must displace them rather than be released:
// after its first step, a phase is served from the cache. (With the freed
// block released instead, the third phase below missed the cache on every
// step; lcl's evaluation did, in one run of three.)
func TestCachingAllocatorFollowsPhases(t *testing.T) {
	if os.Getenv("LCL_CPU_ALLOCATOR") == "system" {
		return
	}
	step := cnnStep(t)
	e := newEngine(t)
	input := func(n int) Input {
		x := make([]float32, n*28*28)
		y := make([]int64, n)
		for i := range y {
			y[i] = int64(i % 10)
			x[i*28*28+i%(28*28)] = 1
		}
		return Input{X: x, N: n, C: 1, H: 28, W: 28, Y: y}
	}
	// Batch sizes 25 % apart: no two share a size class (1/8 wide); the
	// largest phase sets the peak, and the three phases' blocks together
	// exceed twice it.
	for round := range 2 {
		for _, n := range []int{48, 64, 80} {
			in := input(n)
			for s := range 4 {
				before, ok, err := CPUAllocStats()
				if err != nil || !ok {
					t.Fatal("the caching allocator is not installed")
				}
				if _, err := trainStep(e, step, in); err != nil {
					t.Fatal(err)
				}
				after, _, _ := CPUAllocStats()
				// The engine's own sums appear in the first steps: settle two.
				if (round > 0 || s >= 2) && s > 0 && after.Misses != before.Misses {
					t.Errorf("round %d, batch %d, step %d: %d misses (cached %d, peak %d)", round, n, s+1,
						after.Misses-before.Misses, after.CachedBytes, after.PeakBytes)
				}
				if after.CachedBytes > 2*after.PeakBytes {
					t.Errorf("cache holds %d bytes, over twice the peak %d", after.CachedBytes, after.PeakBytes)
				}
			}
		}
	}
}

// cnnStep is a training step of a small CNN with SGD on 28×28 inputs,
// released when the test ends.
func cnnStep(t *testing.T) *Step {
	t.Helper()
	m, err := NewModel(cnnSpec(1, 28, 28, 10, []int{32, 64}, 128, 0), "cpu")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	o, err := NewSGD(m, 0.9, 5e-4, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	return &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Coefs: Coefs{HardCE: 1}, LR: 0.01}
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
