//go:build cgo

package torch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ranks runs fn for every rank of a group of size on loopback, each in its
// own goroutine (a process group per goroutine works like one per process).
func ranks(t *testing.T, size int, fn func(g *Group) error) []error {
	t.Helper()
	port := freePort(t)
	errs := make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: port, Rank: r, Size: size, Timeout: 30 * time.Second})
			if err != nil {
				errs[r] = err
				return
			}
			defer g.Close()
			errs[r] = fn(g)
		})
	}
	wg.Wait()
	return errs
}

func TestGroupCollectives(t *testing.T) {
	errs := ranks(t, 2, func(g *Group) error {
		v := []float64{float64(g.Rank() + 1), 10}
		if err := g.AllReduce(v); err != nil {
			return err
		}
		if v[0] != 3 || v[1] != 20 {
			return fmt.Errorf("rank %d: all-reduce gave %v, want [3 20]", g.Rank(), v)
		}
		msg := []byte(fmt.Sprintf("from rank %d", g.Rank()))
		got, err := g.Broadcast(msg)
		if err != nil {
			return err
		}
		if string(got) != "from rank 0" {
			return fmt.Errorf("rank %d: broadcast gave %q", g.Rank(), got)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestDataParallelStepEqualsGlobalStep: two ranks, each stepping on a slice
// of the global batch (even and uneven splits, with and without weights,
// momentum and weight decay), end with the weights of one process stepping
// on the whole batch.
func TestDataParallelStepEqualsGlobalStep(t *testing.T) {
	SetThreads(1)
	spec := mlpSpec(1, 4, 4, 5, 12)
	const n = 9
	rng := rand.New(rand.NewPCG(4, 2))
	x := randn(rng, n*16)
	y := make([]int64, n)
	w := make([]float32, n)
	for i := range y {
		y[i] = int64(rng.IntN(5))
		w[i] = float32(rng.Float64())
	}
	tgt := make([]float32, 25)
	for i := range 5 {
		for j := range 5 {
			tgt[i*5+j] = 0.05
		}
		tgt[i*5+i] = 0.8
	}
	for _, tc := range []struct {
		name    string
		split   int // rank 0 gets examples [0, split)
		weights bool
	}{{"uneven", 5, false}, {"weighted", 4, true}, {"empty slice", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ManualSeed(7)
			ref, err := NewModel(spec, "cpu")
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			init, _ := ref.State().Copy()
			opt, _ := NewSGD(ref, 0.9, 1e-3, true)
			defer opt.Close()
			T, _ := NewTensor(tgt, []int64{5, 5}, "cpu")
			defer T.Close()
			var want stepResult
			e := newEngine(t)
			for range 3 {
				in := Input{X: x, N: n, C: 1, H: 4, W: 4, Y: y}
				if tc.weights {
					in.Weights = w
				}
				if want, err = trainStep(e, &Step{Models: []*Model{ref}, Optims: []*Optimizer{opt}, Targets: T,
					Coefs: Coefs{SoftCE: 1}, LR: 0.1}, in); err != nil {
					t.Fatal(err)
				}
			}
			wantState := stateFloats(t, ref)
			var mu sync.Mutex
			got := map[int]map[string][]float32{}
			results := map[int]stepResult{}
			errs := ranks(t, 2, func(g *Group) error {
				ManualSeed(uint64(100 + g.Rank())) // different initialisations: the broadcast must fix them
				m, err := NewModel(spec, "cpu")
				if err != nil {
					return err
				}
				defer m.Close()
				if g.Rank() == 0 {
					st := map[string]Named{}
					for _, s := range init {
						st[s.Name] = s
					}
					if err := m.State().Load(st); err != nil {
						return err
					}
				}
				if err := g.BroadcastModel(m, false); err != nil {
					return err
				}
				o, _ := NewSGD(m, 0.9, 1e-3, true)
				defer o.Close()
				lo, hi := 0, tc.split
				if g.Rank() == 1 {
					lo, hi = tc.split, n
				}
				var res stepResult
				e, err := NewEngine("cpu", EngineOptions{})
				if err != nil {
					return err
				}
				defer e.Close()
				for range 3 {
					in := Input{X: x[lo*16 : hi*16], N: hi - lo, C: 1, H: 4, W: 4, Y: y[lo:hi]}
					if tc.weights {
						in.Weights = w[lo:hi]
					}
					if res, err = trainStep(e, &Step{Models: []*Model{m}, Optims: []*Optimizer{o}, Targets: T,
						Coefs: Coefs{SoftCE: 1}, LR: 0.1, Group: g}, in); err != nil {
						return err
					}
				}
				mu.Lock()
				got[g.Rank()] = stateFloats(t, m)
				results[g.Rank()] = res
				mu.Unlock()
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			for r := range 2 {
				for name, wv := range wantState {
					for i, v := range got[r][name] {
						if math.Abs(float64(v-wv[i])) > 1e-5 {
							t.Fatalf("rank %d %s[%d] = %v, single process %v", r, name, i, v, wv[i])
						}
					}
				}
				res := results[r]
				if res.N != n || res.Correct[0] != want.Correct[0] || math.Abs(float64(res.Loss[0]-want.Loss[0])) > 1e-5 {
					t.Errorf("rank %d: step result %+v, single process %+v", r, res, want)
				}
			}
		})
	}
}

// TestGroupPeerExitFailsFast: when one rank leaves, the other's next
// collective fails with an error naming its own rank instead of hanging for
// the timeout.
func TestGroupPeerExitFailsFast(t *testing.T) {
	port := freePort(t)
	done := make(chan error, 1)
	joined := make(chan struct{}) // rank 0 has joined: rank 1 may leave
	var wg sync.WaitGroup
	wg.Go(func() {
		g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: port, Rank: 1, Size: 2, Timeout: 10 * time.Minute})
		if err != nil {
			done <- err
			return
		}
		done <- nil
		// Leaving while rank 0 still connects would fail its rendezvous
		// instead (seen under load): leave after it has joined.
		<-joined
		g.Close() // leaves without taking part in the all-reduce
	})
	g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: port, Rank: 0, Size: 2, Timeout: 10 * time.Minute})
	close(joined)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	err = g.AllReduce([]float64{1})
	if err == nil {
		t.Fatal("all-reduce with a departed peer succeeded")
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "rank 0 of 2") {
		t.Errorf("error %q does not name the rank", err)
	}
}

// TestMain sets the runtime lcl runs with (DefaultRuntime, no re-exec:
// OMP_WAIT_POLICY stays as the test was started), and lets the test binary
// play a peer rank in another process: with LT_TEST_PEER=PORT it joins a
// group of 2 as rank 1 (as rank 0, hosting the store, with
// LT_TEST_PEER_RANK=0), takes part in one all-reduce, then hangs until
// killed.
func TestMain(m *testing.M) {
	rt, err := DefaultRuntime()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rt.OMPWaitPolicy = ""
	if err := Init(rt); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if os.Getenv("LT_TEST_PRINT_BLAS") != "" {
		// TestLoadedBLAS's child: the BLAS its loader resolved.
		if err := Check(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b, err := LoadedBLAS()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(b.Kind, b.Path)
		os.Exit(0)
	}
	if p := os.Getenv("LT_TEST_PEER"); p != "" {
		port, _ := strconv.Atoi(p)
		rank := 1
		if os.Getenv("LT_TEST_PEER_RANK") == "0" {
			rank = 0
		}
		g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: port, Rank: rank, Size: 2, Timeout: 10 * time.Minute})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := g.AllReduce([]float64{1}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		select {}
	}
	os.Exit(m.Run())
}

// TestGroupPeerLostDuringCollective: one rank waits in an all-reduce when
// the process of its peer is killed (its sockets close: Gloo fails the wait)
// or stopped (SIGSTOP: its sockets stay open and only the heartbeat
// notices; a stopped rank 0 is a store that no longer answers, as when its
// machine vanishes); either way the wait ends long before the group's
// timeout, the error naming the rank, and Close does not wait for the
// heartbeat stuck on the silent store; once the peer's process is gone
// for good, no thread of the group is left spinning.
func TestGroupPeerLostDuringCollective(t *testing.T) {
	for _, tt := range []struct {
		name string
		me   int // this process's rank; the peer is the other
		sig  syscall.Signal
		want string
	}{
		{"killed", 0, syscall.SIGKILL, "rank 0 of 2"},
		{"stopped", 0, syscall.SIGSTOP, "rank 1 sent no heartbeat"},
		{"store host killed", 1, syscall.SIGKILL, "rank 1 of 2"},
		{"store host stopped", 1, syscall.SIGSTOP, "no answer from the rendezvous store for 5 s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Threads an earlier test left (spinning or not) are not this
			// one's: only the threads started from here on are checked.
			before := threadIDs(t)
			port := freePort(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LT_TEST_PEER="+strconv.Itoa(port), "LT_TEST_PEER_RANK="+strconv.Itoa(1-tt.me))
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			defer cmd.Process.Kill()
			g, err := NewGroup(GroupConfig{Addr: "127.0.0.1", Port: port, Rank: tt.me, Size: 2, Timeout: 10 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if err := g.AllReduce([]float64{1}); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(200*time.Millisecond, func() { cmd.Process.Signal(tt.sig) })
			start := time.Now()
			err = g.AllReduce([]float64{1})
			me := fmt.Sprintf("rank %d of 2", tt.me)
			if err == nil || !strings.Contains(err.Error(), me) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("all-reduce with a %s peer: %v, want an error naming %q and %q", tt.name, err, me, tt.want)
			}
			t.Logf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
			start = time.Now()
			g.Close()
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Close took %v", d)
			}
			// The broken group's stores are freed too (on a thread of their
			// own, once nothing uses them): with the peer gone for good, none
			// of the threads the group started is left spinning (a leaked
			// 1.13 TCPStore's client thread spins once its host is gone).
			cmd.Process.Kill()
			cmd.Wait()
			deadline := time.Now().Add(20 * time.Second)
			for n := spinningThreads(t, before); n > 0; n = spinningThreads(t, before) {
				if time.Now().After(deadline) {
					t.Fatalf("%d threads the group started spin 20 s after Close and the peer's end", n)
				}
			}
		})
	}
}

// threadIDs is the set of this process's threads (/proc/self/task).
func threadIDs(t *testing.T) map[string]bool {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range tasks {
		ids[e.Name()] = true
	}
	return ids
}

// spinningThreads counts this process's threads not in old that, over a
// second, used at least 50 ms of CPU without once blocking (no voluntary
// context switch): a thread busy-polling, as a 1.13 TCPStore client's
// does once its host has closed the connection. A thread that waits has
// voluntary switches or no CPU time; the threshold is low, and threads
// that existed before are left out, so that the count does not depend on
// how many other threads (spinning ones an earlier test left among them)
// share the two cores.
func spinningThreads(t *testing.T, old map[string]bool) int {
	t.Helper()
	type sample struct{ ticks, waits int64 }
	read := func() map[string]sample {
		m := map[string]sample{}
		for id := range threadIDs(t) {
			if old[id] {
				continue
			}
			stat, err1 := os.ReadFile("/proc/self/task/" + id + "/stat")
			status, err2 := os.ReadFile("/proc/self/task/" + id + "/status")
			if err1 != nil || err2 != nil {
				continue // the thread ended
			}
			// Fields after the command's closing parenthesis: state is
			// the 1st, utime and stime the 12th and 13th.
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			u, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			var w int64
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
					w, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				}
			}
			m[id] = sample{u + st, w}
		}
		return m
	}
	a := read()
	time.Sleep(time.Second)
	n := 0
	for id, b := range read() {
		if s, ok := a[id]; ok && b.waits == s.waits && b.ticks-s.ticks >= 5 { // clock ticks of 10 ms
			n++
		}
	}
	return n
}

// TestGroupAbort: Abort from another goroutine ends a waiting collective.
func TestGroupAbort(t *testing.T) {
	errs := ranks(t, 2, func(g *Group) error {
		if g.Rank() == 1 {
			time.Sleep(300 * time.Millisecond) // never joins the all-reduce
			return nil
		}
		time.AfterFunc(100*time.Millisecond, func() { g.Abort("canceled by the test") })
		err := g.AllReduce([]float64{1})
		if err == nil || !strings.Contains(err.Error(), "canceled by the test") {
			return fmt.Errorf("all-reduce after Abort: %v", err)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}
