//go:build cgo

package torch

import (
	"os"
	"runtime"
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

// TestThreadsHoldOnEveryOSThread: SetThreads on one OS thread holds for a
// call made on another that had already run a parallel region with another
// count. libtorch's set_num_threads sets OpenMP's count for the calling
// thread only, and Go runs cgo calls on any thread, so without the shim's
// per-call sync the other thread went on with its old count (the cause of
// TestDeterministicSingleThread's random failures under load: a seeded run
// reduced in another order).
func TestThreadsHoldOnEveryOSThread(t *testing.T) {
	defer SetThreads(1)
	a, b := newLockedThread(), newLockedThread()
	defer a.stop()
	defer b.stop()
	var got int
	// Each thread sets 2 and asks (libtorch settles a thread's count at its
	// first query or parallel region: after that only a call on the thread
	// itself changes it).
	a.do(func() { SetThreads(2); Threads() })
	b.do(func() { SetThreads(2); Threads() })
	a.do(func() { SetThreads(1) })
	b.do(func() { got, _ = Threads() })
	if got != 1 {
		t.Fatalf("after SetThreads(1) on another OS thread, this one runs with %d threads, want 1", got)
	}
	// And a call that computes, on the thread that set nothing since.
	b.do(func() { SetThreads(2) })
	a.do(func() {
		m, err := NewModel(mlpSpec(1, 4, 4, 3, 8), "cpu")
		if err != nil {
			t.Error(err)
			return
		}
		m.Close()
		got, _ = Threads()
	})
	if got != 2 {
		t.Fatalf("after SetThreads(2) on another OS thread, this one runs with %d threads, want 2", got)
	}
}

// lockedThread runs functions, one at a time, on one OS thread of its own.
type lockedThread struct {
	jobs chan func()
	done chan struct{}
}

func newLockedThread() *lockedThread {
	l := &lockedThread{jobs: make(chan func()), done: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the OS thread ends with the goroutine
		for fn := range l.jobs {
			fn()
			l.done <- struct{}{}
		}
	}()
	return l
}

func (l *lockedThread) do(fn func()) { l.jobs <- fn; <-l.done }
func (l *lockedThread) stop()        { close(l.jobs) }

func TestWithOMPWaitPolicy(t *testing.T) {
	base := []string{"A=1"}
	t.Setenv("OMP_WAIT_POLICY", "ACTIVE") // restored after the test
	if env, added := WithOMPWaitPolicy(base, "PASSIVE"); added || len(env) != 1 {
		t.Errorf("with the user's OMP_WAIT_POLICY set: %v, added %t; want the environment unchanged", env, added)
	}
	os.Unsetenv("OMP_WAIT_POLICY")
	if env, added := WithOMPWaitPolicy(base, ""); added || len(env) != 1 {
		t.Errorf("without a policy: %v, added %t; want the environment unchanged", env, added)
	}
	env, added := WithOMPWaitPolicy(base, "PASSIVE")
	if !added || strings.Join(env, " ") != "A=1 OMP_WAIT_POLICY=PASSIVE" {
		t.Errorf("unset: %v, added %t; want A=1 OMP_WAIT_POLICY=PASSIVE added", env, added)
	}
}
